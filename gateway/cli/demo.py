"""`gateway demo`: the real pipeline, offline — a platform's local server, SQLite, and a scripted model."""

from __future__ import annotations

import asyncio
import tempfile
from collections.abc import AsyncIterator, Callable, Sequence
from pathlib import Path
from typing import Any

import httpx
from prometheus_client.parser import text_string_to_metric_families
from pydantic_ai import (
    FunctionToolset,
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.capabilities import Capability
from pydantic_ai.models.function import AgentInfo, DeltaToolCall, DeltaToolCalls, FunctionModel
from sqlalchemy import Connection, func, select

from capabilities import default_registry
from capabilities.registry import CapabilityDef, ToolInfo
from capabilities.run import BuildContext
from gateway.agents.models import ModelResolver
from gateway.cli.stages import PLACEHOLDER, DemoPlatform, Line, Room, Stage, StageSetup, build_stage
from gateway.config.schema import GatewayConfig, Settings
from gateway.config.secrets import SecretSource
from gateway.server.app import Gateway, Tuning
from storage.db import Database
from storage.tables import CONVERSATIONS, INBOX, MESSAGES, RUNS

DEMO_TUNING = Tuning(poll_timeout=1, idle_poll=0.2, shutdown_grace=2.0, transport_first_delay=0.5)


def demo_model() -> FunctionModel:
    """A scripted stand-in for an LLM: it reads the conversation it was given and says what it sees."""

    def decide(messages: list[ModelMessage]) -> str | ToolCallPart:
        prompts = [str(p.content) for m in messages if isinstance(m, ModelRequest)
                   for p in m.parts if isinstance(p, UserPromptPart)]
        returned = [p for p in messages[-1].parts if isinstance(p, ToolReturnPart)] \
            if isinstance(messages[-1], ModelRequest) else []
        if returned:
            return f"Done — the tool said: _{returned[0].content}_"
        if "restart" in prompts[-1].lower():
            return ToolCallPart("restart_service", {"service": "website"}, tool_call_id="demo-restart")
        earlier = len([m for m in messages if isinstance(m, ModelResponse)])
        if earlier == 0:
            return (f"Hello! I'm a **scripted** model standing in for a real one. You said: _{prompts[-1]}_\n\n"
                    "Connect a real model in `gateway.yaml` and I will answer properly.")
        return f"This conversation has {earlier} earlier answer(s). Your first message was: _{prompts[0]}_"

    async def stream(messages: list[ModelMessage], info: AgentInfo) -> AsyncIterator[str | DeltaToolCalls]:
        decision = decide(messages)
        if isinstance(decision, ToolCallPart):
            yield {0: DeltaToolCall(name=decision.tool_name, json_args=decision.args_as_json_str(),
                                    tool_call_id=decision.tool_call_id)}
            return
        for start in range(0, len(decision), 12):
            yield decision[start:start + 12]

    def complete(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        decision = decide(messages)
        return ModelResponse(parts=[decision if isinstance(decision, ToolCallPart) else TextPart(decision)])

    return FunctionModel(complete, stream_function=stream)


def demo_capability() -> CapabilityDef:
    """A side-effecting tool for the demo; touches nothing, but needs an approval like any real one."""

    def build(_context: BuildContext) -> Capability[Any]:
        toolset: FunctionToolset[Any] = FunctionToolset(id="demo_ops")

        @toolset.tool_plain
        def restart_service(service: str) -> str:
            """Restart one of the team's services (demo: nothing is touched).

            Args:
                service: The service's name, e.g. `website`.

            Returns:
                One line saying what was restarted.
            """
            return f"{service} restarted (demo: nothing was touched)"

        return Capability(toolsets=[toolset])

    return CapabilityDef(id="demo_ops", name="Demo operations", category="utility", build=build,
                         description="A pretend service restart, to show approval buttons.",
                         tools=(ToolInfo(id="restart_service", summary="Restart a service.", side_effecting=True),))


def demo_config(setup: StageSetup) -> GatewayConfig:
    return GatewayConfig.model_validate({
        "agents": [{"name": "helper", "model": "demo:scripted", "capabilities": ["clock", "demo_ops"],
                    "instructions": "You are Helper, a concise assistant for a small team."}],
        "bots": [{"name": "demo", "agent": "helper", **setup.bot_spec}],
        "server": setup.server_spec,
    })


async def run_demo(say: Callable[[str], None], platforms: Sequence[DemoPlatform] = ("telegram",)) -> None:
    """The same scripted conversation on each platform's local server, one after the other."""
    for platform in platforms:
        with tempfile.TemporaryDirectory(prefix="gateway-demo-") as workdir:
            database_url = f"sqlite+aiosqlite:///{Path(workdir) / 'gateway.db'}"
            stage = build_stage(platform)
            async with stage.start() as setup:
                await _converse(stage, setup, database_url, say)
            await _report(database_url, say)


async def _converse(stage: Stage, setup: StageSetup, database_url: str, say: Callable[[str], None]) -> None:
    secrets = SecretSource(environ=setup.secrets)
    config = demo_config(setup)
    models = ModelResolver(config.models, secrets, fixed={"demo:scripted": demo_model()})
    settings = Settings(database_url=database_url, redis_url=None)
    say(f"Local {setup.platform.title()} server at {setup.url}; gateway on SQLite, in-process cache, scripted model.\n")
    registry = default_registry().with_extra(demo_capability())
    async with Gateway(config, settings, secrets=secrets, models=models, registry=registry,
                       tuning=DEMO_TUNING) as gateway:
        await stage.wait_for(stage.ready, timeout=15)
        say(f"Gateway at {gateway.url}: GET /metrics and /readyz answer while the demo runs.\n")
        await stage.says("dm", "alice", "Hi! What can you do?")
        await stage.wait_for(_answered(stage, "dm", 1), timeout=15)
        await stage.says("dm", "alice", "What did I ask first?")
        await stage.wait_for(_answered(stage, "dm", 2), timeout=15)
        await stage.says("dm", "alice", "Please restart the website.")
        await stage.wait_for(lambda: stage.transcript("dm").card_buttons is not None, timeout=15)
        buttons = stage.transcript("dm").card_buttons or ()
        say(f"The agent wants to run a gated tool; the card offers {' / '.join(buttons)}. "
            "Alice taps Approve.\n")
        await stage.approve("dm", "alice")
        await stage.wait_for(lambda: any("Done —" in text for text in stage.transcript("dm").answers), timeout=15)
        await stage.says("team", "bob", "Lunch at noon, anyone?")
        await stage.says("team", "alice", f"{setup.mention} can you summarize our plan?")
        await stage.wait_for(_answered(stage, "team", 1), timeout=15)
        if gateway.db is not None:
            await _settled(gateway.db)
        async with httpx.AsyncClient() as client:
            metrics = (await client.get(f"{gateway.url}/metrics")).text
    _print_chat(say, "Direct message: Alice and the bot", stage.transcript("dm").lines)
    _print_chat(say, "Group 'Team' (the bot answers only when mentioned)", stage.transcript("team").lines)
    _print_metrics(say, gateway.url, metrics)


async def _settled(db: Database) -> None:
    """Every message's turn has ended: a turn is counted in the metrics just before its inbox row is finished,
    a moment after its last edit reaches the chat."""
    open_statuses = ("pending", "waiting", "running")
    unfinished = select(func.count()).select_from(INBOX).where(INBOX.c.status.in_(open_statuses))

    def work(connection: Connection) -> int:
        return connection.execute(unfinished).scalar_one()
    async with asyncio.timeout(15):
        while True:
            if not await db.run(work, single=True):
                return
            await asyncio.sleep(0.05)


def _answered(stage: Stage, room: Room, count: int) -> Callable[[], bool]:
    """The bot has given `count` finished answers in `room`."""
    def done() -> bool:
        texts = stage.transcript(room).answers
        return len(texts) >= count and all(text and text != PLACEHOLDER for text in texts)
    return done


def _print_chat(say: Callable[[str], None], title: str, lines: Sequence[Line]) -> None:
    say(f"── {title} " + "─" * max(0, 60 - len(title)))
    for line in lines:
        first, *rest = line.text.splitlines() or [""]
        say(f"{line.speaker:>8}: {first}")
        for more in rest:
            say(f"{'':>8}  {more}")
    say("")


SAMPLED = {"counter": "_total", "histogram": "_count"}
"""The sample that sums up a family: a counter's total, a histogram's number of observations."""


def _print_metrics(say: Callable[[str], None], url: str, text: str) -> None:
    """Each `gateway_` series of the exposition text, summed over its labels, a few to a line."""
    figures = []
    for family in text_string_to_metric_families(text):
        if family.name.startswith("gateway_") and not family.name.endswith("_created"):  # a counter's start time
            name = family.name + SAMPLED.get(family.type, "")
            total = sum(sample.value for sample in family.samples if sample.name == name)
            figures.append(f"{name} {total:g}")
    say(f"── GET {url}/metrics before the gateway stopped (summed over bots and labels) " + "─" * 8)
    for start in range(0, len(figures), 3):
        say("  " + " · ".join(figures[start:start + 3]))
    say("")


async def _report(database_url: str, say: Callable[[str], None]) -> None:
    def work(connection: Connection) -> list[int]:
        return [connection.execute(select(func.count()).select_from(table)).scalar_one()
                for table in (CONVERSATIONS, MESSAGES, RUNS)]
    db = Database(database_url)
    try:
        counts = await db.run(work)
    finally:
        await db.close()
    say("Stored in SQLite: {} conversations, {} turns, {} runs.".format(*counts))
    say("Next: put a real bot token and a model in gateway.yaml and run `gateway serve -c gateway.yaml`.")
