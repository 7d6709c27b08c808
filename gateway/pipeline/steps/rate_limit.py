"""How fast one person may talk to a bot: past its binding's rate limit a message is refused, said once per window."""

from __future__ import annotations

import logging
from typing import ClassVar

from gateway.pipeline.steps.services import StepServices
from gateway.pipeline.steps.step import Delivery, Handled, refuse

log = logging.getLogger(__name__)

SLOW_DOWN = "You're sending messages faster than I can answer. Please wait a moment and try again."


class RateLimit:
    skipped_when: ClassVar[tuple[str, object]] = ("rate_limit", None)

    def __init__(self, services: StepServices) -> None:
        self._cache = services.cache
        self._metrics = services.metrics

    async def handle(self, delivery: Delivery) -> Handled | None:
        binding, speaker = delivery.binding, delivery.inbound.speaker
        limit = binding.spec.rate_limit
        key = f"{binding.bot_name}:{speaker.platform_user_id}"
        if not limit or not await self._cache.hit_rate_limit(key, limit=limit.messages, window=limit.per_seconds):
            return None
        log.info("bot %r rate-limited %s", binding.bot_name, speaker.platform_user_id)
        self._metrics.refused(binding.bot_name, "rate_limit")
        # Told once per window; the messages after it in the same window are dropped silently.
        first = await self._cache.set_if_absent(f"slowdown:{key}", "1", ttl=limit.per_seconds)
        return await refuse(delivery, SLOW_DOWN if first else "")
