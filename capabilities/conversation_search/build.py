"""The tools and builder of `conversation_search`, imported with its first build; its declaration (config, tools,
scopes) is `capabilities/conversation_search/__init__.py`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any

from pydantic import Field
from pydantic_ai import RunContext
from pydantic_ai.capabilities import Capability

from capabilities.conversation_search import (
    GROUP_REFUSAL,
    MAX_RESULTS,
    NOT_READABLE,
    UNCHECKED,
    ConversationSearchConfig,
)
from capabilities.conversation_search.corpus import ConversationCorpus, CorpusUnavailable, ThreadWindow
from capabilities.conversation_search.services import ConversationSearchServices
from capabilities.run import BuildContext
from capabilities.run.tool_replies import function_toolset, retry_or_text
from storage.fulltext import QueryProblem


@dataclass(frozen=True, slots=True, kw_only=True)
class ConversationTools:
    corpus: ConversationCorpus
    direct: bool
    """The run answers one person in a one-to-one chat; anywhere else both tools refuse."""
    default_results: int
    window: int

    async def search_conversations(self, ctx: RunContext[Any], query: str,
                                   limit: Annotated[int, Field(ge=1, le=MAX_RESULTS)] | None = None) -> str:
        """Find earlier conversations of the person you are talking with by what was said in them.

        Use it when they refer to something discussed before ("what did we decide about Q3 pricing?") that
        is not in this conversation or your memory. It searches their own direct messages with the bots of
        this gateway and the group threads they took part in and still belong to. Words are matched whole
        and case-insensitively but not stemmed or translated: `meeting` does not find `meetings`, so when
        nothing is found, try other word forms or synonyms before concluding nothing was said.

        Args:
            query: Words to look for. `"exact phrase"` in double quotes, `or` between alternatives, and a
                leading `-` to leave out turns with a word (`pricing -draft`); other words must all occur
                in one turn.
            limit: How many threads to return, from 1 to 10; when left out, 5 unless the operator changed it.

        Returns:
            One block per thread, best first: `[thread N] title` then `where · last activity YYYY-MM-DD HH:MM
            UTC · K matching turn(s)`, the strongest passage with the matched words in **bold**, and the
            turn it is at, where `read_conversation` can open the thread. `No earlier conversation matches …`
            when there is none; a last line when matching group threads were left out because their
            membership could not be confirmed in this search; a refusal in a group chat.
        """
        if not self.direct:
            return GROUP_REFUSAL
        try:
            found = await self.corpus.search(query, limit=limit or self.default_results)
        except QueryProblem as problem:
            return retry_or_text(ctx, str(problem))
        blocks = [f"[thread {hit.thread}] {hit.title or '(no words)'}\n{hit.where} · last activity "
                  f"{hit.last_activity:%Y-%m-%d %H:%M} UTC · {hit.matching_turns} matching turn(s)\n"
                  f"> {hit.passage}\n(turn {hit.position}: read_conversation thread={hit.thread} "
                  f"start={hit.position} opens it there)" for hit in found.hits]
        if not blocks:
            blocks.append(f"No earlier conversation matches {query!r}. Words are matched whole and not stemmed: "
                          "try other word forms or synonyms.")
        if found.unchecked:
            blocks.append(UNCHECKED.format(count=found.unchecked))
        return "\n\n".join(blocks)

    async def read_conversation(self, ctx: RunContext[Any], thread: int,
                                start: Annotated[int, Field(ge=1)] = 1) -> str:
        """Open one earlier conversation found with `search_conversations` and read its turns in order.

        Use it after a search, to read what was actually said around the passage before answering from it.

        Args:
            thread: The thread number from a `search_conversations` result (`[thread N]`).
            start: The position of the first turn to read, 1 for the beginning; a long thread comes a window
                at a time, and each answer says which `start` reads on.

        Returns:
            Markdown: a heading with the thread's title, where it was and its last activity, which turns
            are shown of how many, then one paragraph per turn in the order written, `USER:` for the person
            (with their name where several people spoke) and `AI:` for the assistant, and finally how to
            read the next window. A refusal in a group chat, or when the thread is not this person's to read.
        """
        if not self.direct:
            return GROUP_REFUSAL
        try:
            window = await self.corpus.read(thread, start=start, count=self.window)
        except CorpusUnavailable:
            return retry_or_text(ctx, f"The chat platform could not confirm just now that this person may still "
                                      f"read thread {thread}. Try once more; if it fails again, say it is "
                                      "unavailable at the moment.")
        if window is None:
            return NOT_READABLE.format(thread=thread)
        if not window.turns:
            return retry_or_text(ctx, f"Thread {thread} has {window.total} turn(s); start must be between 1 and "
                                      f"{window.total}.")
        return transcript(window)


def transcript(window: ThreadWindow) -> str:
    end = window.start + len(window.turns) - 1
    lines = [f"# {window.title or f'Thread {window.thread}'}",
             f"{window.where} · last activity {window.last_activity:%Y-%m-%d %H:%M} UTC · turns "
             f"{window.start} to {end} of {window.total}", ""]
    for turn in window.turns:
        label = "AI" if turn.role == "assistant" else (f"USER ({turn.speaker})" if window.several_people else "USER")
        # continuation lines are indented, so a turn's own text cannot start a line that reads as another turn
        lines += [f"{label}: " + "\n  ".join(turn.text.strip().splitlines() or [""]), ""]
    if end < window.total:
        lines.append(f"Turns {end + 1} to {window.total} follow: call read_conversation with thread={window.thread} "
                     f"and start={end + 1}.")
    else:
        lines.append("This is the end of the thread.")
    return "\n".join(lines)


def build(context: BuildContext[ConversationSearchConfig]) -> Capability[Any]:
    corpus = context.bound(ConversationSearchServices).corpus(context.speaker, context.run.address.conversation_key)
    tools = ConversationTools(corpus=corpus, direct=context.run.address.is_direct,
                              default_results=context.config.default_results, window=context.config.window)
    return Capability(toolsets=[function_toolset([tools.search_conversations, tools.read_conversation],
                                                 toolset_id="conversation_search")])
