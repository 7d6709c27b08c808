"""The Slack Web API calls the adapter makes, as a typed protocol that slack-sdk's `AsyncWebClient` satisfies.

slack-sdk types each method's named arguments but leaves the catch-all `**kwargs` unannotated, so its methods are
partly unknown to a strict type check. This protocol names the arguments the adapter passes and no more; the
client is checked against it where it is built, so a renamed or retyped argument still fails the check.
"""

from __future__ import annotations

from collections.abc import Awaitable, Sequence
from typing import Any, Protocol

import aiohttp
from slack_sdk.errors import SlackApiError

from adapters.wire import is_object


class SlackAnswer(Protocol):
    """A Web API answer (slack-sdk's `AsyncSlackResponse`): the JSON body's fields, untrusted as every payload is."""

    status_code: int

    def get(self, key: str, default: Any = None) -> Any: ...

    def __getitem__(self, key: str) -> Any: ...


Blocks = Sequence[dict[str, Any]]


class SlackWebApi(Protocol):
    token: str | None
    session: aiohttp.ClientSession | None

    def auth_test(self) -> Awaitable[SlackAnswer]: ...

    def apps_connections_open(self, *, app_token: str) -> Awaitable[SlackAnswer]: ...

    def chat_postMessage(self, *, channel: str, text: str | None = None, blocks: Blocks | None = None,
                         thread_ts: str | None = None, unfurl_links: bool | None = None,
                         unfurl_media: bool | None = None) -> Awaitable[SlackAnswer]: ...

    def chat_update(self, *, channel: str, ts: str, text: str | None = None,
                    blocks: Blocks | None = None) -> Awaitable[SlackAnswer]: ...

    def chat_startStream(self, *, channel: str, thread_ts: str, markdown_text: str | None = None,
                         recipient_team_id: str | None = None,
                         recipient_user_id: str | None = None) -> Awaitable[SlackAnswer]: ...

    def chat_appendStream(self, *, channel: str, ts: str, markdown_text: str | None = None) -> Awaitable[SlackAnswer]:
        ...

    def chat_stopStream(self, *, channel: str, ts: str, markdown_text: str | None = None,
                        blocks: Blocks | None = None) -> Awaitable[SlackAnswer]: ...

    def assistant_threads_setStatus(self, *, channel_id: str, thread_ts: str, status: str,
                                    loading_messages: list[str] | None = None) -> Awaitable[SlackAnswer]: ...

    def assistant_threads_setTitle(self, *, channel_id: str, thread_ts: str, title: str) -> Awaitable[SlackAnswer]:
        ...

    def assistant_threads_setSuggestedPrompts(self, *, channel_id: str, prompts: list[dict[str, str]],
                                              thread_ts: str | None = None,
                                              title: str | None = None) -> Awaitable[SlackAnswer]: ...

    def chat_postEphemeral(self, *, channel: str, user: str, text: str | None = None,
                           thread_ts: str | None = None) -> Awaitable[SlackAnswer]: ...

    def files_upload_v2(self, *, filename: str | None = None, file: bytes | None = None, title: str | None = None,
                        channel: str | None = None, initial_comment: str | None = None,
                        thread_ts: str | None = None) -> Awaitable[SlackAnswer]: ...

    def files_info(self, *, file: str) -> Awaitable[SlackAnswer]: ...

    def views_open(self, *, trigger_id: str, view: dict[str, Any]) -> Awaitable[SlackAnswer]: ...

    def users_info(self, *, user: str) -> Awaitable[SlackAnswer]: ...

    def reactions_add(self, *, channel: str, timestamp: str, name: str) -> Awaitable[SlackAnswer]: ...

    def reactions_remove(self, *, channel: str, timestamp: str, name: str) -> Awaitable[SlackAnswer]: ...

    def conversations_info(self, *, channel: str, include_num_members: bool | None = None) -> Awaitable[SlackAnswer]:
        ...

    def conversations_members(self, *, channel: str, cursor: str | None = None,
                              limit: int | None = None) -> Awaitable[SlackAnswer]: ...

    def conversations_list(self, *, cursor: str | None = None, exclude_archived: bool | None = None,
                           limit: int | None = None, types: str | None = None) -> Awaitable[SlackAnswer]: ...

    def conversations_history(self, *, channel: str, cursor: str | None = None, limit: int | None = None,
                              oldest: str | None = None) -> Awaitable[SlackAnswer]: ...

    def conversations_replies(self, *, channel: str, ts: str, cursor: str | None = None, limit: int | None = None,
                              oldest: str | None = None) -> Awaitable[SlackAnswer]: ...


def next_cursor(page: SlackAnswer) -> str | None:
    """The cursor of a paged answer's next page; None on the last page."""
    metadata = page.get("response_metadata")
    cursor = metadata.get("next_cursor") if is_object(metadata) else None
    return cursor if isinstance(cursor, str) and cursor else None


def refusal_answer(exc: SlackApiError) -> SlackAnswer:
    """The answer a refused call came with (`error` names the refusal)."""
    answer: SlackAnswer = exc.response  # pyright: ignore[reportUnknownMemberType] - slack-sdk leaves it unannotated
    return answer
