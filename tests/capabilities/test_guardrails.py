"""Guardrails at the three edges: redaction rewrites and the run goes on; a keyword block ends the run."""

from __future__ import annotations

from pydantic_ai import ModelMessage
from pydantic_ai.models.function import AgentInfo
from sqlalchemy import select

from capabilities.guardrails import NOTICES
from storage.db import Database
from storage.models import RunRow
from tests.support.capability_runs import assembled, binding_with, run
from tests.support.fakes.telegram import FakeTelegram
from tests.support.gated_tools import deploy_registry
from tests.support.harness import TelegramBot, running_gateway
from tests.support.scripted import calls_then_answers, last_prompt, scripted

KEY = "sk-proj-abcdefghijklmnopqrstuvwxyz0123456789ABCD"


async def run_statuses(database_url: str) -> list[str]:
    db = Database(database_url)
    try:
        async with db.session() as session:
            return list((await session.execute(select(RunRow.status).order_by(RunRow.id))).scalars())
    finally:
        await db.close()


def sent_texts(telegram: FakeTelegram) -> list[str]:
    return [str(c.params.get("text", "")) for c in telegram.calls if c.method in ("sendMessage", "editMessageText")]


async def test_a_blocked_term_in_the_prompt_ends_the_run_before_the_model(
        telegram: FakeTelegram, database_url: str) -> None:
    asked: list[str] = []
    bot = TelegramBot().register(telegram)
    alice = telegram.add_user(1001, "Alice")
    chat = telegram.private_chat(alice)
    model = scripted(lambda messages, _info: asked.append(last_prompt(messages)) or "the answer")
    guardrails = {"id": "guardrails", "config": {"blocked_keywords_in": "payroll,\nsalary"}}
    async with running_gateway(telegram, [bot], database_url=database_url, redis_url=None, model=model,
                               capabilities=[guardrails]):
        await telegram.user_says(bot.token, chat, alice, "what is Bob's Salary?")
        await telegram.wait_for(lambda: telegram.transcript(chat["id"])[-1:] == [("Helper", NOTICES["input"])])
    assert asked == []
    assert await run_statuses(database_url) == ["guardrail_blocked"]


async def test_a_redacted_answer_never_reaches_the_chat_even_while_streaming(
        telegram: FakeTelegram, sqlite_url: str) -> None:
    bot = TelegramBot().register(telegram)
    alice = telegram.add_user(1001, "Alice")
    chat = telegram.private_chat(alice)
    async with running_gateway(telegram, [bot], database_url=sqlite_url, redis_url=None,
                               model=scripted(lambda _m, _i: f"Your key is {KEY}, keep it safe.", chunk=8),
                               capabilities=[{"id": "guardrails", "config": {"redact_secrets_out": True}}]):
        await telegram.user_says(bot.token, chat, alice, "what is my key?")
        await telegram.wait_for(lambda: any("keep it safe" in t for t in sent_texts(telegram)))
    assert not any("sk-proj" in text for text in sent_texts(telegram))
    assert telegram.bot_messages(chat["id"])[-1]["text"].startswith("Your key is [redacted")


async def test_a_blocked_term_in_a_tool_result_ends_the_run(telegram: FakeTelegram, sqlite_url: str) -> None:
    executed: list[str] = []
    bot = TelegramBot().register(telegram)
    alice = telegram.add_user(1001, "Alice")
    chat = telegram.private_chat(alice)
    capabilities = [{"id": "deploy", "approval": "never"},
                    {"id": "guardrails", "config": {"blocked_keywords_tool": "deployed"}}]
    async with running_gateway(telegram, [bot], database_url=sqlite_url, redis_url=None,
                               model=calls_then_answers(("deploy_service", {"service": "web"})),
                               registry=deploy_registry(executed), capabilities=capabilities):
        await telegram.user_says(bot.token, chat, alice, "deploy web")
        await telegram.wait_for(lambda: telegram.transcript(chat["id"])[-1:] == [("Helper", NOTICES["tool"])])
    assert executed == ["web"]
    assert await run_statuses(sqlite_url) == ["guardrail_blocked"]


async def test_secrets_and_personal_data_are_redacted_from_the_prompt_before_the_model_reads_it() -> None:
    seen: list[str] = []

    def model(messages: list[ModelMessage], _info: AgentInfo) -> str:
        seen.append(last_prompt(messages))
        return "ok"

    binding = binding_with([{"id": "guardrails", "config": {"redact_secrets_in": True, "redact_pii_in": True}}])
    await run(assembled(binding, scripted(model)), f"mail {KEY} to bob@example.com", binding=binding)
    [prompt] = seen
    assert KEY not in prompt and "bob@example.com" not in prompt and prompt.startswith("mail [redacted")


async def test_a_tool_result_is_redacted_before_the_model_reads_it() -> None:
    executed: list[str] = []
    binding = binding_with([{"id": "deploy", "approval": "never"},
                            {"id": "guardrails", "config": {"redact_pii_tool": True}}])
    model = calls_then_answers(("deploy_service", {"service": "ops@example.com"}))
    result = await run(assembled(binding, model, registry=deploy_registry(executed)), "deploy", binding=binding)
    assert executed == ["ops@example.com"] and "example.com" not in str(result.output)
