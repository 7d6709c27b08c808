"""`context`: an organization's standing context files, bound by the agent spec by name.

An `inject` file is placed verbatim in the instructions, framed as reference material; a `link` file stays
out of the prompt and is reached through `read_context`, listed by `list_context`. The two tools exist only
when a `link` file is bound (and `expose_read_tool` is on); with nothing usable bound the capability is not
attached. The framing is a best effort against an accidental breakout, not a security boundary: a closing
`</context-file>` or `</context-files>` in content gets a zero-width space after its `<`, and `"` is taken
out of names and formats, so no file can wash text back into the trusted instructions.

(The module is not `capabilities/run/`: that name is the builders' `BuildContext`.)
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from capabilities.registry import CapabilityDef, Deferred, ToolInfo

INJECT_LIMIT = 20_000
"""Characters an `inject` file may hold: every run pays for it. `gateway check` refuses a longer one."""
LINK_LIMIT = 200_000
"""Characters a `link` file may hold: a longer document belongs in a knowledge collection, to be searched."""


class ContextConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)

    expose_read_tool: bool = True
    """Offer `list_context` and `read_context` for the `link` files; off, `link` files are not reachable."""


def offered(config: ContextConfig) -> list[str]:
    """With a `link` file bound: both tools, unless the read tool is switched off."""
    return ["list_context", "read_context"] if config.expose_read_tool else []


CAPABILITY = CapabilityDef(
    id="context", name="Context", category="knowledge",
    description="Standing context files: injected into the instructions, or read on demand.",
    tools=(ToolInfo(id="list_context", summary="Lists the reference files that can be read, without contents."),
           ToolInfo(id="read_context", summary="Reads one reference file in full.")),
    config=ContextConfig, offered=offered, build=Deferred("capabilities.context.build:build"),
    bind=Deferred("capabilities.context.services:bind"))
