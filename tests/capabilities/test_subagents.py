"""Delegation through real pydantic-ai runs: the parent's and every delegate's model are scripted."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from pydantic_ai import (
    AgentRunResult,
    DeferredToolRequests,
    DeferredToolResults,
    ModelMessage,
    ModelResponse,
    TextPart,
    ToolApproved,
    ToolCallPart,
    ToolDenied,
)
from pydantic_ai.messages import ModelRequest, RetryPromptPart, ToolReturnPart
from pydantic_ai.models import Model
from pydantic_ai.models.function import AgentInfo, FunctionModel

from capabilities import default_registry
from capabilities.registry import Registry
from gateway.agents.assembly import AssembledAgent
from gateway.agents.bindings import AgentDefinition, Binding
from gateway.agents.models import ModelResolver
from gateway.config.schema import AgentSpec, BindingSpec
from gateway.config.secrets import SecretSource
from gateway.pipeline.runtime import shown_call
from tests.e2e.test_telegram_approvals import buttons, cards, texts
from tests.support.capability_runs import assemble, deps_for, run_facts
from tests.support.fakes.telegram import FakeTelegram
from tests.support.gated_tools import deploy_registry
from tests.support.harness import TelegramBot, running_gateway
from tests.support.scripted import calls_then_answers, scripted, user_prompts

RESEARCHER = {"name": "researcher", "description": "Researches a topic.", "instructions": "Research it.",
              "model": "child"}


def lead(config: Mapping[str, Any] | None = None, *, pinned: tuple[str, ...] = (),
         capabilities: tuple[Any, ...] = ()) -> Binding:
    spec = AgentSpec.model_validate({"name": "lead", "model": "parent", "subagents": list(pinned),
                                     "capabilities": [{"id": "subagents", "config": dict(config or {})},
                                                      *capabilities]})
    return Binding(bot_name="helper", agent=AgentDefinition(name="lead", version=1, spec=spec), spec=BindingSpec())


def built(binding: Binding, models: Mapping[str, Model], *, agents: Mapping[str, Any] | None = None,
          registry: Registry | None = None) -> AssembledAgent:
    """`agents` are the other agents of the gateway, each at version 1; every agent pins those it names."""
    resolver = ModelResolver({}, SecretSource(environ={}), fixed=dict(models))
    specs = {name: AgentSpec.model_validate({"name": name, **spec}) for name, spec in (agents or {}).items()}

    def pins(spec: AgentSpec) -> dict[str, int]:
        return {name: 1 for name in spec.subagents if name in specs}
    versions = {(name, 1): AgentDefinition(name=name, version=1, spec=spec, pins=pins(spec))
                for name, spec in specs.items()}
    binding = replace(binding, agent=replace(binding.agent, pins=pins(binding.agent.spec)),
                      delegate_versions=versions)
    return assemble(binding, registry=registry or default_registry(), models=resolver, run=run_facts(binding))


async def ask(agent: AssembledAgent, binding: Binding, **run: Any) -> AgentRunResult[Any]:
    prompt = run.pop("prompt", None if "message_history" in run else "go")
    return await agent.agent.run(prompt, deps=deps_for(binding), **run)


def replies(prefix: str) -> FunctionModel:
    """A delegate that answers `<prefix>: <its task>`, the task cut from the library's wrapping."""
    return scripted(lambda messages, _info: f"{prefix}: {task_of(messages)}")


def task_of(messages: list[ModelMessage]) -> str:
    prompt = user_prompts(messages)[0]
    return prompt.split("## Your Task\n\n", 1)[-1].split("\n\n", 1)[0]


def returned(messages: list[ModelMessage]) -> list[ToolReturnPart | RetryPromptPart]:
    return [p for m in messages if isinstance(m, ModelRequest) for p in m.parts
            if isinstance(p, ToolReturnPart | RetryPromptPart)]


