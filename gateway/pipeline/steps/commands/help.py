"""`help`: the commands a person can say, and what the agent of this chat can do: each capability it binds, by its
name and one line from the registry. Markdown, which the adapter renders in the platform's markup."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from capabilities.registry import CapabilityDef, Registry
from gateway.agents.bindings import Binding
from gateway.pipeline.steps.commands.call import ChatCommand, CommandCall, Handler, say
from gateway.pipeline.steps.services import StepServices
from gateway.pipeline.steps.step import Handled


def bound_capabilities(binding: Binding, registry: Registry) -> list[CapabilityDef[Any]]:
    """What the binding's agent can use: its spec's enabled capabilities, and those its bot's binding grants."""
    ids = [entry.id for entry in binding.agent.spec.capabilities if entry.enabled]
    ids += [definition.id for definition in registry
            if definition.binding_only and getattr(binding.spec, definition.id, None) is not None]
    return [definition for capability_id in dict.fromkeys(ids) if (definition := registry.get(capability_id))]


def help_text(binding: Binding, registry: Registry, commands: Sequence[ChatCommand], *, direct: bool) -> str:
    agent = binding.agent
    lines = [f"**{agent.name}**" + (f": {agent.spec.description}" if agent.spec.description else ""), "",
             "**Commands** (the whole message, with or without a leading `/`" +
             ("" if direct else ", naming me") + "):"]
    lines += [f"- `{command.name}`: {command.summary}" for command in commands]
    capabilities = bound_capabilities(binding, registry)
    lines += ["", "**What I can do:**" if capabilities else "Anything else you write, I answer."]
    lines += [f"- **{definition.name}**: {_first_line(definition.description)}" for definition in capabilities]
    return "\n".join(lines)


def _first_line(text: str) -> str:
    return " ".join(text.split()).split(". ")[0].rstrip(".")


def _help(services: StepServices) -> Handler:
    async def handle(call: CommandCall) -> Handled:
        delivery = call.delivery
        return await say(call, help_text(delivery.binding, services.capabilities.registry, call.commands,
                                         direct=delivery.inbound.address.is_direct), services)
    return handle


HELP = ChatCommand(name="help", summary="the commands, and what this agent can do", build=_help, at_once=True)
