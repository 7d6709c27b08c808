"""`run_python`: programs run in Monty with the agent's limits; escapes are refused; mistakes come back as retries."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

import pytest
from pydantic_ai import ModelMessage
from pydantic_ai.messages import ModelRequest, ToolReturnPart
from pydantic_ai.models.function import FunctionModel

from capabilities import default_registry
from capabilities.code_execution.build import OUTPUT_LIMIT, Sandbox
from tests.support.capability_runs import CASES, assembled, binding_with, offered_tool_defs, run
from tests.support.fakes.telegram import FakeTelegram
from tests.support.harness import TelegramBot, ask, running_gateway
from tests.support.scripted import calls_then_answers, stepped


def returned(messages: list[ModelMessage]) -> list[ToolReturnPart]:
    return [p for m in messages if isinstance(m, ModelRequest) for p in m.parts if isinstance(p, ToolReturnPart)]


def retried(part: ToolReturnPart) -> bool:
    """A retry prompt: pydantic-ai sends it back as a tool return whose outcome is `retried`."""
    return part.outcome == "retried"


def calls_until_answered(code: str) -> FunctionModel:
    """Sends `code` to run_python, again after each retry, and answers once a call returned."""

    def step(messages: list[ModelMessage]) -> tuple[str, dict[str, object], str] | str:
        parts = returned(messages)
        if parts and not retried(parts[-1]):
            return "done"
        return "run_python", {"code": code}, f"call-{len(parts)}"
    return stepped(step)


async def run_python(code: str, **config: Any) -> list[ToolReturnPart]:
    """What a real assembled run got back from `run_python(code)`: retries, then the last attempt's return."""
    binding = binding_with([{"id": "code_execution", "config": config}])
    result = await run(assembled(binding, calls_until_answered(code)), "compute", binding=binding)
    return returned(result.all_messages())


async def answer_of(code: str, **config: Any) -> str:
    [part] = await run_python(code, **config)
    assert not retried(part), part
    return str(part.content)


async def test_a_program_prints_and_its_last_value_is_shown() -> None:
    answer = await answer_of("import json, math\nrows = [i * i for i in range(5)]\nprint(sum(rows))\n"
                             "json.dumps({'root': math.sqrt(16)})")
    assert answer == "30\nResult: '{\"root\": 4.0}'"


async def test_a_program_with_nothing_to_show_says_so_rather_than_returning_nothing() -> None:
    assert "printed nothing" in await answer_of("x = 1")


@dataclass(frozen=True, slots=True, kw_only=True)
class Escape:
    id: str
    code: str
    said: str
    """What the refusal names (Monty's own error)."""


ESCAPES = (
    Escape(id="open-a-host-file", code="open('/etc/passwd').read()", said="PermissionError"),
    Escape(id="list-the-root", code="import os\nos.listdir('/')", said="PermissionError"),
    Escape(id="pathlib-read", code="from pathlib import Path\nPath('/etc/hostname').read_text()",
           said="PermissionError"),
    Escape(id="write-a-file", code="open('/tmp/escaped', 'w').write('x')", said="PermissionError"),
    Escape(id="import-socket", code="import socket\nsocket.create_connection(('127.0.0.1', 80))",
           said="ModuleNotFoundError"),
    Escape(id="import-subprocess", code="import subprocess\nsubprocess.run(['id'])", said="ModuleNotFoundError"),
    Escape(id="import-urllib", code="import urllib.request", said="ModuleNotFoundError"),
)


@pytest.mark.parametrize("escape", [pytest.param(e, id=e.id) for e in ESCAPES])
async def test_reaching_outside_the_sandbox_is_refused_as_text(escape: Escape) -> None:
    answer = await answer_of(escape.code)
    assert answer.startswith("The sandbox refused this") and escape.said in answer


async def test_a_write_never_reaches_the_host_filesystem(tmp_path: Any) -> None:
    target = tmp_path / "escaped.txt"
    await answer_of(f"open({str(target)!r}, 'w').write('x')")
    assert not target.exists()


@pytest.mark.parametrize("code", ["import os\nos.system('id')", "import os\nos.environ['HOME']",
                                  "__import__('os')", "import sys\nsys.modules['os']"])
async def test_the_interpreters_own_ways_out_do_not_exist(code: str) -> None:
    """No shell, no environment, no `__import__`, no module table: each is an error in the program."""
    parts = await run_python(code)
    assert retried(parts[0]) and "The program failed with" in str(parts[0].content)


async def test_an_endless_loop_is_stopped_at_the_agents_time_limit_and_told_as_text() -> None:
    answer = await answer_of("while True:\n    pass", timeout_secs=0.3)
    assert answer.startswith("The program was stopped after 0.3 s") and "timeout_secs" in answer


async def test_a_sleep_does_not_hold_the_sandbox_past_its_limit() -> None:
    """Sleeps would wait outside the computing clock; they return at once, so the program finishes."""
    assert await answer_of("import time\nfor _ in range(1000):\n    time.sleep(60)\n'awake'",
                           timeout_secs=1) == "Result: 'awake'"


@pytest.mark.parametrize("code", ["x = [0] * 10**9", "s = 'a' * (10**8)", "d = {i: i for i in range(10**8)}"])
async def test_a_huge_allocation_is_stopped_at_the_agents_memory_limit_and_told_as_text(code: str) -> None:
    answer = await answer_of(code, max_memory_mb=16, timeout_secs=5)
    assert answer.startswith("The program was stopped for using more than 16 MB") and "max_memory_mb" in answer


