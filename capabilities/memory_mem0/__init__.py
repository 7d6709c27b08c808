"""`memory_mem0`: semantic memory held in a mem0 service, in the cloud or self-hosted, under the run's owner.

Whose memories a run reaches is `RunFacts.owner`, the same rule as `memory_files` (the person in a
one-to-one chat, the room in a group, nobody where no store is allowed), given to mem0 as the whole
`user_id` `{deployment}:{agent}:{owner kind}:{owner key}`, so one mem0 account never mixes up two
deployments, agents or people. Nothing is stored here; mem0 bills its own embeddings, which the
deployment's usage figures do not see. Where the key may be sent is vetted in `capabilities/memory_mem0/access.py`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from capabilities.memory_mem0.access import Dialect, url_problem
from capabilities.registry import CapabilityDef, Deferred, KeyRequirement, ToolInfo

if TYPE_CHECKING:
    from capabilities.run import MemoryOwner

MAX_TEXT = 2_000
MAX_RESULTS = 20
NO_STORE = ("Memory is switched off in this conversation: nothing can be remembered or recalled here. Tell the "
            "person you cannot keep memories in this chat.")
REFUSED = ("The memory service is not available to this agent ({reason}). Tell the person memory is unavailable "
           "and that the operator has to fix its set-up; do not try again.")
ROOM_SCOPE = ("Memories you remember or recall here belong to this group chat: everyone in it hears what you recall. "
              "Never remember anything private about a person here.")


class Mem0Config(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)

    base_url: str | None = None
    """A self-hosted mem0 server (`https://mem0.internal`), whose host must be listed in MEM0_ALLOWED_HOSTS;
    unset: mem0's cloud at https://api.mem0.ai."""
    dialect: Literal["cloud", "self_hosted"] | None = None
    """The API the server speaks: `cloud` (mem0's platform API) or `self_hosted` (mem0's open-source REST
    server); unset: `cloud` without a base_url, `self_hosted` with one."""
    top_k: int = Field(default=5, ge=1, le=MAX_RESULTS)
    """Memories `recall` returns when the model does not say."""
    timeout: float = Field(default=10.0, ge=1.0, le=60.0)
    """Seconds one call to mem0 may take."""

    @field_validator("base_url")
    @classmethod
    def _https(cls, value: str | None) -> str | None:
        problem = None if value is None else url_problem(value)
        if problem is not None:
            raise ValueError(f"{problem} (the key travels in a header)")
        return value

    @property
    def speaks(self) -> Dialect:
        return self.dialect or ("cloud" if self.base_url is None else "self_hosted")


def user_id(deployment: str, agent: str, owner: MemoryOwner) -> str:
    """The mem0 `user_id` of one agent's memories in one owner's store."""
    return f"{deployment}:{agent}:{owner.kind}:{owner.key}"


CAPABILITY = CapabilityDef(
    id="memory_mem0", name="Memory (mem0)", category="knowledge",
    description="Semantic memory in a mem0 service (cloud, or self-hosted via base_url): a person's in one-to-one "
                "chats, the room's in groups.",
    tools=(ToolInfo(id="remember", summary="Records one short, self-contained fact in mem0.", side_effecting=True),
           ToolInfo(id="recall", summary="Finds the remembered facts a question is about, by meaning.")),
    config=Mem0Config, key=KeyRequirement(description="a mem0 API key"),
    build=Deferred("capabilities.memory_mem0.build:build"), bind=Deferred("capabilities.memory_mem0.services:bind"),
    personal_store=Deferred("capabilities.memory_mem0.forget:personal_store"))
