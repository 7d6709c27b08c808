"""The tools of `memory_mem0` (`remember`, `recall`) and its builder; the declaration is `__init__.py`."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Annotated, Any

from pydantic import Field
from pydantic_ai import RunContext
from pydantic_ai.capabilities import Capability

from capabilities.memory_mem0 import MAX_RESULTS, MAX_TEXT, NO_STORE, REFUSED, ROOM_SCOPE, Mem0Config, user_id
from capabilities.memory_mem0.access import Mem0Refused, Mem0Unavailable, endpoint
from capabilities.memory_mem0.client import Mem0Client
from capabilities.memory_mem0.services import Mem0Services
from capabilities.run import BuildContext
from capabilities.run.tool_replies import function_toolset, retry_or_text

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True, kw_only=True)
class Mem0Tools:
    client: Mem0Client | None
    """None: the entry's `base_url` is refused (`refusal` says why)."""
    refusal: str
    scope: str | None
    """The mem0 `user_id` of this run's owner; None: no store in this conversation."""
    top_k: int

    async def remember(self, ctx: RunContext[Any], text: str) -> str:
        """Remember one fact for later conversations, in the memory service.

        Use it for what will matter later: a preference, a decision, a fact about ongoing work. Write one
        short, self-contained sentence that makes sense on its own months from now (`Alice prefers answers in
        German.`), not a fragment of this chat.

        Args:
            text: The sentence to remember; up to 2,000 characters.

        Returns:
            `remembered: <text>`; or why nothing was remembered (memory is off here, the service is down or
            refuses this agent).
        """
        if self.scope is None:
            return NO_STORE
        if not text.strip() or len(text) > MAX_TEXT:
            return retry_or_text(ctx, f"Remember one sentence of 1 to {MAX_TEXT:,} characters.")
        problem = await self._call(ctx, lambda client: client.remember(self.scope or "", text.strip()))
        return problem if problem is not None else f"remembered: {text.strip()}"

    async def recall(self, ctx: RunContext[Any], query: str,
                     limit: Annotated[int, Field(ge=1, le=MAX_RESULTS)] | None = None) -> str:
        """Recall remembered facts about a question, found by meaning rather than by exact words.

        Use it before answering anything where earlier conversations could matter: preferences, decisions,
        ongoing work.

        Args:
            query: What you want to know, as a question or a few words (`how does Alice like answers?`).
            limit: How many memories to return, from 1 to 20; when left out, 5 unless the operator changed it.

        Returns:
            One line per memory, most relevant first: `- <memory>`; `Nothing remembered about that.` when
            there is none; or why memory could not be read (off here, the service down or refusing this agent).
        """
        if self.scope is None:
            return NO_STORE
        found: list[str] = []

        async def search(client: Mem0Client) -> None:
            found.extend(m.text for m in await client.recall(self.scope or "", query, top_k=limit or self.top_k))

        problem = await self._call(ctx, search)
        if problem is not None:
            return problem
        return "\n".join(f"- {' '.join(text.split())}" for text in found) or "Nothing remembered about that."

    async def _call(self, ctx: RunContext[Any], call: Callable[[Mem0Client], Awaitable[None]]) -> str | None:
        """None when the call went through; otherwise what the model is told (a retry while mem0 is down)."""
        if self.client is None:
            return REFUSED.format(reason=self.refusal)
        try:
            await call(self.client)
        except Mem0Refused as exc:
            log.warning("mem0 refused: %s", exc)
            return REFUSED.format(reason=exc)
        except Mem0Unavailable as exc:
            log.warning("mem0 unavailable: %s", exc)
            return retry_or_text(ctx, f"The memory service did not answer ({exc}). Try once more; if it fails "
                                      "again, say that memory is unavailable right now.")
        return None


def build(context: BuildContext[Mem0Config]) -> Capability[Any]:
    config, access, owner = context.config, context.bound(Mem0Services).access, context.run.owner
    if context.secret is None:
        raise LookupError("memory_mem0 was built without its key; `gateway check` refuses an entry without a "
                          "secret_id")
    try:
        client: Mem0Client | None = Mem0Client(base_url=endpoint(config.base_url, access), dialect=config.speaks,
                                               key=context.secret, ca_file=access.ca_file, timeout=config.timeout)
        refusal = ""
    except Mem0Refused as exc:
        log.warning("memory_mem0 of agent %r: %s", context.run.agent_name, exc)
        client, refusal = None, str(exc)
    scope = None if owner is None else user_id(access.deployment, context.run.agent_name, owner)
    tools = Mem0Tools(client=client, refusal=refusal, scope=scope, top_k=config.top_k)
    instructions = ROOM_SCOPE if owner is not None and not owner.personal else None
    return Capability(toolsets=[function_toolset([tools.remember, tools.recall], toolset_id="memory_mem0")],
                      instructions=instructions)
