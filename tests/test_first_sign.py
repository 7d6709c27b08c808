"""A message that has to wait for its turn is shown seen at once: typing, sent after its commit."""

from __future__ import annotations

import asyncio

from tests.fakes.telegram import FakeTelegram
from tests.harness import TelegramBot, running_gateway, said_by
from tests.scripted import waits_for


async def test_a_queued_message_shows_typing_before_its_turn(telegram: FakeTelegram, sqlite_url: str) -> None:
    bot = TelegramBot().register(telegram)
    user = telegram.add_user(101, "Ada", username="ada")
    chat = telegram.private_chat(user)
    gate, started = asyncio.Event(), asyncio.Event()
    async with running_gateway(telegram, [bot], database_url=sqlite_url, redis_url=None,
                               model=waits_for(gate, "done", started=started)):
        await telegram.user_says(bot.token, chat, user, "first")
        await asyncio.wait_for(started.wait(), 10)

        def typed() -> int:
            return sum(1 for c in telegram.calls if c.method == "sendChatAction" and c.params.get("action") == "typing")

        assert typed() == 0  # a turn that starts at once shows its placeholder, which would clear typing anyway
        await telegram.user_says(bot.token, chat, user, "second")  # waits behind the first turn of its chat
        await telegram.wait_for(lambda: typed() == 1)
        assert len(said_by(telegram, chat, bot)) == 1  # only the first turn has posted
        gate.set()
        await telegram.wait_for(lambda: said_by(telegram, chat, bot).count("thinking done") == 2)
