"""Who may talk to the bot: a binding with an allowlist answers the people on it and refuses everyone else."""

from __future__ import annotations

import logging
from typing import ClassVar

from gateway.agents.bindings import is_listed
from gateway.pipeline.steps.services import StepServices
from gateway.pipeline.steps.step import Delivery, Handled, refuse

log = logging.getLogger(__name__)

NOT_ALLOWED = "Sorry, this bot only answers people on its allowlist."


class Access:
    skipped_when: ClassVar[tuple[str, object]] = ("access", "open")

    def __init__(self, services: StepServices) -> None:
        self._metrics = services.metrics

    async def handle(self, delivery: Delivery) -> Handled | None:
        binding, speaker = delivery.binding, delivery.inbound.speaker
        if binding.spec.access != "allowlist" or is_listed(speaker, binding.spec.allow):
            return None
        log.info("bot %r refused %s: not on the allowlist", binding.bot_name, speaker.platform_user_id)
        self._metrics.refused(binding.bot_name, "allowlist")
        return await refuse(delivery, NOT_ALLOWED)
