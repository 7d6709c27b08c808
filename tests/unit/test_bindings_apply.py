"""`apply` writes every bot and binding of the file, and a second apply replaces what changed."""

from __future__ import annotations

from typing import Any

from sqlalchemy import select

from gateway.agents.bindings import UPSERT_CHUNK, BindingStore
from gateway.config.schema import GatewayConfig
from storage.db import Database
from storage.models import BotRow


def config(bots: int, *, instructions: str, agent: str = "helper", api: str = "http://a.example") -> GatewayConfig:
    agents: list[dict[str, Any]] = [{"name": name, "model": "test"} for name in ("helper", "other")]
    return GatewayConfig.model_validate({
        "agents": agents,
        "bots": [{"name": f"bot{n}", "platform": "telegram", "token": f"${{TOKEN_{n}}}", "api_base_url": api,
                  "agent": agent, "binding": {"instructions": f"{instructions} {n}"}} for n in range(bots)],
    })


async def test_every_bot_is_written_past_one_statement_and_replaced_on_the_next_apply(database_url: str) -> None:
    count = UPSERT_CHUNK + 3
    db = Database(database_url)
    try:
        await db.create_all()
        store = BindingStore(db)
        await store.apply(config(count, instructions="first"))
        await store.apply(config(count, instructions="second", agent="other", api="http://b.example"))

        async def bots(session: Any) -> list[tuple[str, dict[str, Any]]]:
            return [tuple(row) for row in (await session.execute(select(BotRow.name, BotRow.settings))).all()]
        rows = dict(await db.transaction(bots))
        assert len(rows) == count
        assert {settings["api_base_url"] for settings in rows.values()} == {"http://b.example"}
        for n in (0, UPSERT_CHUNK - 1, UPSERT_CHUNK, count - 1):
            binding = await store.load(f"bot{n}")
            assert (binding.agent.name, binding.spec.instructions) == ("other", f"second {n}")

    finally:
        await db.close()
