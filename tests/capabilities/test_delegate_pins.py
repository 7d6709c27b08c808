"""A delegate named in `subagents` runs at the version pinned when its caller was applied, not its latest."""

from __future__ import annotations

from typing import Any

from pydantic_ai import ModelMessage
from pydantic_ai.models.function import AgentInfo
from sqlalchemy import select

from gateway.agents.bindings import AgentDefinition, Binding
from gateway.config.schema import AgentSpec, BindingSpec
from gateway.pipeline.runtime import deps_from_snapshot, deps_snapshot
from storage.db import Database
from storage.models import AgentVersionRow, RunRow
from tests.e2e.test_telegram_approvals import texts
from tests.support.capability_runs import deps_for
from tests.support.fakes.telegram import FakeTelegram
from tests.support.harness import TelegramBot, running_gateway
from tests.support.scripted import calls_then_answers, scripted

TASK = ("task", {"description": "write a line", "subagent_type": "writer"})


def writer(instructions: str) -> dict[str, Any]:
    return {"name": "writer", "description": "Writes a line.", "model": "function:writer",
            "instructions": instructions}


def answers_from_its_instructions(_messages: list[ModelMessage], info: AgentInfo) -> str:
    return f"per {info.instructions}"


async def ask_once(telegram: FakeTelegram, bot: TelegramBot, database_url: str, *, delegate: str,
                   parent_instructions: str, said: str) -> str:
    """Start a gateway (which applies its config), ask once, and return the answer shown in the chat."""
    alice = telegram.add_user(1001, "Alice")
    chat = telegram.private_chat(alice)
    async with running_gateway(telegram, [bot], database_url=database_url, redis_url=None,
                               model=calls_then_answers(TASK), instructions=parent_instructions,
                               capabilities=[{"id": "subagents"}], agent={"subagents": ["writer"]},
                               agents=[writer(delegate)],
                               models={"function:writer": scripted(answers_from_its_instructions)}):
        seen = len(texts(telegram, chat["id"]))
        await telegram.user_says(bot.token, chat, alice, said)
        await telegram.wait_for(lambda: len(texts(telegram, chat["id"])) > seen
                                and texts(telegram, chat["id"])[-1].startswith("done: "))
        return texts(telegram, chat["id"])[-1].splitlines()[0]  # the chat adds a trace id below


async def test_a_delegate_answers_at_the_version_its_caller_pinned_until_the_caller_is_applied_again(
        telegram: FakeTelegram, database_url: str) -> None:
    bot = TelegramBot().register(telegram)
    first = await ask_once(telegram, bot, database_url, delegate="Write in English.",
                           parent_instructions="Delegate writing.", said="one")
    assert first == "done: per Write in English."

    # The delegate's author publishes v2; the caller's spec is unchanged, so it keeps calling v1.
    second = await ask_once(telegram, bot, database_url, delegate="Write in French.",
                            parent_instructions="Delegate writing.", said="two")
    assert second == "done: per Write in English."

    # The caller's author publishes a changed spec: that re-pins the delegate to its current version.
    third = await ask_once(telegram, bot, database_url, delegate="Write in French.",
                           parent_instructions="Delegate all writing.", said="three")
    assert third == "done: per Write in French."

    db = Database(database_url)
    try:
        async with db.session() as session:
            history = {(row.agent_name, row.version): row for row in
                       (await session.execute(select(AgentVersionRow))).scalars()}
            runs = (await session.execute(select(RunRow.agent_name, RunRow.agent_version)
                                          .order_by(RunRow.id))).all()
    finally:
        await db.close()
    assert sorted(history) == [("assistant", 1), ("assistant", 2), ("writer", 1), ("writer", 2)]
    assert history[("writer", 1)].spec["instructions"] == "Write in English."
    assert history[("writer", 2)].spec["instructions"] == "Write in French."
    assert history[("assistant", 1)].pins == {"writer": 1}
    assert history[("assistant", 2)].pins == {"writer": 2}
    assert history[("writer", 1)].pins == {}
    assert runs == [("assistant", 1), ("assistant", 1), ("assistant", 2)]


def test_a_parked_runs_snapshot_carries_the_pins_and_the_versions_they_reach() -> None:
    spec = AgentSpec.model_validate({"name": "lead", "model": "parent", "subagents": ["writer"],
                                     "capabilities": ["subagents"]})
    writer_v1 = AgentDefinition(name="writer", version=1, spec=AgentSpec.model_validate(writer("Write in English.")))
    binding = Binding(bot_name="helper", spec=BindingSpec(), delegate_versions={("writer", 1): writer_v1},
                      agent=AgentDefinition(name="lead", version=3, spec=spec, pins={"writer": 1}))
    restored = deps_from_snapshot(deps_snapshot(deps_for(binding)))
    assert restored.binding.agent.version == 3 and dict(restored.binding.agent.pins) == {"writer": 1}
    assert dict(restored.binding.delegate_versions) == {("writer", 1): writer_v1}