def recorder() -> tuple[FunctionModel, list[AgentInfo]]:
    seen: list[AgentInfo] = []

    def answer(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        seen.append(info)
        return ModelResponse(parts=[TextPart("noted")])
    return FunctionModel(answer), seen


async def test_a_sync_task_returns_the_delegates_answer_and_its_usage_counts_into_the_run() -> None:
    binding = lead({"inline": [RESEARCHER]})
    parent = calls_then_answers(("task", {"description": "history of TLS", "subagent_type": "researcher"}))
    agent = built(binding, {"parent": parent, "child": replies("found")})
    result = await ask(agent, binding)
    assert result.output.startswith("done: found: history of TLS")
    assert agent.delegated.requests == 1 and agent.delegated.input_tokens > 0
    assert result.usage.requests == 2


async def test_the_delegate_sees_the_task_and_never_the_parents_conversation() -> None:
    seen: list[list[str]] = []

    def child(messages: list[ModelMessage], _info: AgentInfo) -> str:
        seen.append(user_prompts(messages))
        return "ok"
    binding = lead({"inline": [RESEARCHER]})
    parent = calls_then_answers(("task", {"description": "summarize RFC 8446", "subagent_type": "researcher"}))
    await ask(built(binding, {"parent": parent, "child": scripted(child)}), binding, prompt="my secret plan")
    [[prompt]] = seen
    assert "summarize RFC 8446" in prompt and "my secret plan" not in prompt


async def test_in_async_mode_task_returns_an_id_and_wait_tasks_the_result() -> None:
    def parent(messages: list[ModelMessage], _info: AgentInfo) -> ModelResponse:
        results = returned(messages)
        if not results:
            return ModelResponse(parts=[ToolCallPart("task", {"description": "dig", "subagent_type": "researcher"})])
        if len(results) == 1:
            task_id = re.search(r"Task ID: (\w+)", str(results[0].content))
            assert task_id is not None
            return ModelResponse(parts=[ToolCallPart("wait_tasks", {"task_ids": [task_id.group(1)]})])
        return ModelResponse(parts=[TextPart(str(results[-1].content))])
    binding = lead({"mode": "async", "inline": [RESEARCHER]})
    agent = built(binding, {"parent": FunctionModel(parent), "child": replies("dug")})
    result = await ask(agent, binding)
    assert "COMPLETED" in result.output and "dug: dig" in result.output
    assert agent.delegated.requests == 1


async def test_an_auto_delegate_needs_the_model_to_choose_its_mode() -> None:
    binding = lead({"inline": [{**RESEARCHER, "mode": "auto"}]})
    parent = calls_then_answers(("task", {"description": "a", "subagent_type": "researcher"}),
                                ("task", {"description": "a", "subagent_type": "researcher", "mode": "sync"}),
                                answer=lambda results: " | ".join(results))
    result = await ask(built(binding, {"parent": parent, "child": replies("ok")}), binding)
    first, second = result.output.split(" | ")
    assert "call task again with mode='sync'" in first
    assert second.startswith("ok: a")


async def test_wait_tasks_cuts_a_long_result_and_says_where_the_rest_is() -> None:
    def parent(messages: list[ModelMessage], _info: AgentInfo) -> ModelResponse:
        results = returned(messages)
        if not results:
            return ModelResponse(parts=[ToolCallPart("task", {"description": "long", "subagent_type": "researcher"})])
        task_id = re.search(r"Task ID: (\w+)", str(results[0].content))
        assert task_id is not None
        if len(results) == 1:
            return ModelResponse(parts=[ToolCallPart("wait_tasks", {"task_ids": [task_id.group(1)]})])
        if len(results) == 2:
            return ModelResponse(parts=[ToolCallPart("check_task", {"task_id": task_id.group(1)})])
        return ModelResponse(parts=[TextPart("\n=====\n".join(str(r.content) for r in results[1:]))])
    binding = lead({"mode": "async", "max_result_chars": 200, "inline": [RESEARCHER]})
    agent = built(binding, {"parent": FunctionModel(parent), "child": scripted(lambda _m, _i: "x" * 500)})
    waited, checked = (await ask(agent, binding)).output.split("\n=====\n")
    assert "showing 200 of 500 characters" in waited and "check_task(" in waited and "x" * 201 not in waited
    assert "x" * 500 in checked


async def test_past_max_fanout_the_next_delegation_comes_back_as_a_result() -> None:
    release = asyncio.Event()

    async def slow(messages: list[ModelMessage], _info: AgentInfo) -> ModelResponse:
        await release.wait()
        return ModelResponse(parts=[TextPart("slow done")])

    def parent(messages: list[ModelMessage], _info: AgentInfo) -> ModelResponse:
        results = returned(messages)
        if len(results) < 2:
            return ModelResponse(parts=[ToolCallPart("task", {"description": f"job {len(results)}",
                                                              "subagent_type": "researcher"})])
        release.set()
        return ModelResponse(parts=[TextPart(str(results[1].content))])
    binding = lead({"mode": "async", "max_fanout": 1, "inline": [RESEARCHER]})
    result = await ask(built(binding, {"parent": FunctionModel(parent), "child": FunctionModel(slow)}), binding)
    assert result.output.startswith("Not started: 1 delegations are already running")


async def test_a_pinned_agent_runs_on_its_own_spec_with_its_own_capabilities() -> None:
    planner, seen = recorder()
    binding = lead(pinned=("planner",))
    parent = calls_then_answers(("task", {"description": "plan the release", "subagent_type": "planner"}))
    agents = {"planner": {"model": "planner", "instructions": "You plan releases.", "description": "Plans.",
                          "capabilities": ["planning"]}}
    await ask(built(binding, {"parent": parent, "planner": planner}, agents=agents), binding)
    [info] = seen
    assert "write_plan" in {tool.name for tool in info.function_tools}
    assert "You plan releases." in (info.instructions or "")


async def test_the_parent_lists_its_delegates_with_their_descriptions_and_its_ceiling() -> None:
    parent, seen = recorder()
    binding = lead({"max_fanout": 4, "inline": [RESEARCHER, {**RESEARCHER, "name": "slow", "mode": "async",
                                                           "description": "Digs deep."}]}, pinned=("planner",))
    agents = {"planner": {"model": "child", "description": "Plans releases."}}
    await ask(built(binding, {"parent": parent, "child": replies("x")}, agents=agents), binding)
    instructions = seen[0].instructions or ""
    assert "- researcher: Researches a topic." in instructions
    assert "- slow: Digs deep. (runs in the background: task returns a task id)" in instructions
    assert "- planner: Plans releases." in instructions
    assert "At most 4 delegations run at once" in instructions


@pytest.mark.parametrize(("root_depth", "middle_depth", "middle_delegates", "leaf_delegates"),
                         [(1, 3, False, False), (2, 3, True, False), (3, 1, True, False), (3, 3, True, True)])
async def test_every_agent_in_the_tree_is_held_to_the_lower_of_its_own_depth_and_what_is_left(
        root_depth: int, middle_depth: int, middle_delegates: bool, leaf_delegates: bool) -> None:
    offered: dict[str, set[str]] = {}

    def named(name: str) -> FunctionModel:
        def answer(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
            tools = {tool.name for tool in info.function_tools}
            offered.setdefault(name, tools)
            if "task" in tools and not returned(messages):
                target = {"middle": "leaf", "leaf": "bottom"}[name]
                return ModelResponse(parts=[ToolCallPart("task", {"description": "go", "subagent_type": target})])
            return ModelResponse(parts=[TextPart(f"{name} done")])
        return FunctionModel(answer)
    subagents = {"id": "subagents", "config": {"max_depth": 3}}
    agents = {"middle": {"model": "middle", "subagents": ["leaf"],
                         "capabilities": [{"id": "subagents", "config": {"max_depth": middle_depth}}]},
              "leaf": {"model": "leaf", "subagents": ["bottom"], "capabilities": [subagents]},
              "bottom": {"model": "bottom"}}
    binding = lead({"max_depth": root_depth}, pinned=("middle",))
    parent = calls_then_answers(("task", {"description": "go", "subagent_type": "middle"}))
    models = {"parent": parent, **{name: named(name) for name in ("middle", "leaf", "bottom")}}
    await ask(built(binding, models, agents=agents), binding)
    assert ("task" in offered["middle"]) is middle_delegates
    assert ("task" in offered.get("leaf", set())) is leaf_delegates


async def test_a_shared_capability_lands_on_the_delegate_but_subagents_never_does() -> None:
    child, seen = recorder()
    binding = lead({"inline": [RESEARCHER], "share_with_delegates": ["planning", "subagents"]},
                   capabilities=({"id": "planning"},))
    parent = calls_then_answers(("task", {"description": "x", "subagent_type": "researcher"}))
    await ask(built(binding, {"parent": parent, "child": child}), binding)
    tools = {tool.name for tool in seen[0].function_tools}
    assert "write_plan" in tools and "task" not in tools


async def test_an_unshared_specialist_gets_none_of_the_parents_capabilities() -> None:
    child, seen = recorder()
    binding = lead({"inline": [RESEARCHER]}, capabilities=({"id": "planning"},))
    parent = calls_then_answers(("task", {"description": "x", "subagent_type": "researcher"}))
    await ask(built(binding, {"parent": parent, "child": child}), binding)
    assert {tool.name for tool in seen[0].function_tools} == set()


def deployer_setup(executed: list[str], config: Mapping[str, Any] | None = None) -> tuple[Binding, AssembledAgent]:
    binding = lead(config, pinned=("deployer",))
    parent = calls_then_answers(("task", {"description": "deploy web", "subagent_type": "deployer"}))
    deployer = calls_then_answers(("deploy_service", {"service": "web"}))
    agents = {"deployer": {"model": "deployer", "capabilities": ["deploy"]}}
    return binding, built(binding, {"parent": parent, "deployer": deployer}, agents=agents,
                          registry=deploy_registry(executed))


async def test_a_gated_tool_in_a_sync_delegate_parks_the_run_showing_the_delegates_own_call() -> None:
    executed: list[str] = []
    binding, agent = deployer_setup(executed)
    result = await ask(agent, binding)
    assert isinstance(result.output, DeferredToolRequests) and executed == []
    [call] = result.output.approvals
    assert shown_call(call.tool_name, call.args_as_dict(), result.output.metadata[call.tool_call_id]) == \
        ("deploy_service", "deployer: deploy_service", {"service": "web"})


async def test_approving_resumes_the_delegate_where_it_stopped_rather_than_delegating_again() -> None:
    executed: list[str] = []
    binding, agent = deployer_setup(executed)
    parked = await ask(agent, binding)
    [call] = parked.output.approvals
    _, resumed = deployer_setup(executed)
    results = DeferredToolResults(approvals={call.tool_call_id: ToolApproved()},
                                  metadata={call.tool_call_id: parked.output.metadata[call.tool_call_id]})
    result = await ask(resumed, binding, message_history=parked.all_messages(), deferred_tool_results=results)
    assert executed == ["web"]
    assert result.output == "done: done: deployed web"
    assert resumed.delegated.requests == 1  # the delegate's one request after the approval: no second delegation


async def test_a_denied_delegate_call_never_runs() -> None:
    executed: list[str] = []
    binding, agent = deployer_setup(executed)
    parked = await ask(agent, binding)
    [call] = parked.output.approvals
    _, resumed = deployer_setup(executed)
    results = DeferredToolResults(approvals={call.tool_call_id: ToolDenied("Alice denied it.")})
    result = await ask(resumed, binding, message_history=parked.all_messages(), deferred_tool_results=results)
    assert executed == [] and "Alice denied it." in result.output


async def test_a_gated_tool_in_a_background_delegate_is_refused_not_parked() -> None:
    executed: list[str] = []
    binding = lead({"mode": "async"}, pinned=("deployer",))

    def parent(messages: list[ModelMessage], _info: AgentInfo) -> ModelResponse:
        results = returned(messages)
        if not results:
            return ModelResponse(parts=[ToolCallPart("task", {"description": "deploy", "subagent_type": "deployer"})])
        if len(results) == 1:
            task_id = re.search(r"Task ID: (\w+)", str(results[0].content))
            assert task_id is not None
            return ModelResponse(parts=[ToolCallPart("wait_tasks", {"task_ids": [task_id.group(1)]})])
        return ModelResponse(parts=[TextPart(str(results[-1].content))])
    deployer = calls_then_answers(("deploy_service", {"service": "web"}))
    agent = built(binding, {"parent": FunctionModel(parent), "deployer": deployer},
                  agents={"deployer": {"model": "deployer", "capabilities": ["deploy"]}},
                  registry=deploy_registry(executed))
    result = await ask(agent, binding)
    assert executed == []
    assert "COMPLETED" in result.output and "cannot stop to ask one" in result.output
    assert "mode='sync'" in result.output


async def test_the_model_menu_routes_a_delegation_and_refuses_a_key_the_delegate_may_not_use() -> None:
    used: list[str] = []

    def model(name: str) -> FunctionModel:
        return scripted(lambda _m, _i: used.append(name) or f"ran on {name}")
    config = {"models": {"fast": "small", "deep": {"model": "big", "description": "hard problems",
                                                   "effort": "high"}},
              "inline": [{**RESEARCHER, "models": ["fast", "deep"]},
                         {**RESEARCHER, "name": "solo", "models": ["fast"]}]}
    parent = calls_then_answers(("task", {"description": "a", "subagent_type": "researcher"}),
                                ("task", {"description": "b", "subagent_type": "researcher", "model": "deep"}),
                                ("task", {"description": "c", "subagent_type": "solo", "model": "deep"}),
                                answer=lambda results: " | ".join(results))
    binding = lead(config)
    models = {"parent": parent, "child": model("own"), "small": model("small"), "big": model("big")}
    result = await ask(built(binding, models), binding)
    assert used == ["small", "big"]
    assert "'solo' cannot run on model 'deep'; use one of: fast." in result.output.split(" | ")[2]


async def test_max_calls_is_a_ceiling_the_model_reads() -> None:
    binding = lead({"inline": [{**RESEARCHER, "max_calls": 1}]})
    parent = calls_then_answers(("task", {"description": "a", "subagent_type": "researcher"}),
                                ("task", {"description": "b", "subagent_type": "researcher"}),
                                answer=lambda results: results[-1])
    result = await ask(built(binding, {"parent": parent, "child": replies("ok")}), binding)
    assert result.output.startswith("Not started: 'researcher' has already been handed 1 task(s) in this run")


async def test_a_delegate_reaching_its_own_budget_is_a_soft_outcome() -> None:
    binding = lead({"inline": [{**RESEARCHER, "usage_limits": {"request_limit": 1}}]})
    looping = calls_then_answers(("task", {"description": "again", "subagent_type": "nobody"}))
    parent = calls_then_answers(("task", {"description": "a", "subagent_type": "researcher"}))
    result = await ask(built(binding, {"parent": parent, "child": looping}), binding)
    assert "'researcher' stopped before finishing" in result.output and "request_limit of 1" in result.output


async def test_a_delegate_past_its_timeout_is_a_soft_outcome_with_its_on_failure_text() -> None:
    async def slow(_messages: list[ModelMessage], _info: AgentInfo) -> ModelResponse:
        await asyncio.sleep(5)
        return ModelResponse(parts=[TextPart("too late")])
    binding = lead({"inline": [{**RESEARCHER, "timeout_seconds": 0.05, "on_failure": "Researcher timed out; go on."}]})
    parent = calls_then_answers(("task", {"description": "a", "subagent_type": "researcher"}))
    async with asyncio.timeout(3):
        result = await ask(built(binding, {"parent": parent, "child": FunctionModel(slow)}), binding)
    assert result.output == "done: Researcher timed out; go on."


async def test_a_crashing_delegate_is_a_retry_prompt_unless_contain_errors_is_off() -> None:
    def crash(_messages: list[ModelMessage], _info: AgentInfo) -> ModelResponse:
        raise RuntimeError("disk on fire")
    parent = calls_then_answers(("task", {"description": "a", "subagent_type": "researcher"}),
                                answer=lambda results: results[-1])
    contained = lead({"inline": [RESEARCHER]})
    result = await ask(built(contained, {"parent": parent, "child": FunctionModel(crash)}), contained)
    assert "'researcher' crashed: RuntimeError: disk on fire" in result.output
    loud = lead({"inline": [{**RESEARCHER, "contain_errors": False}]})
    with pytest.raises(RuntimeError, match="disk on fire"):
        await ask(built(loud, {"parent": parent, "child": FunctionModel(crash)}), loud)


async def test_agent_files_become_delegates_with_their_body_as_instructions(tmp_path: Path) -> None:
    (tmp_path / "reviewer.md").write_text("---\nname: reviewer\ndescription: Reviews a diff\nmodel: ignored\n---\n"
                                          "You review diffs strictly.\n")
    child, seen = recorder()
    config = {"agent_folders": [str(tmp_path)], "agent_overrides": {"reviewer": {"model": "child"}}}
    binding = lead(config)
    parent = calls_then_answers(("task", {"description": "review", "subagent_type": "reviewer"}))
    result = await ask(built(binding, {"parent": parent, "child": child}), binding)
    assert result.output.startswith("done: noted")
    assert "You review diffs strictly." in (seen[0].instructions or "")


async def test_an_agent_file_runs_on_the_delegating_agents_model_by_default(tmp_path: Path) -> None:
    (tmp_path / "helper.md").write_text("Answer briefly.\n")
    binding = lead({"agent_folders": [str(tmp_path)]})

    def parent(messages: list[ModelMessage], _info: AgentInfo) -> ModelResponse:
        if task_of(messages) == "inner":
            return ModelResponse(parts=[TextPart("inner answer")])
        if not returned(messages):
            return ModelResponse(parts=[ToolCallPart("task", {"description": "inner", "subagent_type": "helper"})])
        return ModelResponse(parts=[TextPart(str(returned(messages)[0].content))])
    result = await ask(built(binding, {"parent": FunctionModel(parent)}), binding)
    assert result.output.startswith("inner answer")


async def test_a_model_written_specialist_runs_only_on_a_configured_model() -> None:
    binding = lead({"allow_dynamic": True})
    create = {"name": "poet", "description": "Writes verse.", "instructions": "Write verse.", "mode": "sync"}
    parent = calls_then_answers(("create_agent", {**create, "model": "openai:gpt-5"}),
                                ("create_agent", {**create, "model": "child"}),
                                ("task", {"description": "a haiku", "subagent_type": "poet"}),
                                ("delegate", {"description": "a limerick", "instructions": "Rhyme.", "name": "rhymer",
                                              "model": "child", "mode": "sync"}),
                                answer=lambda results: " | ".join(results))
    agent = built(binding, {"parent": parent, "child": replies("verse")})
    refused, created, haiku, limerick = (await ask(agent, binding)).output.split(" | ")
    assert refused.startswith("Error: 'openai:gpt-5' is not a model this organization has a profile for; use one of:")
    assert created.startswith("Agent 'poet' created successfully.")
    assert haiku.startswith("verse: a haiku") and limerick.startswith("verse: a limerick")
    assert agent.delegated.requests == 2


async def test_without_any_delegate_the_capability_is_not_attached() -> None:
    parent, seen = recorder()
    binding = lead({})
    await ask(built(binding, {"parent": parent}), binding)
    assert seen[0].function_tools == [] and "Delegation" not in (seen[0].instructions or "")


async def test_in_a_chat_a_delegates_gated_call_is_shown_approved_and_run_and_its_usage_is_booked(
        telegram: FakeTelegram, database_url: str) -> None:
    from sqlalchemy import select

    from storage.db import Database
    from storage.models import RunRow

    executed: list[str] = []
    bot = TelegramBot().register(telegram)
    alice = telegram.add_user(1001, "Alice")
    chat = telegram.private_chat(alice)
    parent = calls_then_answers(("task", {"description": "deploy web", "subagent_type": "deployer"}))
    deployer = calls_then_answers(("deploy_service", {"service": "web"}))
    async with running_gateway(telegram, [bot], database_url=database_url, redis_url=None, model=parent,
                               registry=deploy_registry(executed), capabilities=[{"id": "subagents"}],
                               agent={"subagents": ["deployer"]},
                               agents=[{"name": "deployer", "model": "function:deployer", "capabilities": ["deploy"]}],
                               models={"function:deployer": deployer}):
        await telegram.user_says(bot.token, chat, alice, "ship web")
        await telegram.wait_for(lambda: len(cards(telegram, chat["id"])) == 1)
        [card] = cards(telegram, chat["id"])
        assert "deploy_service" in card["text"] and "web" in card["text"] and executed == []
        await telegram.user_clicks(bot.token, card, alice, buttons(card)["✅ Approve"])
        await telegram.wait_for(lambda: texts(telegram, chat["id"])[-1] == "done: done: deployed web")
    assert executed == ["web"]
    db = Database(database_url)
    try:
        async with db.session() as session:
            [requests] = (await session.execute(select(RunRow.requests))).scalars()
    finally:
        await db.close()
    assert requests == 4  # the parent's two requests and the delegate's two, one on each side of the approval


def questioning_setup(config: Mapping[str, Any], ask_user: Any) -> tuple[Binding, Any, list[AgentInfo]]:
    seen: list[AgentInfo] = []

    def child(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        seen.append(info)
        if "ask_parent" in {tool.name for tool in info.function_tools} and not returned(messages):
            return ModelResponse(parts=[ToolCallPart("ask_parent", {"question": "Which region?"})])
        answers = returned(messages)
        return ModelResponse(parts=[TextPart(f"answer: {answers[0].content if answers else '-'}")])
    binding = lead(config)
    parent = calls_then_answers(("task", {"description": "deploy", "subagent_type": "researcher", "mode": "sync"}))
    resolver = ModelResolver({}, SecretSource(environ={}), fixed={"parent": parent, "child": FunctionModel(child)})
    agent = assemble(binding, registry=default_registry(), models=resolver, run=run_facts(binding), ask_user=ask_user)
    return binding, agent.agent, seen


async def test_a_sync_delegate_may_ask_the_person_when_the_author_allows_it() -> None:
    asked: list[str] = []

    async def person(question: str) -> str:
        asked.append(question)
        return "eu-west"
    binding, agent, _ = questioning_setup({"allow_questions": True, "inline": [RESEARCHER]}, person)
    result = await agent.run("go", deps=deps_for(binding))
    assert asked == ["Which region?"] and result.output.startswith("done: answer: eu-west")


@pytest.mark.parametrize("config", [pytest.param({"inline": [RESEARCHER]}, id="not-allowed"),
                                    pytest.param({"allow_questions": True, "inline": [{**RESEARCHER, "mode": "auto"}]},
                                                 id="auto-may-turn-background")])
async def test_a_delegate_gets_no_ask_parent_unless_it_is_allowed_and_synchronous(config: dict[str, Any]) -> None:
    async def person(_question: str) -> str:
        raise AssertionError("nobody should be asked")
    binding, agent, seen = questioning_setup(config, person)
    await agent.run("go", deps=deps_for(binding))
    assert seen and all("ask_parent" not in {tool.name for tool in info.function_tools} for info in seen)


def hanging_registry(started: list[str]) -> Registry:
    """The default registry plus `slow`, whose `wait_forever` never returns (a tool that hangs)."""
    from pydantic_ai import FunctionToolset
    from pydantic_ai.capabilities import Capability

    from capabilities.registry import CapabilityDef, ToolInfo
    from capabilities.run import BuildContext

    def build(_context: BuildContext[Any]) -> Capability:
        toolset = FunctionToolset(id="slow")

        @toolset.tool_plain
        async def wait_forever() -> str:
            """Waits for something that never comes."""
            started.append("wait_forever")
            await asyncio.Event().wait()
            return "never"

        return Capability(toolsets=[toolset])

    slow = CapabilityDef(id="slow", name="Slow", category="utility", description="Hangs.", build=build,
                         tools=(ToolInfo(id="wait_forever", summary="Hangs."),))
    return default_registry().with_extra(slow)


@pytest.mark.parametrize(("controls", "expected"), [
    pytest.param({"on_failure": "The worker timed out; go on."}, "The worker timed out; go on.", id="on-failure"),
    pytest.param({}, "'worker' timed out: it ran past its limit of 0.1 s before finishing.", id="soft-sentence")])
async def test_a_tool_that_hangs_inside_a_delegate_is_cut_off_at_its_timeout(controls: dict[str, Any],
                                                                              expected: str) -> None:
    started: list[str] = []
    binding = lead({"delegates": {"worker": {"timeout_seconds": 0.1, **controls}}}, pinned=("worker",))
    parent = calls_then_answers(("task", {"description": "wait", "subagent_type": "worker"}))
    worker = calls_then_answers(("wait_forever", {}))
    agent = built(binding, {"parent": parent, "worker": worker}, registry=hanging_registry(started),
                  agents={"worker": {"model": "worker", "capabilities": ["slow"]}})
    async with asyncio.timeout(5):
        result = await ask(agent, binding)
    assert started == ["wait_forever"]
    assert result.output.startswith(f"done: {expected}")


async def test_a_background_delegate_past_its_timeout_reports_a_timeout_not_a_budget() -> None:
    started: list[str] = []
    binding = lead({"mode": "async", "delegates": {"worker": {"timeout_seconds": 0.1}}}, pinned=("worker",))

    def parent(messages: list[ModelMessage], _info: AgentInfo) -> ModelResponse:
        results = returned(messages)
        if not results:
            return ModelResponse(parts=[ToolCallPart("task", {"description": "wait", "subagent_type": "worker"})])
        if len(results) == 1:
            task_id = re.search(r"Task ID: (\w+)", str(results[0].content))
            assert task_id is not None
            return ModelResponse(parts=[ToolCallPart("wait_tasks", {"task_ids": [task_id.group(1)],
                                                                   "timeout": 5})])
        return ModelResponse(parts=[TextPart(str(results[-1].content))])
    worker = calls_then_answers(("wait_forever", {}))
    agent = built(binding, {"parent": FunctionModel(parent), "worker": worker}, registry=hanging_registry(started),
                  agents={"worker": {"model": "worker", "capabilities": ["slow"]}})
    async with asyncio.timeout(5):
        result = await ask(agent, binding)
    assert started == ["wait_forever"]
    assert "FAILED" in result.output and "'worker' timed out: it ran past its limit of 0.1 s" in result.output
    assert "usage limit exceeded" not in result.output


POET = {"name": "poet", "description": "Writes verse.", "instructions": "Write verse.", "model": "child",
        "mode": "sync"}


async def test_carried_specialists_are_registered_again_under_create_agents_rules() -> None:
    from capabilities.subagents.config import MAX_DYNAMIC_SPECIALISTS

    carried = [POET, {**POET, "name": "stranger", "model": "openai:gpt-5"},
               *({**POET, "name": f"extra-{n}"} for n in range(MAX_DYNAMIC_SPECIALISTS))]
    binding = lead({"allow_dynamic": True})
    parent = calls_then_answers(("task", {"description": "a haiku", "subagent_type": "poet"}),
                                ("task", {"description": "a sonnet", "subagent_type": "stranger"}),
                                answer=lambda results: " | ".join(results))
    resolver = ModelResolver({}, SecretSource(environ={}), fixed={"parent": parent, "child": replies("verse")})
    agent = assemble(binding, registry=default_registry(), models=resolver, run=run_facts(binding),
                     specialists=carried)
    haiku, stranger = (await ask(agent, binding)).output.split(" | ")
    assert haiku.startswith("verse: a haiku")
    assert "There is no delegate 'stranger'" in stranger
    assert list(agent.specialists) == ["poet", *(f"extra-{n}" for n in range(MAX_DYNAMIC_SPECIALISTS - 1))]


async def test_a_model_written_specialist_survives_a_park_resumed_by_another_gateway(
        telegram: FakeTelegram, database_url: str) -> None:
    executed: list[str] = []
    bot = TelegramBot().register(telegram)
    alice = telegram.add_user(1001, "Alice")
    chat = telegram.private_chat(alice)
    create = {**POET, "model": "function:child"}
    options: dict[str, Any] = {"registry": deploy_registry(executed), "database_url": database_url, "redis_url": None,
                               "capabilities": [{"id": "subagents", "config": {"allow_dynamic": True}},
                                                {"id": "deploy"}]}

    def parent() -> FunctionModel:  # a fresh model per gateway: nothing is remembered but the parked run
        return calls_then_answers(("create_agent", create), ("deploy_service", {"service": "web"}),
                                  ("task", {"description": "a haiku", "subagent_type": "poet"}),
                                  answer=lambda results: results[-1].split("\n")[0])
    async with running_gateway(telegram, [bot], model=parent(), models={"function:child": replies("verse")},
                               **options):
        await telegram.user_says(bot.token, chat, alice, "ship web, then a poem")
        await telegram.wait_for(lambda: len(cards(telegram, chat["id"])) == 1)
    [card] = cards(telegram, chat["id"])
    assert "deploy_service" in card["text"] and executed == []
    async with running_gateway(telegram, [bot], model=parent(), models={"function:child": replies("verse")},
                               **options):
        await telegram.user_clicks(bot.token, card, alice, buttons(card)["✅ Approve"])
        await telegram.wait_for(lambda: texts(telegram, chat["id"])[-1] == "verse: a haiku")
    assert executed == ["web"]
