"""`knowledge`: `search_documents` over the document collections the agent spec binds.

The model chooses what to look for, never where: the collections come from the spec, resolved by the
server before the run (`RunFacts.knowledge`), and no argument names one. With no collection bound, or
none that holds a document, the capability is not attached: a search that always comes back empty is
worse than none, since the model draws conclusions from the silence. Passages are numbered so the answer
can cite them as [1], and framed as reference material, since a document's text is nobody's instruction.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from capabilities.registry import CapabilityDef, Deferred, ToolInfo

MAX_TOP_K = 50


class KnowledgeConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)

    default_top_k: int = Field(default=5, ge=1, le=MAX_TOP_K)
    """Passages returned when the model does not ask for a number itself."""


CAPABILITY = CapabilityDef(
    id="knowledge", name="Knowledge search", category="knowledge",
    description="Searches the document collections the agent spec binds, and cites what it used.",
    tools=(ToolInfo(id="search_documents",
                    summary="Searches the organization's documents for passages relevant to a question."),),
    scopes=frozenset({"knowledge:read"}), config=KnowledgeConfig, build=Deferred("capabilities.knowledge.build:build"),
    bind=Deferred("capabilities.knowledge.services:bind"))
