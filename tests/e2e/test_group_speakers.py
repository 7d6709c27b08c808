"""In a group, every stored turn records who said it, and the history names each speaker to the model."""

from __future__ import annotations

from pydantic_ai import ModelMessage
from sqlalchemy import select

from storage.db import Database
from storage.models import IdentityRow, MessageRow
from tests.support.fakes.telegram import FakeTelegram
from tests.support.harness import TelegramBot, running_gateway
from tests.support.scripted import scripted, user_prompts


async def test_the_history_of_a_group_names_the_speaker_of_every_user_turn(
        telegram: FakeTelegram, database_url: str) -> None:
    bot = TelegramBot().register(telegram)
    alice = telegram.add_user(1001, "Alice", username="alice")
    bob = telegram.add_user(1002, "Bob")
    group = telegram.group(-6001, "Team")
    seen: list[list[str]] = []

    def remember(messages: list[ModelMessage], _info: object) -> str:
        seen.append(user_prompts(messages))
        return f"answer {len(seen)}"

    async with running_gateway(telegram, [bot], database_url=database_url, redis_url=None, model=scripted(remember)):
        for user, text in ((alice, "I deploy on Mondays"), (bob, "I deploy on Fridays"), (alice, "who deploys when?")):
            count = len(seen)
            await telegram.user_says(bot.token, group, user, f"@helper_bot {text}")
            await telegram.wait_for(lambda count=count: len(telegram.bot_messages(group["id"])) == count + 1
                                    and telegram.bot_messages(group["id"])[-1]["text"] == f"answer {count + 1}")
    assert seen[-1] == ["[Alice] I deploy on Mondays", "[Bob] I deploy on Fridays", "[Alice] who deploys when?"]
    db = Database(database_url)
    try:
        async with db.session() as session:
            speakers = (await session.execute(
                select(MessageRow.speaker_name, IdentityRow.platform_user_id)
                .join(IdentityRow, IdentityRow.id == MessageRow.identity_id)
                .where(MessageRow.role == "user").order_by(MessageRow.id))).all()
    finally:
        await db.close()
    assert [tuple(row) for row in speakers] == [("Alice", "1001"), ("Bob", "1002"), ("Alice", "1001")]
