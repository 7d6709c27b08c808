"""Commands (`steps/commands/`): a message that is one of their words, with or without a leading `/`, is answered
here without a model run and kept out of the history. Recognizing one is a dictionary look-up, so a plain message
costs this step nothing more."""

from __future__ import annotations

from gateway.pipeline.steps.commands import COMMANDS, CommandCall
from gateway.pipeline.steps.services import StepServices
from gateway.pipeline.steps.step import Delivery, Handled


class Command:
    def __init__(self, services: StepServices) -> None:
        self._handlers = {command.name: command.build(services) for command in COMMANDS}

    async def handle(self, delivery: Delivery) -> Handled | None:
        words = delivery.inbound.text.strip().removeprefix("/").split(None, 1)
        handler = self._handlers.get(words[0].lower()) if words else None
        if handler is None:
            return None
        return await handler(CommandCall(delivery=delivery, argument=words[1] if len(words) > 1 else "",
                                         commands=COMMANDS))
