"""The workspace's seams with the chat, through a real gateway and the Telegram fake: what a person attaches is in
`uploads/`, the agent's skills are in `skills/<name>/`, and what the run writes under `output/` is posted once."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic_ai import ModelMessage, ModelRequest, ToolReturnPart, UserPromptPart
from pydantic_ai.models.function import FunctionModel

from tests.e2e.test_telegram_approvals import buttons, cards
from tests.support.capability_runs import SKILLS
from tests.support.fakes.telegram import FakeTelegram
from tests.support.harness import TelegramBot, running_gateway
from tests.support.scripted import calls_then_answers, stepped

CSV = b"month,sales\njan,3\nfeb,5\nmar,4\n"
SANDBOX = [{"id": "sandbox"}]


def writes_each_turn(path: str, content: str, answer: str) -> FunctionModel:
    """Every turn writes `content` to `path`, then answers `answer`."""
    def step(messages: list[ModelMessage]) -> tuple[str, dict[str, object], str] | str:
        started = max(i for i, m in enumerate(messages) if isinstance(m, ModelRequest)
                      and any(isinstance(p, UserPromptPart) for p in m.parts))
        written = any(isinstance(p, ToolReturnPart) for m in messages[started:] if isinstance(m, ModelRequest)
                      for p in m.parts)
        return answer if written else ("write_file", {"path": path, "content": content}, f"w{started}")
    return stepped(step)


def texts(telegram: FakeTelegram, chat_id: int) -> list[str]:
    """The bot's words, without its file posts."""
    return [m["text"] for m in telegram.bot_messages(chat_id) if "text" in m]


def documents(telegram: FakeTelegram, chat_id: int) -> list[dict[str, Any]]:
    return [m for m in telegram.bot_messages(chat_id) if "document" in m or "photo" in m]


async def test_a_csv_sent_in_a_dm_is_read_from_uploads_in_that_turn(telegram: FakeTelegram,
                                                                    database_url: str) -> None:
    bot = TelegramBot().register(telegram)
    alice = telegram.add_user(1001, "Alice")
    chat = telegram.private_chat(alice)
    seen: list[str] = []
    model = calls_then_answers(("read_file", {"path": "uploads/sales.csv"}),
                               answer=lambda results: seen.extend(results) or "read it")
    async with running_gateway(telegram, [bot], database_url=database_url, redis_url=None, model=model,
                               capabilities=SANDBOX):
        await telegram.user_sends_file(bot.token, chat, alice, CSV, file_name="sales.csv", mime_type="text/csv",
                                       caption="sum the sales")
        await telegram.wait_for(lambda: texts(telegram, chat["id"])[-1:] == ["read it"])
    [content] = seen
    assert "jan,3" in content and "mar,4" in content


async def test_bound_skills_are_files_under_skills_in_the_workspace(telegram: FakeTelegram, sqlite_url: str) -> None:
    bot = TelegramBot().register(telegram)
    alice = telegram.add_user(1001, "Alice")
    chat = telegram.private_chat(alice)
    seen: list[str] = []
    model = calls_then_answers(("read_file", {"path": "skills/refunds/SKILL.md"}),
                               ("ls", {"path": "skills/refunds"}),
                               answer=lambda results: seen.extend(results) or "looked")
    async with running_gateway(telegram, [bot], database_url=sqlite_url, redis_url=None, model=model,
                               capabilities=[{"id": "skills"}, *SANDBOX], agent={"skill_folders": ["team"]},
                               top={"skill_folders": [{"name": "team", "path": str(SKILLS)}]}):
        await telegram.user_says(bot.token, chat, alice, "how do refunds work?")
        await telegram.wait_for(lambda: texts(telegram, chat["id"])[-1:] == ["looked"])
    skill, listing = seen
    assert (SKILLS / "refunds" / "SKILL.md").read_text().splitlines()[-1].strip() in skill
    assert "TEMPLATE.md" in listing and "issue_refund.py" in listing, "resources and scripts sit beside SKILL.md"


@pytest.mark.parametrize("database_url", ["sqlite", "postgresql"], indirect=True)
async def test_a_file_written_under_output_is_posted_once(telegram: FakeTelegram, database_url: str) -> None:
    bot = TelegramBot().register(telegram)
    alice = telegram.add_user(1001, "Alice")
    chat = telegram.private_chat(alice)
    model = writes_each_turn("output/totals.csv", "total\n12\n", "written")
    async with running_gateway(telegram, [bot], database_url=database_url, redis_url=None, model=model,
                               capabilities=SANDBOX):
        await telegram.user_says(bot.token, chat, alice, "write the totals")
        await telegram.wait_for(lambda: texts(telegram, chat["id"])[-1:] == ["written"])
        await telegram.user_says(bot.token, chat, alice, "again, please")  # the same content again: not resent
        await telegram.wait_for(lambda: texts(telegram, chat["id"])[-1:] == ["written"]
                                and len(texts(telegram, chat["id"])) == 2)
    [posted] = documents(telegram, chat["id"])
    assert posted["document"]["file_name"] == "totals.csv"
    assert telegram.file_content(posted) == b"total\n12\n"


async def test_an_output_file_is_posted_once_across_an_approval_park_on_execute(telegram: FakeTelegram,
                                                                               sqlite_url: str) -> None:
    bot = TelegramBot().register(telegram)
    alice = telegram.add_user(1001, "Alice")
    chat = telegram.private_chat(alice)
    model = calls_then_answers(("write_file", {"path": "output/plan.md", "content": "# Plan\n"}),
                               ("execute", {"command": "echo hi"}), answer=lambda _results: "finished")
    async with running_gateway(telegram, [bot], database_url=sqlite_url, redis_url=None, model=model,
                               capabilities=SANDBOX):
        await telegram.user_says(bot.token, chat, alice, "plan, then run echo hi")
        await telegram.wait_for(lambda: len(cards(telegram, chat["id"])) == 1)
        assert len(documents(telegram, chat["id"])) == 1, "the park posted what the run had written"
        [card] = cards(telegram, chat["id"])
        await telegram.user_clicks(bot.token, card, alice, buttons(card)["✅ Approve"])
        await telegram.wait_for(lambda: texts(telegram, chat["id"])[-1:] == ["finished"])
    [posted] = documents(telegram, chat["id"])
    assert telegram.file_content(posted) == b"# Plan\n"
    assert sum(c.method in ("sendDocument", "sendPhoto") for c in telegram.calls) == 1
