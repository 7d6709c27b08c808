"""`gateway chat`: talk to a configured agent in the terminal, through the real pipeline.

Behind the prompt runs the whole gateway: a local Telegram server stands in for the chat platform, the
agent is the one gateway.yaml configures (its model, capabilities, instructions), the database is a
temporary SQLite file, and an approval card becomes a y/n question. Nothing leaves the machine except
what the agent's own model and tools send.
"""

from __future__ import annotations

import asyncio
import os
import tempfile
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from sqlalchemy import Connection, func, select

from capabilities.registry import Registry
from gateway.agents.models import ModelResolver
from gateway.cli.demo import DEMO_TUNING, demo_model
from gateway.config.schema import GatewayConfig, Settings
from gateway.config.secrets import SecretSource
from gateway.server.app import Gateway
from local_platforms.telegram import LocalTelegram
from storage.db import Database
from storage.tables import INBOX

FINISHED = select(func.count()).select_from(INBOX).where(INBOX.c.status.in_(("done", "failed", "rejected")))
"""How many inbox items have ended, however they ended."""
TOKEN = "700000002:chat-token-for-the-local-telegram-server"
SETTLE_POLL = 0.05
"""Seconds between looks at the inbox while a turn runs (the worker records its end only there)."""
TURN_TIMEOUT = 600.0
ANSWERS = {"y": True, "yes": True, "n": False, "no": False}
"""What an approval question takes, in any case; anything else is asked again, never taken as a deny."""

Ask = Callable[[str], Awaitable[str | None]]
"""Reads one line after a prompt; None at the end of input."""


def chat_config(config: GatewayConfig, agent: str, telegram_url: str) -> GatewayConfig:
    """The operator's agents and models, with one bot on the local server bound to `agent`."""
    return GatewayConfig.model_validate({
        **config.model_dump(exclude={"bots", "server"}),
        "bots": [{"name": "terminal", "platform": "telegram", "token": "${GATEWAY_CHAT_TOKEN}",
                  "api_base_url": telegram_url, "transport": "polling", "agent": agent}],
        "server": {"host": "127.0.0.1", "port": 0},
    })


async def run_chat(config: GatewayConfig, agent: str, *, secrets: SecretSource, registry: Registry,
                   ask: Ask, say: Callable[[str], None]) -> None:
    with tempfile.TemporaryDirectory(prefix="gateway-chat-") as workdir:
        database_url = f"sqlite+aiosqlite:///{Path(workdir) / 'chat.db'}"
        async with LocalTelegram() as telegram:
            local = chat_config(config, agent, telegram.url)
            chat_secrets = SecretSource(environ={**secrets.environ, "GATEWAY_CHAT_TOKEN": TOKEN},
                                        file_values=secrets.file_values)
            models = ModelResolver(local.models, chat_secrets, fixed={"demo:scripted": demo_model()},
                                   deadlines=config.model_deadlines)
            settings = Settings(database_url=database_url, redis_url=None)
            async with Gateway(local, settings, secrets=chat_secrets, models=models, registry=registry,
                               tuning=DEMO_TUNING):
                say(f"chatting with agent {agent!r} ({local.agent(agent).model}); an empty line or Ctrl-D ends")
                db = Database(database_url)
                try:
                    await _Conversation(telegram, agent, db, say).run(ask)
                finally:
                    await db.close()


class _Conversation:
    """You, the bot, and one private chat on the local server."""

    def __init__(self, telegram: LocalTelegram, agent: str, db: Database, say: Callable[[str], None]) -> None:
        self._telegram = telegram
        self._agent = agent
        self._say = say
        self._db = db
        self._bot = telegram.add_bot(TOKEN, username="terminal_bot", first_name=agent)
        self._you = telegram.add_user(1001, os.environ.get("USER") or "You", username="you")
        self._chat = telegram.private_chat(self._you)
        self._actions = 0
        self._shown: set[int] = set()

    async def run(self, ask: Ask) -> None:
        while (line := await ask("you> ")) not in (None, ""):
            await self._telegram.user_says(TOKEN, self._chat, self._you, line or "")
            await self._settle()
            while (card := self._open_card()) is not None:
                approve = await self._approval(ask)
                if approve is None:
                    self._say("no answer: the call was neither approved nor denied, and the chat ends")
                    return
                await self._decide(card, approve)

    async def _approval(self, ask: Ask) -> bool | None:
        """y/yes or n/no, asked until one is given; None at the end of input."""
        while (answer := await ask("approve? [y/n] ")) is not None:
            decision = ANSWERS.get(answer.strip().lower())
            if decision is not None:
                return decision
            self._say("please answer y (approve) or n (deny)")
        return None

    async def _decide(self, card: dict[str, Any], approve: bool) -> None:
        buttons = {b["text"]: b["callback_data"] for row in card["reply_markup"]["inline_keyboard"] for b in row}
        wanted = "Approve" if approve else "Deny"  # the plain buttons: not "for this conversation", not "with reason"
        [data] = [value for text, value in buttons.items() if text.split(" ", 1)[-1] == wanted]
        await self._telegram.user_clicks(TOKEN, card, self._you, data)
        await self._settle()

    def _open_card(self) -> dict[str, Any] | None:
        return next((m for m in self._telegram.messages(self._chat["id"]) if m.get("reply_markup")), None)

    async def _settle(self) -> None:
        """Wait for the worker to finish what was just sent, then print what the bot wrote since."""
        self._actions += 1
        async with asyncio.timeout(TURN_TIMEOUT):
            while await self._finished() < self._actions:  # noqa: ASYNC110 (no event: the end is a row)
                await asyncio.sleep(SETTLE_POLL)
        for message in self._telegram.bot_messages(self._chat["id"]):
            if message["message_id"] in self._shown:
                continue
            self._say(f"{self._agent}> {message.get('text', '')}")
            if not message.get("reply_markup"):  # an open card is shown again once it is decided
                self._shown.add(message["message_id"])

    async def _finished(self) -> int:
        def work(connection: Connection) -> int:
            return connection.execute(FINISHED).scalar_one()
        return await self._db.run(work, single=True)
