"""Runs a real gateway against the fake Mattermost, configured the way an operator would."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

from pydantic_ai.models import Model

from capabilities.registry import Registry
from gateway.agents.models import ModelResolver
from gateway.config.schema import GatewayConfig, Settings
from gateway.config.secrets import SecretSource
from gateway.server.app import Gateway, Tuning
from tests.support.fakes.mattermost import FakeMattermost, OutgoingWebhook
from tests.support.harness import FAST, free_port, until_ready


@dataclass(kw_only=True)
class MattermostBot:
    """A bot account on the fake Mattermost, with the config that binds it to an agent."""

    name: str = field(default_factory=lambda: f"mm{uuid.uuid4().hex[:10]}")
    token: str = field(default_factory=lambda: uuid.uuid4().hex[:26])
    username: str = "helper"
    transport: str = "websocket"
    webhook_token: str | None = None
    team: str | None = None
    binding: dict[str, Any] = field(default_factory=dict)
    user: dict[str, Any] = field(default_factory=dict)

    def register(self, mattermost: FakeMattermost) -> MattermostBot:
        self.user = mattermost.add_bot(self.token, username=self.username)
        return self

    def env(self) -> dict[str, str]:
        names = {f"MM_TOKEN_{self.name.upper()}": self.token}
        if self.webhook_token is not None:
            names[f"MM_HOOK_{self.name.upper()}"] = self.webhook_token
        return names

    def spec(self, server_url: str) -> dict[str, Any]:
        spec: dict[str, Any] = {"name": self.name, "platform": "mattermost", "api_base_url": server_url,
                                "token": f"${{MM_TOKEN_{self.name.upper()}}}", "transport": self.transport,
                                "agent": "assistant", "binding": self.binding}
        if self.webhook_token is not None:
            spec["webhook_token"] = f"${{MM_HOOK_{self.name.upper()}}}"
        if self.team is not None:
            spec["team"] = self.team
        return spec


def webhook_url(gateway: Gateway, bot: MattermostBot) -> str:
    return f"{gateway.url}/mattermost/{bot.name}/webhook"


def hook_up(mattermost: FakeMattermost, gateway: Gateway, bot: MattermostBot, team: dict[str, Any],
            **options: Any) -> OutgoingWebhook:
    """The outgoing webhook an admin creates for `bot`, with the token the bot's config carries."""
    assert bot.webhook_token is not None, "give the bot a webhook_token first"
    return mattermost.add_outgoing_webhook(team, callback_url=webhook_url(gateway, bot), token=bot.webhook_token,
                                           **options)


@asynccontextmanager
async def running_gateway(mattermost: FakeMattermost, bots: list[MattermostBot], *, database_url: str,
                          model: Model, redis_url: str | None = None, tuning: Tuning = FAST,
                          connected: bool = True, public: bool = False, registry: Registry | None = None,
                          capabilities: list[dict[str, Any]] | None = None,
                          port: int | None = None, agent: Mapping[str, Any] | None = None,
                          top: Mapping[str, Any] | None = None) -> AsyncIterator[Gateway]:
    """A gateway serving `bots`; with `connected`, every websocket bot holds its event stream on entry.

    `public` gives the gateway a `server.public_url`, which approval buttons need; on `port` when given,
    so that a restarted gateway answers at the URL its earlier cards point to. `agent` adds fields to the
    agent's spec; `top` adds top-level sections (`collections`, say).
    """
    port = (port or free_port()) if public else 0
    config = GatewayConfig.model_validate({
        "agents": [{"name": "assistant", "model": "function:scripted", "instructions": "You are helpful.",
                    "capabilities": capabilities or [], **(agent or {})}],
        "bots": [bot.spec(mattermost.url) for bot in bots],
        "server": {"host": "127.0.0.1", "port": port, "public_url": f"http://127.0.0.1:{port}" if public else None},
        **(top or {}),
    })
    secrets = SecretSource(environ={k: v for bot in bots for k, v in bot.env().items()})
    settings = Settings(database_url=database_url, redis_url=redis_url)
    models = ModelResolver(config.models, secrets, fixed={"function:scripted": model})
    async with Gateway(config, settings, secrets=secrets, models=models, registry=registry, tuning=tuning,
                       migrate=True) as gateway:
        if connected:
            await mattermost.wait_for(lambda: {c.user_id for c in mattermost.route_calls("users_me")} >= {
                b.user["id"] for b in bots})
            await mattermost.wait_for(lambda: all(mattermost.connected(b.user) for b in bots
                                                  if b.transport == "websocket"))
            await until_ready(gateway)
        yield gateway
