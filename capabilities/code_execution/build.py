"""The tools and builder of `code_execution`, imported with its first build; its declaration (config, tools,
scopes) is `capabilities/code_execution/__init__.py`."""

from __future__ import annotations

import reprlib
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic_ai import RunContext
from pydantic_ai.capabilities import Capability
from pydantic_monty import (
    AsyncMonty,
    MontyCrashedError,
    MontyError,
    MontyRuntimeError,
    MontySyntaxError,
    ResourceLimits,
)

from capabilities.code_execution import CodeExecutionConfig
from capabilities.run import BuildContext
from capabilities.run.tool_replies import function_toolset, retry_or_text

OUTPUT_LIMIT = 8_000
"""Characters of output the model gets back; a tool return persists in the history of every later request."""
WORKER_GRACE = 5.0
"""Seconds past `timeout_secs` after which the pool kills a worker that did not stop itself."""


def _bounded_repr() -> reprlib.Repr:
    """Renders the program's last value bounded by construction, however large the value is (Python 3.11's
    `Repr` takes no arguments)."""
    shown = reprlib.Repr()
    shown.maxlevel, shown.maxlist, shown.maxtuple, shown.maxdict, shown.maxset = 6, 200, 200, 100, 100
    shown.maxstring = shown.maxother = OUTPUT_LIMIT
    shown.maxlong = 400
    return shown


_RESULT = _bounded_repr()
NO_ACCESS = ("The sandbox refused this: {error}. run_python has no filesystem, no network, no environment and no "
             "modules beyond Python's core ones (json, re, math, datetime, …; no numpy, pandas, os.system, "
             "subprocess or socket). Put the data into the program itself, or answer without running code.")
TIMED_OUT = ("The program was stopped after {limit:g} s, this agent's time limit (timeout_secs), before it "
             "finished; nothing it computed is kept. Make it do less work (smaller inputs, fewer iterations), or "
             "tell the person the computation is too large to run here.")
OUT_OF_MEMORY = ("The program was stopped for using more than {limit:,} MB, this agent's memory limit "
                 "(max_memory_mb); nothing it computed is kept. Make it hold less at once (generators, smaller "
                 "inputs), or tell the person the computation is too large to run here.")
CRASHED = ("The sandbox stopped while running the program ({error}); nothing it computed is kept. Try a simpler "
           "program once, and otherwise tell the person code cannot be run right now.")
RAISED = ("The program failed with {kind}; fix the code and call run_python again with the whole corrected "
          "program (nothing from this attempt is kept):\n{traceback}")
NO_OUTPUT = "The program ran and printed nothing, and its last line has no value. Print what you want to see."


@dataclass
class CappedOutput:
    """What a program prints, kept up to `limit` characters and counted beyond them."""

    limit: int = OUTPUT_LIMIT
    kept: list[str] = field(default_factory=list[str])
    size: int = 0
    """Characters printed in all, kept or not."""

    def __call__(self, _stream: Literal["stdout", "stderr"], text: str) -> None:
        room = self.limit - min(self.size, self.limit)
        if room:
            self.kept.append(text[:room])
        self.size += len(text)

    @property
    def text(self) -> str:
        return "".join(self.kept)


@dataclass(frozen=True, slots=True, kw_only=True)
class Program:
    """How one call ended: what it printed and its last value, or why it stopped."""

    output: CappedOutput
    value: Any = None
    error: MontyError | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Sandbox:
    """Runs one program in a fresh Monty worker with these limits."""

    timeout_secs: float
    max_memory_mb: int

    async def run(self, code: str) -> Program:
        output = CappedOutput()
        limits: ResourceLimits = {"max_feed_duration_secs": self.timeout_secs, "max_memory": self.max_memory_mb * 2**20}
        try:
            async with AsyncMonty(min_processes=1, max_processes=1,
                                  request_timeout=self.timeout_secs + WORKER_GRACE) as pool, \
                    pool.checkout(limits=limits, os_policy={"sleep": "zero"}) as session:
                # `sleep: zero`: a sleep would wait outside the time limit, which counts only computing
                value = await session.feed_run(code, print_callback=output)
        except MontyError as error:
            return Program(output=output, error=error)
        return Program(output=output, value=value)


@dataclass(frozen=True, slots=True, kw_only=True)
class PythonTools:
    sandbox: Sandbox

    async def run_python(self, ctx: RunContext[Any], code: str) -> str:
        """Run a short Python program in a sandbox to compute something exactly: arithmetic, dates, statistics
        you write out, parsing or reshaping text and numbers you already have.

        Use it instead of working numbers out in your head. The sandbox is a restricted Python (Monty): the
        language and core modules such as json, re, math, datetime and collections, but no third-party packages
        (no numpy or pandas), no files, no network and nothing kept between calls, so each program must contain
        its own data. To draw the numbers, pass them to a chart tool afterwards.

        Args:
            code: A complete Python program. `print()` what you want to see; the value of a last bare expression
                is shown too. It runs for at most this agent's time limit, 10 seconds unless configured.

        Returns:
            What the program printed, then a line starting `Result` with the value of a last expression that
            has one; output past 8,000 characters is cut with a note saying how much was left out. A program
            that ran out of time or memory, or reached for a file or a module the sandbox lacks, comes back as a
            line saying so.
        """
        program = await self.sandbox.run(code)
        if program.error is not None:
            return _failure(ctx, program.error, self.sandbox)
        return _shown(program)


def _failure(ctx: RunContext[Any], error: MontyError, sandbox: Sandbox) -> str:
    """The model's own mistake is a retry with the traceback; a limit or a refusal is text."""
    if isinstance(error, MontyCrashedError):
        if error.timed_out:
            return TIMED_OUT.format(limit=sandbox.timeout_secs)
        return CRASHED.format(error=str(error) or "its worker exited")
    if isinstance(error, MontySyntaxError):
        return retry_or_text(ctx, RAISED.format(kind="a syntax error", traceback=error.display()))
    if not isinstance(error, MontyRuntimeError):
        return CRASHED.format(error=str(error))
    raised = error.exception()
    if isinstance(raised, TimeoutError):
        return TIMED_OUT.format(limit=sandbox.timeout_secs)
    if isinstance(raised, MemoryError):
        return OUT_OF_MEMORY.format(limit=sandbox.max_memory_mb)
    if isinstance(raised, ImportError | OSError):
        return NO_ACCESS.format(error=error.display("type-msg"))
    return retry_or_text(ctx, RAISED.format(kind=type(raised).__name__, traceback=error.display()))


def _shown(program: Program) -> str:
    output = program.output
    parts = [output.text.rstrip("\n")] if output.text.strip() else []
    if output.size > output.limit:
        parts.append(f"…(output truncated: the first {output.limit:,} of {output.size:,} characters are shown)")
    if program.value is not None:
        parts.append(f"Result: {_RESULT.repr(program.value)}")
    return "\n".join(parts) or NO_OUTPUT


def build(context: BuildContext[CodeExecutionConfig]) -> Capability[Any]:
    config = context.config
    tools = PythonTools(sandbox=Sandbox(timeout_secs=config.timeout_secs, max_memory_mb=config.max_memory_mb))
    return Capability(toolsets=[function_toolset([tools.run_python], toolset_id="code_execution")])
