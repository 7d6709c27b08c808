"""A side-effecting test capability whose tool needs a person's approval before it runs."""

from __future__ import annotations

from typing import Any

from pydantic_ai import FunctionToolset
from pydantic_ai.capabilities import Capability

from capabilities import default_registry
from capabilities.registry import CapabilityDef, Registry, ToolInfo
from capabilities.run import BuildContext


def deploy_registry(executed: list[str]) -> Registry:
    """The default registry plus `deploy`, whose `deploy_service` records each run in `executed`."""

    def build(_context: BuildContext[Any]) -> Capability:
        toolset = FunctionToolset(id="deploy")

        @toolset.tool_plain
        def deploy_service(service: str) -> str:
            """Deploy a service to production.

            Args:
                service: The service's name.

            Returns:
                One line confirming the deployment.
            """
            executed.append(service)
            return f"deployed {service}"

        return Capability(toolsets=[toolset])

    deploy = CapabilityDef(id="deploy", name="Deploy", category="utility", description="Deploys services.",
                           tools=(ToolInfo(id="deploy_service", summary="Deploy a service.", side_effecting=True),),
                           build=build)
    return default_registry().with_extra(deploy)
