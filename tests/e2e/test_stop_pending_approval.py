"""`stop` said while the conversation's run waits on an approval: the pending call is denied by the same
compare-and-swap a Deny click takes, its card says who stopped it, and the run goes on with the denial; only the
person who asked (or whoever may decide the call) can."""

from __future__ import annotations

from typing import Any

from gateway.approvals.parking import DENIED_BY_STOP
from gateway.pipeline.turn_control import NOT_YOURS
from tests.support.fakes.telegram import FakeTelegram
from tests.support.gated_tools import deploy_registry
from tests.support.harness import TelegramBot, running_gateway
from tests.support.records import approval_statuses
from tests.support.scripted import calls_then_answers

DEPLOY = [{"id": "deploy"}]


def cards(telegram: FakeTelegram, chat_id: int) -> list[dict[str, Any]]:
    return [m for m in telegram.bot_messages(chat_id) if "Approval needed" in m.get("text", "")]


def texts(telegram: FakeTelegram, chat_id: int) -> list[str]:
    return [m["text"] for m in telegram.bot_messages(chat_id)]


def current(telegram: FakeTelegram, chat_id: int, message_id: int) -> dict[str, Any]:
    [found] = [m for m in telegram.bot_messages(chat_id) if m["message_id"] == message_id]
    return found


async def test_stop_denies_the_pending_call_and_the_run_goes_on_with_the_denial(
        telegram: FakeTelegram, database_url: str) -> None:
    executed: list[str] = []
    bot = TelegramBot().register(telegram)
    alice = telegram.add_user(1001, "Alice", username="alice")
    chat = telegram.private_chat(alice)
    async with running_gateway(telegram, [bot], database_url=database_url, redis_url=None,
                               model=calls_then_answers(("deploy_service", {"service": "web"})),
                               registry=deploy_registry(executed), capabilities=DEPLOY):
        await telegram.user_says(bot.token, chat, alice, "deploy web")
        await telegram.wait_for(lambda: len(cards(telegram, chat["id"])) == 1)
        [card] = cards(telegram, chat["id"])
        await telegram.user_says(bot.token, chat, alice, "stop")
        await telegram.wait_for(lambda: texts(telegram, chat["id"])[-1].startswith("done:"))
        closed = current(telegram, chat["id"], card["message_id"])
        assert closed["text"].startswith("Denied by Alice (@alice), who said stop")
        assert not closed.get("reply_markup")
        assert texts(telegram, chat["id"])[-2:] == [
            DENIED_BY_STOP, "done: Alice (@alice), who said stop denied this call; it was not run."]
    assert executed == []
    assert await approval_statuses(database_url) == ["denied"]


async def test_in_a_group_stop_by_someone_else_leaves_the_call_pending(
        telegram: FakeTelegram, sqlite_url: str) -> None:
    executed: list[str] = []
    bot = TelegramBot().register(telegram)
    alice, mallory = telegram.add_user(1001, "Alice"), telegram.add_user(1002, "Mallory")
    group = telegram.group(-4001, "Ops")
    async with running_gateway(telegram, [bot], database_url=sqlite_url, redis_url=None,
                               model=calls_then_answers(("deploy_service", {"service": "web"})),
                               registry=deploy_registry(executed), capabilities=DEPLOY):
        await telegram.user_says(bot.token, group, alice, "@helper_bot deploy web")
        await telegram.wait_for(lambda: len(cards(telegram, group["id"])) == 1)
        [card] = cards(telegram, group["id"])
        await telegram.user_says(bot.token, group, mallory, "@helper_bot stop")
        await telegram.wait_for(lambda: texts(telegram, group["id"])[-1] == NOT_YOURS)
        assert current(telegram, group["id"], card["message_id"]).get("reply_markup")
        assert await approval_statuses(sqlite_url) == ["pending"]
        await telegram.user_says(bot.token, group, alice, "@helper_bot stop")
        await telegram.wait_for(lambda: texts(telegram, group["id"])[-1].startswith("done:"))
    assert executed == []
    assert await approval_statuses(sqlite_url) == ["denied"]
