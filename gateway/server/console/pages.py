"""The overview, runs and audit pages, each with the fragment htmx polls to keep it live."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from starlette.responses import Response

from gateway.config.schema import GatewayConfig
from gateway.server.console.audit import ConsoleAudit
from gateway.server.console.gate import Visit
from gateway.server.console.queries import RUN_STATUSES, ConsoleQueries, RunFilter
from gateway.server.console.render import Renderer
from gateway.server.console.replicas import Replicas
from gateway.server.http import ReadinessCheck

Backlog = Callable[[], Awaitable[tuple[int, float]]]
"""Inbox items waiting, and the oldest one's age in seconds."""


@dataclass(frozen=True, slots=True, kw_only=True)
class BotState:
    name: str
    platform: str
    transport: str
    agent: str
    signed_in: bool
    held_by: str
    """The replica holding its connection; "every replica" for a webhook bot; "" when none does."""


class Pages:
    def __init__(self, *, config: GatewayConfig, renderer: Renderer, queries: ConsoleQueries, audit: ConsoleAudit,
                 replicas: Replicas, readiness: ReadinessCheck, backlog: Backlog) -> None:
        self._config = config
        self._render = renderer
        self._queries = queries
        self._audit = audit
        self._replicas = replicas
        self._readiness = readiness
        self._backlog = backlog

    async def overview(self, visit: Visit) -> Response:
        return self._render.page(visit, "overview.html", **await self._overview())

    async def overview_live(self, visit: Visit) -> Response:
        return self._render.page(visit, "_overview_live.html", **await self._overview())

    async def _overview(self) -> dict[str, Any]:
        readiness = await self._readiness()
        replicas = [replica for replica in await self._replicas.seen() if replica.alive]
        holders = {bot: replica.id for replica in replicas for bot in replica.holding}
        bots = [BotState(name=bot.name, platform=bot.platform, transport=bot.transport, agent=bot.agent,
                         signed_in=readiness.bots.get(bot.name, False),
                         held_by="every replica" if bot.transport in ("webhook", "http") else holders.get(bot.name, ""))
                for bot in self._config.bots]
        depth, oldest = await self._backlog()
        return {"bots": bots, "replicas": replicas, "this_replica": self._replicas.replica_id, "depth": depth,
                "oldest": oldest, "hour": await self._queries.last_hour(), "readiness": readiness}

    async def runs(self, visit: Visit) -> Response:
        return self._render.page(visit, "runs.html", **await self._runs(visit))

    async def runs_live(self, visit: Visit) -> Response:
        return self._render.page(visit, "_runs_table.html", **await self._runs(visit))

    async def _runs(self, visit: Visit) -> dict[str, Any]:
        params = visit.request.query_params
        wanted = RunFilter(bot=params.get("bot", ""), agent=params.get("agent", ""), status=params.get("status", ""),
                           person=params.get("person", ""))
        runs = await self._queries.runs(wanted, named=visit.operator.may("transcripts"))
        return {"runs": runs, "wanted": wanted, "query": str(visit.request.query_params),
                "bots": [bot.name for bot in self._config.bots], "agents": [a.name for a in self._config.agents],
                "statuses": RUN_STATUSES}

    async def run(self, visit: Visit) -> Response:
        run_id = visit.request.path_params["run_id"]
        detail = await self._queries.run(run_id, named=visit.operator.may("transcripts"))
        if detail is None:
            return self._render.page(visit, "missing.html", status=404, what=f"run {run_id}")
        return self._render.page(visit, "run.html", detail=detail)

    async def audit(self, visit: Visit) -> Response:
        return self._render.page(visit, "audit.html", entries=await self._audit.recent())
