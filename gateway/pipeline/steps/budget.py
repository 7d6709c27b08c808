"""Budgets: a message to a bot whose binding sets `limits` is refused before the model runs when the person, or the
bot as a whole, has already reached one, with which limit and when it resets. The spending is read from the runs
every replica records (`gateway/pipeline/spend.py`), so replicas count together.

A binding without limits skips the step (`skipped_when`), so it reads nothing here.
"""

from __future__ import annotations

import logging
from datetime import datetime
from functools import partial
from typing import ClassVar

from gateway.pipeline.spend import Periods, Standing, standings
from gateway.pipeline.steps.services import StepServices
from gateway.pipeline.steps.step import Delivery, Handled, refuse
from gateway.pipeline.usage_report import amount, resets
from storage.tables import utcnow

log = logging.getLogger(__name__)


class Budget:
    skipped_when: ClassVar[tuple[str, object]] = ("limits", None)

    def __init__(self, services: StepServices) -> None:
        self._db = services.db
        self._metrics = services.metrics

    async def handle(self, delivery: Delivery) -> Handled | None:
        binding = delivery.binding
        limits = binding.spec.limits
        if limits is None:
            return None
        now = utcnow()
        standing = await self._db.run(partial(standings, limits, bot=binding.bot_name,
                                              speaker=delivery.inbound.speaker, periods=Periods(now=now)))
        reached = next((each for each in standing if each.reached), None)
        if reached is None:
            return None
        log.info("bot %r refused a turn of %s: limit %s reached", binding.bot_name,
                 delivery.inbound.speaker.platform_user_id, reached.limit.field)
        self._metrics.refused(binding.bot_name, "budget")
        return await refuse(delivery, notice(reached, now=now))


def notice(reached: Standing, *, now: datetime) -> str:
    """Which limit stops the turn, and when it resets."""
    limit = reached.limit
    who, whom = ("You have", " you") if limit.scope == "person" else ("Everyone here together has", "")
    return (f"{who} used {amount(reached.used, limit.measure)} of the {amount(limit.allowed, limit.measure)} "
            f"a {limit.period} this bot allows{whom} (`{limit.field}`), so I can't answer now. "
            f"It resets {resets(reached, now=now)}.")
