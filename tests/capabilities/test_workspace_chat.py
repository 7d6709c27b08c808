"""A workspace through a real chat: files kept between turns of one Telegram chat, and `execute` parked on a card."""

from __future__ import annotations

from pydantic_ai import ModelMessage, ModelRequest, ToolReturnPart, UserPromptPart
from pydantic_ai.models.function import FunctionModel

from tests.e2e.test_telegram_approvals import buttons, cards, texts
from tests.support.fakes.telegram import FakeTelegram
from tests.support.harness import TelegramBot, running_gateway
from tests.support.scripted import calls_then_answers, stepped, user_prompts


def writes_then_reads() -> FunctionModel:
    """A turn asked to remember writes a note; any other turn reads it back and answers with what it read."""

    def step(messages: list[ModelMessage]) -> tuple[str, dict[str, object], str] | str:
        turn_started = max(i for i, m in enumerate(messages) if isinstance(m, ModelRequest)
                           and any(isinstance(p, UserPromptPart) for p in m.parts))
        results = [str(p.content) for m in messages[turn_started:] if isinstance(m, ModelRequest)
                   for p in m.parts if isinstance(p, ToolReturnPart)]
        if "remember" in user_prompts(messages)[-1]:
            return "noted" if results else ("write_file", {"path": "notes.md", "content": "launch on Friday"}, "w1")
        return f"I read: {results[-1]}" if results else ("read_file", {"path": "notes.md"}, "r1")

    return stepped(step)


async def test_a_file_written_in_one_turn_is_read_in_the_next(telegram: FakeTelegram, database_url: str) -> None:
    bot = TelegramBot().register(telegram)
    alice = telegram.add_user(1001, "Alice")
    chat = telegram.private_chat(alice)
    async with running_gateway(telegram, [bot], database_url=database_url, redis_url=None,
                               model=writes_then_reads(), capabilities=[{"id": "sandbox"}]):
        await telegram.user_says(bot.token, chat, alice, "remember: the launch is on Friday")
        await telegram.wait_for(lambda: texts(telegram, chat["id"])[-1:] == ["noted"])
        await telegram.user_says(bot.token, chat, alice, "when is the launch?")
        await telegram.wait_for(lambda: texts(telegram, chat["id"])[-1].startswith("I read:"))
    assert "launch on Friday" in texts(telegram, chat["id"])[-1]


async def test_execute_waits_for_an_approval_card(telegram: FakeTelegram, database_url: str) -> None:
    bot = TelegramBot().register(telegram)
    alice = telegram.add_user(1001, "Alice")
    chat = telegram.private_chat(alice)
    model = calls_then_answers(("execute", {"command": "echo hi"}))
    async with running_gateway(telegram, [bot], database_url=database_url, redis_url=None, model=model,
                               capabilities=[{"id": "sandbox"}]):
        await telegram.user_says(bot.token, chat, alice, "run echo hi")
        await telegram.wait_for(lambda: len(cards(telegram, chat["id"])) == 1)
        [card] = cards(telegram, chat["id"])
        await telegram.user_clicks(bot.token, card, alice, buttons(card)["✅ Approve"])
        await telegram.wait_for(lambda: texts(telegram, chat["id"])[-1].startswith("done:"))
    assert "does not support command execution" in texts(telegram, chat["id"])[-1]
