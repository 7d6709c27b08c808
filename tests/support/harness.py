"""Runs a real gateway against the fake Telegram, configured the way an operator would."""

from __future__ import annotations

import asyncio
import socket
import uuid
from collections.abc import AsyncIterator, Collection, Iterator, Mapping
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass, field, replace
from datetime import timedelta
from typing import Any

import httpx
from pydantic_ai.models import Model

from capabilities.registry import Registry
from gateway.agents.models import ModelResolver
from gateway.config.schema import GatewayConfig, Settings
from gateway.config.secrets import SecretSource
from gateway.server.app import Gateway, Tuning
from tests.support.fakes.telegram import FakeTelegram

FAST = Tuning(worker_lease=timedelta(seconds=5), idle_poll=0.2, shutdown_grace=2.0, poll_timeout=1,
              transport_first_delay=0.2, transport_lease_ttl=3.0, expiry_interval=0.3)
QUIET = replace(FAST, idle_poll=600.0, worker_lease=timedelta(seconds=600), expiry_interval=600.0,
                file_claim=timedelta(seconds=600), first_sweep=600.0)
"""No idle claims, lease renewals or sweeps of its own: what a test counts is only what a turn causes (a sweep's
statements run on the database's thread, where a profile cannot tell them from a turn's)."""


@dataclass(kw_only=True)
class TelegramBot:
    """A bot registered with the fake Telegram, with the config that binds it to an agent."""

    name: str = field(default_factory=lambda: f"tg{uuid.uuid4().hex[:10]}")
    token: str = field(default_factory=lambda: f"{uuid.uuid4().int % 10**9}:{uuid.uuid4().hex}")
    username: str = "helper_bot"
    transport: str = "polling"
    binding: dict[str, Any] = field(default_factory=dict)
    user: dict[str, Any] = field(default_factory=dict)

    def register(self, telegram: FakeTelegram) -> TelegramBot:
        self.user = telegram.add_bot(self.token, username=self.username, first_name="Helper")
        return self


def said_by(telegram: FakeTelegram, chat: dict[str, Any], bot: TelegramBot) -> list[str]:
    return [m["text"] for m in telegram.bot_messages(chat["id"]) if m["from"]["id"] == bot.user["id"]]


async def ask(telegram: FakeTelegram, bot: TelegramBot, chat: dict[str, Any], user: dict[str, Any],
              text: str) -> str:
    """Say `text` (mentioning the bot in a group) and return the bot's answer."""
    before = len(said_by(telegram, chat, bot))
    prefix = "" if chat["type"] == "private" else f"@{bot.username} "
    await telegram.user_says(bot.token, chat, user, prefix + text)
    await telegram.wait_for(lambda: len(said_by(telegram, chat, bot)) > before
                            and not said_by(telegram, chat, bot)[-1].endswith("…"))
    return said_by(telegram, chat, bot)[-1]


async def until_ready(gateway: Gateway, *, refused: Collection[str] = ()) -> None:
    """Return once the readiness probe answers 200 and names every bot connected but the `refused` ones.

    Called once the fake saw each bot's identity call, so this is a round trip or two, not a poll.
    """
    async with httpx.AsyncClient() as client, asyncio.timeout(5):
        while not _connected(await client.get(f"{gateway.url}/readyz"), refused):
            pass


def _connected(answer: httpx.Response, refused: Collection[str]) -> bool:
    return answer.status_code == 200 and all(up for name, up in answer.json()["bots"].items() if name not in refused)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def refused_port() -> Iterator[int]:
    """A loopback port held bound but not listening while the block runs: a connection to it is refused, and no
    server another test starts meanwhile can take it (as it can a `free_port` whose socket is closed)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        yield int(sock.getsockname()[1])


def gateway_config(telegram: FakeTelegram, bots: list[TelegramBot], *, port: int = 0,
                   instructions: str = "You are a helpful assistant.",
                   capabilities: list[dict[str, Any]] | None = None,
                   agent: Mapping[str, Any] | None = None, agents: list[dict[str, Any]] | None = None,
                   top: Mapping[str, Any] | None = None) -> GatewayConfig:
    """`agent` adds fields to the bound agent's spec; `agents` are further agents (delegates, say); `top` adds
    top-level sections (`collections`, `context_files`, `skill_folders`)."""
    public_url = f"http://127.0.0.1:{port}" if port else None
    return GatewayConfig.model_validate({
        "agents": [{"name": "assistant", "model": "function:scripted", "instructions": instructions,
                    "capabilities": capabilities or [], **(agent or {})}, *(agents or [])],
        "bots": [{"name": bot.name, "platform": "telegram", "token": f"${{TOKEN_{bot.name.upper()}}}",
                  "api_base_url": telegram.url, "transport": bot.transport, "agent": "assistant",
                  "binding": bot.binding} for bot in bots],
        "server": {"host": "127.0.0.1", "port": port, "public_url": public_url},
        **(top or {}),
    })


@asynccontextmanager
async def running_gateway(telegram: FakeTelegram, bots: list[TelegramBot], *, database_url: str,
                          redis_url: str | None, model: Model, tuning: Tuning = FAST,
                          instructions: str = "You are a helpful assistant.", registry: Registry | None = None,
                          capabilities: list[dict[str, Any]] | None = None, agent: Mapping[str, Any] | None = None,
                          agents: list[dict[str, Any]] | None = None,
                          models: Mapping[str, Model] | None = None,
                          environment: Mapping[str, str] | None = None,
                          top: Mapping[str, Any] | None = None,
                          secrets: Mapping[str, str] | None = None) -> AsyncIterator[Gateway]:
    """`models` are further scripted models by name, for the `agents` and specialists that name them;
    `environment` holds further process settings by variable name (`OTEL_EXPORTER_OTLP_ENDPOINT`, say);
    `secrets` are further values the secret source holds (capability keys), by variable name."""
    webhook = any(bot.transport == "webhook" for bot in bots)
    config = gateway_config(telegram, bots, port=free_port() if webhook else 0, instructions=instructions,
                            capabilities=capabilities, agent=agent, agents=agents, top=top)
    source = SecretSource(environ={**(secrets or {}), **{f"TOKEN_{bot.name.upper()}": bot.token for bot in bots}})
    settings = Settings(database_url=database_url, redis_url=redis_url, **(environment or {}))
    resolver = ModelResolver(config.models, source, fixed={"function:scripted": model, **(models or {})})
    async with Gateway(config, settings, secrets=source, models=resolver, registry=registry, tuning=tuning,
                       migrate=True) as gateway:
        await telegram.wait_for(lambda: {c.token for c in telegram.calls if c.method == "getMe"} >= {
            bot.token for bot in bots})
        await until_ready(gateway, refused={bot.name for bot in bots if not bot.user})
        yield gateway
