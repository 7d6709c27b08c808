"""`web_research`: `web_search` over a search service this deployment calls, or the model provider's own.

`duckduckgo` needs no account; `tavily`, `brave` and `exa` need the organization's key, named by the
entry's `secret_id` (a conditional requirement: the free default stays free). With `native` the model
provider searches, so no approval gate can hold the call and asking for one is refused. A service that is
down or refuses the key comes back as a retry prompt, never as an empty-looking result; no hits is text.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field
from pydantic.config import JsonDict

from capabilities.registry import CapabilityDef, Deferred, KeyRequirement, ToolInfo

Method = Literal["duckduckgo", "native", "tavily", "brave", "exa"]
PAID: frozenset[str] = frozenset({"tavily", "brave", "exa"})
METHOD_LABELS: JsonDict = {"duckduckgo": "DuckDuckGo", "native": "The model provider's own search", "tavily": "Tavily",
                 "brave": "Brave Search", "exa": "Exa"}
"""What a form shows for each stored value (`x-enum-labels` in the JSON Schema)."""


class WebResearchConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)

    method: Method = Field(default="duckduckgo", json_schema_extra={"x-enum-labels": METHOD_LABELS})
    """Who searches: `duckduckgo` (free, no account), `native` (the model provider, on models that support it),
    or `tavily`, `brave`, `exa` (paid; the entry's `secret_id` names the key)."""
    max_results: int = Field(default=5, ge=1, le=10)
    """Results per search, 1 to 10; ignored by `native`."""


def offered(config: WebResearchConfig) -> list[str]:
    """A native search is the provider's tool, not a function the model is offered."""
    return [] if config.method == "native" else ["web_search"]


def at_provider(config: WebResearchConfig) -> list[str]:
    return ["web_search"] if config.method == "native" else []


CAPABILITY = CapabilityDef(
    id="web_research", name="Web search", category="research",
    description="Searches the public web for current information, through DuckDuckGo, a paid service "
                "(Tavily, Brave, Exa) with the organization's key, or the model provider's own search.",
    tools=(ToolInfo(id="web_search", summary="Searches the public web for current information."),),
    config=WebResearchConfig,
    build=Deferred("capabilities.web_research.build:build"), offered=offered, at_provider=at_provider,
    scopes=frozenset({"web:read"}),
    key=KeyRequirement(description="an API key for Tavily, Brave or Exa; only methods tavily, brave and exa need one",
                       when=lambda config: config.method in PAID))
