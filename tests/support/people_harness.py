"""A gateway whose agents keep memory, with Telegram, Slack and Mattermost bots, and a model that obeys.

The memory and linking tests need what the single-platform harnesses do not offer: several agents,
bots of two platforms in one gateway, and a model told in the chat which tool to call.
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import Any

from pydantic_ai import ModelMessage, ModelRequest, ModelResponse, TextPart, ToolCallPart, UserPromptPart
from pydantic_ai.messages import RetryPromptPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, DeltaToolCall, DeltaToolCalls, FunctionModel
from sqlalchemy import select

from gateway.agents.models import ModelResolver
from gateway.config.schema import GatewayConfig, Settings
from gateway.config.secrets import SecretSource
from gateway.server.app import Gateway
from storage.db import Database
from storage.models import IdentityRow, MemoryNoteRow
from tests.support.fakes.mattermost import FakeMattermost
from tests.support.fakes.slack import FakeSlack
from tests.support.fakes.telegram import FakeTelegram
from tests.support.harness import FAST, TelegramBot
from tests.support.mattermost_harness import MattermostBot
from tests.support.slack_harness import SlackBot

MEMORY = {"id": "memory_files", "approval": "never"}
_ORDER = re.compile(r"!(?P<tool>\w+)\s*(?P<args>\{.*\})?\s*$", re.DOTALL)


def obeys(instructions_seen: list[str] | None = None) -> FunctionModel:
    """Calls the tool a user prompt names as `!tool {json args}`, then answers `done: <what it returned>`.

    Any other prompt is answered `ok`. Each request's instructions are appended to `instructions_seen`.
    """

    def step(messages: list[ModelMessage], info: AgentInfo) -> str | ToolCallPart:
        if instructions_seen is not None:
            instructions_seen.append(info.instructions or "")
        last = messages[-1]
        assert isinstance(last, ModelRequest)
        for part in last.parts:
            if isinstance(part, ToolReturnPart):
                return f"done: {part.model_response_str()}"
            if isinstance(part, RetryPromptPart):
                return f"done: {part.model_response()}"
        prompt = " ".join(str(p.content) for p in last.parts if isinstance(p, UserPromptPart))
        order = _ORDER.search(prompt)
        if order is None:
            return "ok"
        return ToolCallPart(order["tool"], json.loads(order["args"] or "{}"), tool_call_id="order-1")

    async def stream(messages: list[ModelMessage], info: AgentInfo) -> AsyncIterator[str | DeltaToolCalls]:
        decision = step(messages, info)
        if isinstance(decision, str):
            yield decision
            return
        yield {0: DeltaToolCall(name=decision.tool_name, json_args=decision.args_as_json_str(),
                                tool_call_id=decision.tool_call_id)}

    def complete(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        decision = step(messages, info)
        return ModelResponse(parts=[TextPart(decision) if isinstance(decision, str) else decision])

    return FunctionModel(complete, stream_function=stream)


def order(tool: str, **args: Any) -> str:
    """The chat text that makes `obeys()` call `tool` with `args`."""
    return f"!{tool} {json.dumps(args)}"


@asynccontextmanager
async def memory_gateway(*, telegram: FakeTelegram, bots: Sequence[TelegramBot], database_url: str,
                         model: FunctionModel, slack: FakeSlack | None = None, slack_bots: Sequence[SlackBot] = (),
                         mattermost: FakeMattermost | None = None, mattermost_bots: Sequence[MattermostBot] = (),
                         agent_of: dict[str, str] | None = None,
                         memory: dict[str, Any] = MEMORY) -> AsyncIterator[Gateway]:
    """A gateway whose agents all have `memory_files`; `agent_of` maps a bot name to its agent's name."""
    agent_of = agent_of or {}
    telegram_specs = [{"name": bot.name, "platform": "telegram", "token": f"${{TOKEN_{bot.name.upper()}}}",
                       "api_base_url": telegram.url, "transport": "polling", "binding": bot.binding}
                      for bot in bots]
    slack_specs = [bot.spec(slack) for bot in slack_bots] if slack else []
    mattermost_specs = [bot.spec(mattermost.url) for bot in mattermost_bots] if mattermost else []
    specs = [{**spec, "agent": agent_of.get(spec["name"], "assistant")}
             for spec in telegram_specs + slack_specs + mattermost_specs]
    config = GatewayConfig.model_validate({
        "agents": [{"name": name, "model": "function:scripted", "instructions": "You are a helpful assistant.",
                    "capabilities": [memory]} for name in sorted({spec["agent"] for spec in specs})],
        "bots": specs, "server": {"host": "127.0.0.1", "port": 0}})
    environ = {f"TOKEN_{bot.name.upper()}": bot.token for bot in bots}
    environ |= {key: value for bot in slack_bots for key, value in bot.secrets().items()}
    environ |= {key: value for bot in mattermost_bots for key, value in bot.env().items()}
    secrets = SecretSource(environ=environ)
    models = ModelResolver(config.models, secrets, fixed={"function:scripted": model})
    settings = Settings(database_url=database_url, redis_url=None)
    async with Gateway(config, settings, secrets=secrets, models=models, tuning=FAST, migrate=True) as gateway:
        await telegram.wait_for(lambda: all(a.identity is not None for a in gateway.adapters.values()))
        if slack is not None:
            await slack.wait_for(lambda: all(bot.app.sockets for bot in slack_bots))
        if mattermost is not None:
            await mattermost.wait_for(lambda: all(mattermost.connected(bot.user) for bot in mattermost_bots))
        yield gateway


async def stored_notes(database_url: str) -> list[tuple[str, str, str, str, str]]:
    """Every memory note as (agent, owner kind, owner key, path, content), in a stable order."""
    db = Database(database_url)
    try:
        async with db.session() as session:
            rows = (await session.execute(select(MemoryNoteRow).order_by(MemoryNoteRow.agent_name,
                                                                         MemoryNoteRow.owner_kind,
                                                                         MemoryNoteRow.owner_key,
                                                                         MemoryNoteRow.path))).scalars()
            return [(r.agent_name, r.owner_kind, r.owner_key, r.path, r.content) for r in rows]
    finally:
        await db.close()


async def identity_rows(database_url: str) -> dict[str, IdentityRow]:
    """Identities by platform user id."""
    db = Database(database_url)
    try:
        async with db.session() as session:
            rows = (await session.execute(select(IdentityRow))).scalars().all()
            return {row.platform_user_id: row for row in rows}
    finally:
        await db.close()
