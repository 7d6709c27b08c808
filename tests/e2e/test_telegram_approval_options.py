"""What a Telegram approval card offers: approval for the conversation, and Deny with a reason given as a reply to
the bot's prompt (Telegram has no text input on a card), which the model reads as the denied call's result."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

from tests.support.deploy_model import Deployer
from tests.support.fakes.telegram import FakeTelegram
from tests.support.gated_tools import deploy_registry
from tests.support.harness import TelegramBot, running_gateway
from tests.support.records import approval_rows, lapse_standing_approvals

DEPLOY = [{"id": "deploy"}]


def buttons(card: dict[str, Any]) -> list[list[str]]:
    return [[b["text"] for b in row] for row in card["reply_markup"]["inline_keyboard"]]


def data(card: dict[str, Any], label: str) -> str:
    return next(b["callback_data"] for row in card["reply_markup"]["inline_keyboard"] for b in row
                if b["text"] == label)


@dataclass(kw_only=True)
class Chat:
    telegram: FakeTelegram
    bot: TelegramBot
    chat: dict[str, Any]
    executed: list[str]
    deployer: Deployer

    def said(self) -> list[str]:
        return [m.get("text", "") for m in self.telegram.bot_messages(self.chat["id"])]

    def cards(self) -> list[dict[str, Any]]:
        return [m for m in self.telegram.bot_messages(self.chat["id"]) if "deploy_service with:" in m.get("text", "")]

    async def card(self, count: int = 1) -> dict[str, Any]:
        await self.telegram.wait_for(lambda: len(self.cards()) == count)
        return self.cards()[-1]

    async def answered(self, count: int) -> None:
        await self.telegram.wait_for(lambda: sum(t.startswith("done:") for t in self.said()) == count)


@asynccontextmanager
async def chatting(telegram: FakeTelegram, database_url: str, chat: dict[str, Any],
                   binding: dict[str, Any]) -> AsyncIterator[Chat]:
    executed: list[str] = []
    deployer = Deployer()
    bot = TelegramBot(binding=binding).register(telegram)
    async with running_gateway(telegram, [bot], database_url=database_url, redis_url=None, model=deployer.model,
                               registry=deploy_registry(executed), capabilities=DEPLOY):
        yield Chat(telegram=telegram, bot=bot, chat=chat, executed=executed, deployer=deployer)


async def test_approved_for_the_conversation_the_same_call_runs_again_without_a_card(
        telegram: FakeTelegram, database_url: str) -> None:
    alice = telegram.add_user(1001, "Alice", username="alice")
    dm = telegram.private_chat(alice)
    async with chatting(telegram, database_url, dm, {"approval_options": ["once", "conversation", "deny"]}) as room:
        await telegram.user_says(room.bot.token, dm, alice, "deploy web")
        card = await room.card()
        assert buttons(card) == [["✅ Approve", "✅ Approve for this conversation"],
                                 ["✖️ Deny", "✍️ Deny with reason…"]]
        await telegram.user_clicks(room.bot.token, card, alice, data(card, "✅ Approve for this conversation"))
        await room.answered(1)
        await telegram.user_says(room.bot.token, dm, alice, "deploy web")
        await room.answered(2)
        assert len(room.cards()) == 1 and room.executed == ["web", "web"]
        await telegram.user_says(room.bot.token, dm, alice, "deploy api")
        await room.card(count=2)
        await lapse_standing_approvals(database_url)  # past the binding's expiry: the same call asks again
        await telegram.user_says(room.bot.token, dm, alice, "deploy web")
        await room.card(count=3)
    assert [(r.status, r.scope) for r in await approval_rows(database_url)] == [
        ("approved", "conversation"), ("approved", None), ("pending", None), ("pending", None)]


async def test_a_reason_given_as_a_reply_reaches_the_model(telegram: FakeTelegram, database_url: str) -> None:
    alice = telegram.add_user(1001, "Alice", username="alice")
    mallory = telegram.add_user(1002, "Mallory", username="mallory")
    group = telegram.group(-4001, "Ops")
    async with chatting(telegram, database_url, group, {}) as room:
        await telegram.user_says(room.bot.token, group, alice, "@helper_bot deploy web")
        card = await room.card()
        await telegram.user_clicks(room.bot.token, card, alice, data(card, "✍️ Deny with reason…"))
        await telegram.wait_for(lambda: any("reply to this message with your reason" in t for t in room.said()))
        [prompt] = [m for m in telegram.bot_messages(group["id"]) if "your reason" in m.get("text", "")]
        assert prompt["text"].startswith("@alice, reply to this message with your reason for denying")
        [asked] = [c.params for c in telegram.calls if c.method == "sendMessage" and "your reason" in c.params["text"]]
        assert asked["reply_markup"]["force_reply"] is True and asked["reply_markup"]["selective"] is True

        # Someone else's reply to the prompt is refused and changes nothing.
        await telegram.user_says(room.bot.token, group, mallory, "just ship it", reply_to=prompt)
        await telegram.wait_for(lambda: room.said()[-1].startswith("Only the person who pressed Deny with reason"))
        assert [r.status for r in await approval_rows(database_url)] == ["pending"]

        await telegram.user_says(room.bot.token, group, alice, "Staging first, please.", reply_to=prompt)
        await room.answered(1)
    assert room.executed == []
    [result] = room.deployer.tool_results()
    assert result.startswith("Alice (@alice) denied this call; it was not run. Their reason, in their own words")
    assert "<reason>\nStaging first, please.\n</reason>" in result
    [row] = await approval_rows(database_url)
    assert (row.status, row.reason) == ("denied", "Staging first, please.")
