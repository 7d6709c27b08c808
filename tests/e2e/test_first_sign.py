"""The first sign on Telegram is typing, kept up until the first text; a message that has to wait for its turn is
shown typing at once too, after its commit, again every few seconds until its turn. Nothing is posted before there
is text: no "…" a crash could strand; in a private chat the text is a draft until the answer is sent whole."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

from pydantic_ai.messages import ModelMessage
from pydantic_ai.models.function import AgentInfo, FunctionModel

from gateway.pipeline.live_reply import PLACEHOLDER
from tests.support.fakes.telegram import FakeTelegram
from tests.support.harness import TelegramBot, running_gateway, said_by
from tests.support.scripted import waits_for


def typed(telegram: FakeTelegram) -> int:
    return sum(1 for c in telegram.calls if c.method == "sendChatAction" and c.params.get("action") == "typing")


def posted(telegram: FakeTelegram) -> list[str]:
    return [str(c.params.get("text")) for c in telegram.calls if c.method == "sendMessage"]


async def test_a_turn_shows_typing_until_its_first_text_and_posts_nothing_before(telegram: FakeTelegram,
                                                                                sqlite_url: str) -> None:
    bot = TelegramBot().register(telegram)
    user = telegram.add_user(101, "Ada", username="ada")
    chat = telegram.private_chat(user)
    gate = asyncio.Event()

    async def stream(_messages: list[ModelMessage], _info: AgentInfo) -> AsyncIterator[str]:
        await gate.wait()  # a model slow to say anything
        yield "the answer"

    async with running_gateway(telegram, [bot], database_url=sqlite_url, redis_url=None,
                               model=FunctionModel(stream_function=stream)):
        await telegram.user_says(bot.token, chat, user, "hi")
        await telegram.wait_for(lambda: typed(telegram) >= 2, timeout=15)  # shown, then shown again before it lapses
        assert posted(telegram) == []
        gate.set()
        await telegram.wait_for(lambda: said_by(telegram, chat, bot) == ["the answer"])
    assert posted(telegram) == ["the answer"]
    assert PLACEHOLDER not in posted(telegram)


async def test_a_queued_message_shows_typing_before_its_turn(telegram: FakeTelegram, sqlite_url: str) -> None:
    bot = TelegramBot().register(telegram)
    user = telegram.add_user(101, "Ada", username="ada")
    chat = telegram.group(-2002, "Team")  # a group posts its first text; a DM drafts it
    gate = asyncio.Event()
    async with running_gateway(telegram, [bot], database_url=sqlite_url, redis_url=None,
                               model=waits_for(gate, "done")):
        await telegram.user_says(bot.token, chat, user, f"@{bot.username} first")
        await telegram.wait_for(lambda: len(said_by(telegram, chat, bot)) == 1)  # its first text, posted
        shown = typed(telegram)
        await telegram.user_says(bot.token, chat, user, f"@{bot.username} second")  # waits behind the first turn
        await telegram.wait_for(lambda: typed(telegram) == shown + 1)
        assert len(said_by(telegram, chat, bot)) == 1  # only the first turn has posted
        gate.set()
        await telegram.wait_for(lambda: said_by(telegram, chat, bot).count("thinking done") == 2)


async def test_a_post_by_the_bot_clears_typing_so_the_next_queued_message_shows_it_again(telegram: FakeTelegram,
                                                                                        sqlite_url: str) -> None:
    bot = TelegramBot().register(telegram)
    user = telegram.add_user(101, "Ada", username="ada")
    chat = telegram.group(-2002, "Team")  # a group posts its first text; a DM drafts it
    gates = [asyncio.Event() for _ in range(4)]
    started: list[int] = []

    async def stream(_messages: list[ModelMessage], _info: AgentInfo) -> AsyncIterator[str]:
        turn = len(started)
        started.append(turn)
        yield "thinking "
        await gates[turn].wait()
        yield f"done {turn}"

    def posts() -> int:
        return len(said_by(telegram, chat, bot))

    async with running_gateway(telegram, [bot], database_url=sqlite_url, redis_url=None,
                               model=FunctionModel(stream_function=stream)):
        await telegram.user_says(bot.token, chat, user, f"@{bot.username} first")
        await telegram.wait_for(lambda: posts() == 1)
        shown = typed(telegram)
        await telegram.user_says(bot.token, chat, user, f"@{bot.username} second")  # queued: typing
        await telegram.wait_for(lambda: typed(telegram) == shown + 1)
        await telegram.user_says(bot.token, chat, user, f"@{bot.username} third")  # queued too, and typing still shows
        gates[0].set()  # the first turn ends; the second posts its first text, which clears the typing
        await telegram.wait_for(lambda: posts() == 2)
        shown = typed(telegram)
        await telegram.user_says(bot.token, chat, user, f"@{bot.username} fourth")  # queued again, later
        await telegram.wait_for(lambda: typed(telegram) == shown + 1)
        for gate in gates:
            gate.set()
        await telegram.wait_for(lambda: sum(t.startswith("thinking done") for t in said_by(telegram, chat, bot)) == 4)
