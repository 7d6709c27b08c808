"""What `conversation_search` binds when the gateway starts: the stored conversations, and each bot's directory
to tell which rooms a person may still read."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from adapters.base import Speaker
from capabilities.conversation_search.corpus import ConversationCorpus
from capabilities.conversation_search.store import PersonalConversations
from capabilities.run import Deployment


@dataclass(frozen=True, slots=True, kw_only=True)
class ConversationSearchServices:
    corpus: Callable[[Speaker, str], ConversationCorpus]
    """The earlier conversations of one speaker, the current one (its conversation key) left out."""


def bind(deployment: Deployment) -> ConversationSearchServices:
    def corpus(speaker: Speaker, current: str) -> ConversationCorpus:
        return PersonalConversations(deployment.db, deployment.directories, speaker=speaker,
                                     current_conversation=current)
    return ConversationSearchServices(corpus=corpus)
