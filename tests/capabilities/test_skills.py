"""`skills`: skills from bound folders through pydantic-ai-skills 1.x, without scripts, with our tool texts."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from pydantic_ai import AgentRunResult

from capabilities.run import SkillFolder
from capabilities.skills import SkillProblem, load_skills
from tests.support.bound_runs import Seen, calling
from tests.support.capability_runs import SKILLS, assembled, binding_with, recording, run, tool_defs
from tests.support.fakes.telegram import FakeTelegram
from tests.support.harness import TelegramBot, ask, running_gateway

TEAM = SkillFolder(name="team", path=str(SKILLS))


async def run_with(folders: tuple[SkillFolder, ...],
                   calls: Sequence[tuple[str, dict[str, object]]] = ()) -> tuple[AgentRunResult[Any], Seen]:
    model, seen = calling(calls)
    binding = binding_with([{"id": "skills"}], instructions="Be helpful.")
    result = await run(assembled(binding, model, facts={"skill_folders": folders}), "hi", binding=binding)
    return result, seen


async def test_the_three_tools_are_offered_and_run_skill_script_never_is() -> None:
    model, infos = recording()
    binding = binding_with([{"id": "skills"}])
    await run(assembled(binding, model, facts={"skill_folders": (TEAM,)}), "hi", binding=binding)
    tools = tool_defs(infos)
    assert set(tools) == {"list_skills", "load_skill", "read_skill_resource"}
    everything = " ".join(t.description or "" for t in tools.values()) + (infos[0].instructions or "")
    assert "run_skill_script" not in everything


async def test_list_skills_is_described_as_the_json_the_model_is_handed() -> None:
    model, infos = recording()
    binding = binding_with([{"id": "skills"}])
    await run(assembled(binding, model, facts={"skill_folders": (TEAM,)}), "hi", binding=binding)
    description = tool_defs(infos)["list_skills"].description or ""
    assert "A JSON object mapping each skill's exact name" in description and "Dictionary" not in description


async def test_the_catalog_of_skills_is_in_the_instructions() -> None:
    _result, seen = await run_with((TEAM,))
    instructions = seen.instructions[0] or ""
    assert "<name>refunds</name>" in instructions and "<name>onboarding</name>" in instructions
    assert str(SKILLS.resolve()) not in instructions, "no server path reaches the model"


async def test_a_skill_loads_without_its_scripts_and_its_resources_are_readable() -> None:
    _result, seen = await run_with((TEAM,), [("list_skills", {}), ("load_skill", {"skill_name": "refunds"}),
                                             ("read_skill_resource", {"skill_name": "refunds",
                                                                      "resource_name": "TEMPLATE.md"})])
    listed, loaded, resource = seen.returns
    assert "refunds" in listed and "How to handle a refund request" in listed
    assert "refunds are possible within 30 days" in loaded and '<resource name="TEMPLATE.md"' in loaded
    assert "issue_refund" not in loaded and "<!-- No scripts -->" in loaded
    assert resource == "Refund request: CUSTOMER, ORDER, AMOUNT, REASON.\n"


async def test_an_unknown_skill_is_retried_with_the_names_then_answered_as_text() -> None:
    _result, seen = await run_with((TEAM,), [("load_skill", {"skill_name": "refund"}),
                                             ("load_skill", {"skill_name": "refund"})])
    assert len(seen.retries) == 1 and "Available skills: onboarding, refunds" in seen.retries[0]
    assert len(seen.returns) == 1 and "Skill 'refund' not found" in seen.returns[0]


async def test_no_skill_folder_bound_is_not_attached() -> None:
    _result, seen = await run_with(())
    assert seen.tools[0] == set() and seen.instructions[0] == "Be helpful."


def write_skill(root: Path, name: str, front: str) -> None:
    (root / name).mkdir(parents=True)
    (root / name / "SKILL.md").write_text(f"---\n{front}\n---\nDo the thing.\n")


def test_a_skill_without_a_description_is_refused_with_the_fix(tmp_path: Path) -> None:
    write_skill(tmp_path, "bare", "name: bare")
    with pytest.raises(SkillProblem, match="skill 'bare' has no description; add `description:`"):
        load_skills([SkillFolder(name="x", path=str(tmp_path))])


def test_a_skill_without_a_name_is_refused_with_the_fix(tmp_path: Path) -> None:
    write_skill(tmp_path, "anonymous", "description: Does things.")
    with pytest.raises(SkillProblem, match=r'missing the required "name" field.*give every SKILL\.md front matter'):
        load_skills([SkillFolder(name="x", path=str(tmp_path))])


def test_a_folder_without_skills_and_a_missing_folder_are_refused(tmp_path: Path) -> None:
    with pytest.raises(SkillProblem, match="holds no skill"):
        load_skills([SkillFolder(name="x", path=str(tmp_path))])
    with pytest.raises(SkillProblem, match="is not a folder"):
        load_skills([SkillFolder(name="x", path=str(tmp_path / "nope"))])


async def test_a_chat_turn_loads_a_skill_from_a_bound_folder(telegram: FakeTelegram, database_url: str) -> None:
    bot = TelegramBot().register(telegram)
    alice = telegram.add_user(1001, "Alice")
    chat = telegram.private_chat(alice)
    model, seen = calling([("load_skill", {"skill_name": "onboarding"})], answer="Plan:")
    async with running_gateway(telegram, [bot], database_url=database_url, redis_url=None, model=model,
                               capabilities=[{"id": "skills"}], agent={"skill_folders": ["team"]},
                               top={"skill_folders": [{"name": "team", "path": str(SKILLS)}]}):
        answer = await ask(telegram, bot, chat, alice, "a new colleague starts monday")
    assert "Order a laptop on day one" in seen.returns[0]
    assert "<name>onboarding</name>" in (seen.instructions[0] or "")
    assert answer.startswith("Plan:")
