"""`status`: the agent of this chat, its model and capabilities, how full the model's context window is with the
history the next turn would read (an estimate, and said to be one), and whether a turn runs or waits here."""

from __future__ import annotations

from functools import partial

from gateway.pipeline.conversations import history_size
from gateway.pipeline.steps.commands.call import ChatCommand, CommandCall, Handler, say
from gateway.pipeline.steps.commands.help import bound_capabilities
from gateway.pipeline.steps.services import StepServices
from gateway.pipeline.steps.step import Delivery, Handled

CHARACTERS_PER_TOKEN = 4
"""The usual rough rate for English text; the tokenizer of the model decides the real count."""


def _status(services: StepServices) -> Handler:
    async def handle(call: CommandCall) -> Handled:
        delivery = call.delivery
        address = delivery.inbound.address
        limit = delivery.binding.spec.history_turns
        turns, characters = await services.db.run(partial(history_size, address=address, limit=limit))
        running, waiting = await services.inbox.in_line(address.conversation_key)
        names = [definition.name for definition in bound_capabilities(delivery.binding,
                                                                       services.capabilities.registry)]
        lines = [f"**Agent:** {delivery.binding.agent.name}", f"**Model:** `{delivery.binding.agent.spec.model}`",
                 f"**Capabilities:** {', '.join(names) if names else 'none'}",
                 f"**Context:** {_context(delivery, turns, characters)}", f"**Now:** {_line(running, waiting)}"]
        return await say(call, "\n".join(lines), services)
    return handle


def _context(delivery: Delivery, turns: int, characters: int) -> str:
    spec = delivery.binding.agent.spec
    instructions = len(spec.instructions) + len(delivery.binding.spec.instructions)
    tokens = (characters + instructions) // CHARACTERS_PER_TOKEN
    said = (f"{turns} earlier message(s) (the history reads up to {delivery.binding.spec.history_turns}) and the "
            f"instructions, about {tokens:,} tokens (estimated at {CHARACTERS_PER_TOKEN} characters a token; tools and "
            "files not counted)")
    from pydantic_ai_harness.compaction import resolve_context_window  # see tests/static/test_layers.py

    window = resolve_context_window(spec.model)
    if window is None:
        return f"{said}; this model's context window is not known here"
    return f"{said}: about {tokens / window:.0%} of its {window:,}-token context window"


def _line(running: int, waiting: int) -> str:
    turn = "a turn is running" if running else "no turn is running"
    return f"{turn}; {waiting} message(s) wait for their turn" if waiting else f"{turn}, none waiting"


STATUS = ChatCommand(name="status", summary="agent, model, how full the context is, whether a turn is running",
                     build=_status, at_once=True)
