"""Commands (`steps/commands/`): a message that is one of their words, with or without a leading `/`, is answered
here without a model run and kept out of the history. Recognizing one is a dictionary look-up, so a plain message
costs this step nothing more."""

from __future__ import annotations

from gateway.pipeline.intake import command_word
from gateway.pipeline.steps.commands import COMMANDS, CommandCall
from gateway.pipeline.steps.services import StepServices
from gateway.pipeline.steps.step import Delivery, Handled


class Command:
    def __init__(self, services: StepServices) -> None:
        self._handlers = {command.name: command.build(services) for command in COMMANDS}

    async def handle(self, delivery: Delivery) -> Handled | None:
        word, argument = command_word(delivery.inbound.text)
        handler = self._handlers.get(word)
        if handler is None:
            return None
        return await handler(CommandCall(delivery=delivery, argument=argument, commands=COMMANDS))
