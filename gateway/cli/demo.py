"""`gateway demo`: the real pipeline, offline — a local Telegram server, SQLite, and a scripted model."""

from __future__ import annotations

import tempfile
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

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
from sqlalchemy import func, select

from capabilities import default_registry
from capabilities.registry import BuildContext, CapabilityDef, ToolInfo
from gateway.agents.models import ModelResolver
from gateway.config.schema import GatewayConfig, Settings
from gateway.config.secrets import SecretSource
from gateway.sandbox.telegram import TelegramSandbox
from gateway.server.app import Gateway, Tuning
from storage.db import Database
from storage.models import ConversationRow, MessageRow, RunRow

TOKEN = "700000001:demo-token-for-the-local-telegram-server"
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


def demo_config(telegram_url: str) -> GatewayConfig:
    return GatewayConfig.model_validate({
        "agents": [{"name": "helper", "model": "demo:scripted", "capabilities": ["clock", "demo_ops"],
                    "instructions": "You are Helper, a concise assistant for a small team."}],
        "bots": [{"name": "demo", "platform": "telegram", "token": "${DEMO_TELEGRAM_TOKEN}",
                  "api_base_url": telegram_url, "transport": "polling", "agent": "helper"}],
        "server": {"host": "127.0.0.1", "port": 0},
    })


async def run_demo(say: Callable[[str], None]) -> None:
    with tempfile.TemporaryDirectory(prefix="gateway-demo-") as workdir:
        database_url = f"sqlite+aiosqlite:///{Path(workdir) / 'gateway.db'}"
        async with TelegramSandbox() as telegram:
            await _converse(telegram, database_url, say)
        await _report(database_url, say)


async def _converse(telegram: TelegramSandbox, database_url: str, say: Callable[[str], None]) -> None:
    me = telegram.add_bot(TOKEN, username="demo_helper_bot", first_name="Helper")
    alice = telegram.add_user(1001, "Alice", username="alice")
    bob = telegram.add_user(1002, "Bob", username="bob")
    dm, team = telegram.private_chat(alice), telegram.group(-1002001, "Team", supergroup=True)
    secrets = SecretSource(environ={"DEMO_TELEGRAM_TOKEN": TOKEN})
    config = demo_config(telegram.url)
    models = ModelResolver(config.models, secrets, fixed={"demo:scripted": demo_model()})
    settings = Settings(database_url=database_url, redis_url=None)
    say(f"Local Telegram server at {telegram.url}; gateway on SQLite, in-process cache, scripted model.\n")
    registry = default_registry().with_extra(demo_capability())
    async with Gateway(config, settings, secrets=secrets, models=models, registry=registry, tuning=DEMO_TUNING):
        answered = _answers(telegram, me["id"])
        await telegram.user_says(TOKEN, dm, alice, "Hi! What can you do?")
        await telegram.wait_for(answered(dm, 1), timeout=15)
        await telegram.user_says(TOKEN, dm, alice, "What did I ask first?")
        await telegram.wait_for(answered(dm, 2), timeout=15)
        await telegram.user_says(TOKEN, dm, alice, "Please restart the website.")
        await telegram.wait_for(lambda: _card(telegram, dm) is not None, timeout=15)
        card = _card(telegram, dm)
        say(f"The agent wants to run a gated tool; the card offers {' / '.join(_buttons(card))}. "
            "Alice taps Approve.\n")
        await telegram.user_clicks(TOKEN, card, alice, _buttons(card)["✅ Approve"])
        await telegram.wait_for(answered(dm, 4), timeout=15)  # two answers, the card, the approved answer
        await telegram.user_says(TOKEN, team, bob, "Lunch at noon, anyone?")
        await telegram.user_says(TOKEN, team, alice, "@demo_helper_bot can you summarize our plan?")
        await telegram.wait_for(answered(team, 1), timeout=15)
    _print_chat(say, "Direct message: Alice and the bot", telegram.transcript(dm["id"]))
    _print_chat(say, "Group 'Team' (the bot answers only when mentioned)", telegram.transcript(team["id"]))


def _card(telegram: TelegramSandbox, chat: dict) -> dict | None:
    return next((m for m in telegram.messages(chat["id"]) if m.get("reply_markup")), None)


def _buttons(card: dict | None) -> dict[str, str]:
    rows = (card or {}).get("reply_markup", {}).get("inline_keyboard", [])
    return {b["text"]: b["callback_data"] for row in rows for b in row}


def _answers(telegram: TelegramSandbox, bot_user_id: int) -> Callable[[dict, int], Callable[[], bool]]:
    """A predicate factory: the bot has given `count` finished answers in `chat`."""
    def factory(chat: dict, count: int) -> Callable[[], bool]:
        def done() -> bool:
            texts = [m.get("text", "") for m in telegram.messages(chat["id"]) if m["from"]["id"] == bot_user_id]
            return len(texts) >= count and all(t and t != "…" for t in texts)
        return done
    return factory


def _print_chat(say: Callable[[str], None], title: str, lines: list[tuple[str, str]]) -> None:
    say(f"── {title} " + "─" * max(0, 60 - len(title)))
    for sender, text in lines:
        first, *rest = text.splitlines() or [""]
        say(f"{sender:>8}: {first}")
        for line in rest:
            say(f"{'':>8}  {line}")
    say("")


async def _report(database_url: str, say: Callable[[str], None]) -> None:
    db = Database(database_url)
    try:
        async with db.session() as session:
            counts = [(await session.execute(select(func.count()).select_from(table))).scalar_one()
                      for table in (ConversationRow, MessageRow, RunRow)]
    finally:
        await db.close()
    say("Stored in SQLite: {} conversations, {} turns, {} runs.".format(*counts))
    say("Next: put a real bot token and a model in gateway.yaml and run `gateway serve -c gateway.yaml`.")