async def test_the_memory_limit_is_the_agents_own() -> None:
    """64 MB of list fits in 256 MB (the default) and not in 32 MB."""
    code = "x = [0] * (8 * 2**20)\nlen(x)"
    assert await answer_of(code) == f"Result: {8 * 2**20}"
    assert "more than 32 MB" in await answer_of(code, max_memory_mb=32)


@pytest.mark.parametrize(("code", "kind"), [("def f(:\n    pass", "a syntax error"),
                                            ("print(undefined_total)", "NameError"),
                                            ("1 + 'a'", "TypeError"),
                                            ("{}['missing']", "KeyError")])
async def test_the_models_own_mistake_is_a_retry_with_the_traceback_then_text(code: str, kind: str) -> None:
    retry, last = await run_python(code)
    assert retried(retry) and f"The program failed with {kind}" in str(retry.content)
    assert "Traceback" in str(retry.content) or kind == "a syntax error"
    assert not retried(last) and f"The program failed with {kind}" in str(last.content)


async def test_a_corrected_program_after_a_retry_gets_its_answer() -> None:
    attempts = iter(["print(totl)", "total = 41 + 1\nprint(total)"])

    def step(messages: list[ModelMessage]) -> tuple[str, dict[str, object], str] | str:
        parts = returned(messages)
        if parts and not retried(parts[-1]):
            return f"The answer is {parts[-1].content}"
        return "run_python", {"code": next(attempts)}, f"call-{len(parts)}"

    binding = binding_with([{"id": "code_execution"}])
    result = await run(assembled(binding, stepped(step)), "add", binding=binding)
    assert result.output == "The answer is 42"


async def test_long_output_is_cut_with_a_note_of_what_was_left_out() -> None:
    answer = await answer_of("for i in range(2000):\n    print('line', i, 'x' * 20)")
    kept, note = answer.rsplit("\n", 1)
    assert len(kept) <= OUTPUT_LIMIT and kept.startswith("line 0 ")
    assert note.startswith(f"…(output truncated: the first {OUTPUT_LIMIT:,} of") and "characters are shown" in note


async def test_a_huge_last_value_is_shown_abbreviated() -> None:
    answer = await answer_of("list(range(10**6))")
    assert answer.startswith("Result: [0, 1, 2") and answer.endswith("...]") and len(answer) < OUTPUT_LIMIT


async def test_nothing_survives_from_one_call_to_the_next() -> None:
    sandbox = Sandbox(timeout_secs=5, max_memory_mb=64)
    assert (await sandbox.run("secret = 41")).error is None
    later = await sandbox.run("secret + 1")
    assert later.error is not None and "NameError" in str(later.error)


async def test_a_running_program_never_blocks_the_event_loop() -> None:
    """While the sandbox spins to its limit, other coroutines keep running: the loop is free."""
    ticks = 0
    finished = asyncio.Event()

    async def tick() -> None:
        nonlocal ticks
        while not finished.is_set():
            ticks += 1
            await asyncio.sleep(0)

    ticker = asyncio.create_task(tick())
    program = await Sandbox(timeout_secs=0.3, max_memory_mb=64).run("while True:\n    pass")
    finished.set()
    await ticker
    assert isinstance(program.error, Exception) and ticks > 100


def test_the_limits_are_bounded_per_agent() -> None:
    registry = default_registry()
    definition = registry.get("code_execution")
    assert definition is not None and definition.scopes == frozenset({"code:execute"})
    for config, field in [({"timeout_secs": 0}, "timeout_secs"), ({"timeout_secs": 121}, "timeout_secs"),
                          ({"max_memory_mb": 15}, "max_memory_mb"), ({"max_memory_mb": 4097}, "max_memory_mb")]:
        entry = binding_with([{"id": "code_execution", "config": config}]).agent.spec.capabilities[0]
        [problem] = registry.validate_entry(entry, path="agents[0].capabilities[0]")
        assert problem.startswith(f"agents[0].capabilities[0].config.{field}:")
    entry = binding_with([{"id": "code_execution", "config": {"timeout_secs": 120, "max_memory_mb": 4096}}])
    assert registry.validate_entry(entry.agent.spec.capabilities[0], path="a") == []


def test_an_agent_without_the_scope_is_refused() -> None:
    registry = default_registry(granted_scopes=frozenset())
    entry = binding_with([{"id": "code_execution"}]).agent.spec.capabilities[0]
    [problem] = registry.validate_entry(entry, path="agents[0].capabilities[0]")
    assert "code:execute" in problem


async def test_a_chat_turn_computes_with_run_python(telegram: FakeTelegram, database_url: str) -> None:
    bot = TelegramBot().register(telegram)
    alice = telegram.add_user(1001, "Alice")
    chat = telegram.private_chat(alice)
    model = calls_then_answers(("run_python", {"code": "print(sum(range(1, 101)))"}),
                               answer=lambda results: f"The sum is {results[-1]}.")
    async with running_gateway(telegram, [bot], database_url=database_url, redis_url=None, model=model,
                               capabilities=[{"id": "code_execution", "config": {"timeout_secs": 5}}]):
        answer = await ask(telegram, bot, chat, alice, "what is 1 + 2 + ... + 100?")
    assert answer == "The sum is 5050."


async def test_the_tool_text_describes_the_return_whole() -> None:
    """A colon early in `Returns:` would make the docstring parser read a return type out of the prose."""
    case = next(c for c in CASES if c.capability == "code_execution")
    [tool] = (await offered_tool_defs(case)).values()
    assert "<returns>\n<description>What the program printed" in (tool.description or "")
