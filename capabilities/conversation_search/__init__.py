"""`conversation_search`: find an earlier conversation of the person being answered by what was said, and open it.

The corpus is theirs alone, bound server-side (`RunFacts.conversations`): their direct messages with any
bot of this deployment through every linked identity, and the group threads they spoke in and are still a
member of, checked with the platform when asked. In a group chat both tools refuse, since an answer from a
personal corpus would read one person's conversations aloud to the room. Switched off deployment-wide by
not granting the `conversations:read` scope.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from capabilities.registry import CapabilityDef, Deferred, ToolInfo

MAX_RESULTS = 10
MAX_WINDOW = 100
GROUP_REFUSAL = ("Conversation search only works in a one-to-one chat. Its results are one person's own "
                 "conversations, and answering from them here would read those conversations aloud to everyone "
                 "in this group. Tell the person to ask in a direct message with the bot.")
NOT_READABLE = ("Thread {thread} is not one of this person's conversations, or they are no longer a member of the "
                "room it was in. Use a thread number from search_conversations.")
UNCHECKED = ("{count} more matching group thread(s) were left out: this search could not confirm with the chat "
             "platform that this person is still a member there (it did not answer, or too many group threads "
             "matched). A narrower query, or searching again later, may show them.")


class ConversationSearchConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)

    default_results: int = Field(default=5, ge=1, le=MAX_RESULTS)
    """Threads `search_conversations` returns when the model does not say."""
    window: int = Field(default=30, ge=5, le=MAX_WINDOW)
    """Turns `read_conversation` returns at a time."""


CAPABILITY = CapabilityDef(
    id="conversation_search", name="Conversation search", category="knowledge",
    description="Finds an earlier conversation of the person being answered by what was said in it, and opens it; "
                "one-to-one chats only.",
    tools=(ToolInfo(id="search_conversations", summary="Finds earlier conversations by what was said in them."),
           ToolInfo(id="read_conversation", summary="Opens one earlier conversation, a window of turns at a time.")),
    config=ConversationSearchConfig, scopes=frozenset({"conversations:read"}),
    build=Deferred("capabilities.conversation_search.build:build"),
    bind=Deferred("capabilities.conversation_search.services:bind"))
