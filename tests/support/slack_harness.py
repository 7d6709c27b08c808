"""Runs a real gateway against the fake Slack, configured the way an operator would."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic_ai.models import Model

from capabilities.registry import Registry
from gateway.agents.models import ModelResolver
from gateway.config.schema import GatewayConfig, Settings
from gateway.config.secrets import SecretSource
from gateway.server.app import Gateway, Tuning
from tests.support.fakes.slack import FakeSlack, SlackApp
from tests.support.harness import FAST, free_port, until_ready


@dataclass(kw_only=True)
class SlackBot:
    """A Slack app installed in the fake workspace, with the config that binds it to an agent."""

    app: SlackApp
    transport: Literal["socket", "http"] = "socket"
    binding: dict[str, Any] = field(default_factory=dict)
    name: str = field(default_factory=lambda: f"sl{uuid.uuid4().hex[:10]}")

    @property
    def user_id(self) -> str:
        return self.app.bot_user_id

    @property
    def mention(self) -> str:
        return f"<@{self.app.bot_user_id}>"

    def secrets(self) -> dict[str, str]:
        prefix = self.name.upper()
        return {f"{prefix}_TOKEN": self.app.token, f"{prefix}_APP_TOKEN": self.app.app_token,
                f"{prefix}_SIGNING_SECRET": self.app.signing_secret}

    def spec(self, slack: FakeSlack) -> dict[str, Any]:
        prefix = self.name.upper()
        secret = {"app_token": f"${{{prefix}_APP_TOKEN}}"} if self.transport == "socket" else {
            "signing_secret": f"${{{prefix}_SIGNING_SECRET}}"}
        return {"name": self.name, "platform": "slack", "token": f"${{{prefix}_TOKEN}}", "api_base_url": slack.url,
                "transport": self.transport, "agent": "assistant", "binding": self.binding, **secret}


def slack_config(slack: FakeSlack, bots: list[SlackBot], *, port: int = 0,
                 capabilities: list[dict[str, Any]] | None = None, agent: Mapping[str, Any] | None = None,
                 top: Mapping[str, Any] | None = None) -> GatewayConfig:
    """`agent` adds fields to the agent's spec; `top` adds top-level sections (`collections`, say)."""
    public_url = f"http://127.0.0.1:{port}" if port else None
    return GatewayConfig.model_validate({
        "agents": [{"name": "assistant", "model": "function:scripted", "instructions": "You are a helpful assistant.",
                    "capabilities": capabilities or [], **(agent or {})}],
        "bots": [bot.spec(slack) for bot in bots],
        "server": {"host": "127.0.0.1", "port": port, "public_url": public_url},
        **(top or {}),
    })


@asynccontextmanager
async def running_gateway(slack: FakeSlack, bots: list[SlackBot], *, database_url: str, redis_url: str | None,
                          model: Model, tuning: Tuning = FAST, registry: Registry | None = None,
                          capabilities: list[dict[str, Any]] | None = None, agent: Mapping[str, Any] | None = None,
                          top: Mapping[str, Any] | None = None) -> AsyncIterator[Gateway]:
    """A gateway serving `bots`: Socket Mode bots connected, Events API bots' request URLs pointed at it."""
    port = free_port() if any(bot.transport == "http" for bot in bots) else 0
    config = slack_config(slack, bots, port=port, capabilities=capabilities, agent=agent, top=top)
    secrets = SecretSource(environ={key: value for bot in bots for key, value in bot.secrets().items()})
    for bot in bots:
        bot.app.request_url = f"http://127.0.0.1:{port}/slack/{bot.name}/events" if bot.transport == "http" else None
        bot.app.interactivity_url = (f"http://127.0.0.1:{port}/slack/{bot.name}/interactions"
                                     if bot.transport == "http" else None)
        bot.app.commands_url = f"http://127.0.0.1:{port}/slack/{bot.name}/commands" if bot.transport == "http" else None
    settings = Settings(database_url=database_url, redis_url=redis_url)
    models = ModelResolver(config.models, secrets, fixed={"function:scripted": model})
    async with Gateway(config, settings, secrets=secrets, models=models, registry=registry, tuning=tuning,
                       migrate=True) as gateway:
        await slack.wait_for(lambda: {c.token for c in slack.calls if c.method == "auth.test"} >= {
            bot.app.token for bot in bots})
        await slack.wait_for(lambda: all(bot.app.sockets for bot in bots if bot.transport == "socket"))
        await until_ready(gateway)  # an Events API bot's last call is auth.test: the gateway says it read it
        yield gateway
