"""Slack's surfaces for AI apps in the local workspace: the status line under a thread, a thread's title and
suggested prompts (`assistant.threads.*`), and streamed messages (`chat.startStream` / `appendStream` /
`stopStream`).

As on Slack: a status shows until the app posts in the thread (or sets ""); a stream is a message of the app's,
empty until text is appended, that takes `markdown_text` until it is stopped; outside DMs it needs the person it
is for (`recipient_user_id`, `recipient_team_id`). A test can refuse every stream (`refuse_streams`) or end one as
Slack does after about five minutes (`expire_stream`): `message_not_in_streaming_state` from then on.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Protocol, cast

JSON = dict[str, Any]
STREAM_TEXT_LIMIT = 12_000
"""Characters of `markdown_text` one streaming call takes."""
LOADING_LIMIT = 10
"""Loading messages a status may rotate through."""


class StreamRefused(Exception):
    """A Web API error answer of these methods: ``{"ok": false, "error": ...}``."""

    def __init__(self, error: str) -> None:
        super().__init__(error)
        self.error = error


class Workspace(Protocol):
    """What the assistant methods need of the local workspace."""

    def member_channel(self, bot_user_id: str, channel_id: str) -> JSON:
        """The channel, where the bot is a member (else `channel_not_found` / `not_in_channel`)."""
        ...

    def find(self, channel_id: str, ts: str) -> JSON | None: ...

    def post_as_app(self, token: str, channel_id: str, text: str, thread_ts: str) -> JSON:
        """A message of the app's in the thread, announced to its members as any post."""
        ...


@dataclass(slots=True)
class SlackAssistant:
    """Statuses, titles, suggested prompts and open streams, by channel and thread."""

    workspace: Workspace
    changed: Callable[[], Awaitable[None]]
    statuses: dict[tuple[str, str], str] = field(default_factory=dict[tuple[str, str], str])
    titles: dict[tuple[str, str], str] = field(default_factory=dict[tuple[str, str], str])
    prompts: dict[tuple[str, str], list[JSON]] = field(default_factory=dict[tuple[str, str], list[JSON]])
    streaming: set[str] = field(default_factory=set[str])
    """The `ts` of every message still streaming."""
    refusal: str | None = None

    def refuse_streams(self, error: str | None = "feature_not_enabled") -> None:
        """Every `chat.startStream` from now on answers `error` (None: streams are taken again)."""
        self.refusal = error

    def expire_stream(self, ts: str) -> None:
        """The stream of message `ts` ends, as Slack ends one after about five minutes."""
        self.streaming.discard(ts)

    def posted(self, channel_id: str, thread_ts: str | None) -> None:
        """An app posted in the thread, which clears its status line."""
        if thread_ts:
            self.statuses.pop((channel_id, thread_ts), None)

    def methods(self) -> dict[str, Callable[[str, str, JSON], Awaitable[JSON]]]:
        """Handlers by method name, each called with the app's token, its bot user id and the call's params."""
        return {"assistant.threads.setStatus": self._set_status, "assistant.threads.setTitle": self._set_title,
                "assistant.threads.setSuggestedPrompts": self._set_prompts, "chat.startStream": self._start,
                "chat.appendStream": self._append, "chat.stopStream": self._stop}

    def _thread(self, bot_user_id: str, params: JSON, channel_key: str = "channel_id") -> tuple[str, str]:
        channel = self.workspace.member_channel(bot_user_id, str(params.get(channel_key, "")))
        thread_ts = str(params.get("thread_ts") or "")
        if not thread_ts or self.workspace.find(channel["id"], thread_ts) is None:
            raise StreamRefused("invalid_thread_ts")
        return channel["id"], thread_ts

    async def _set_status(self, token: str, bot_user_id: str, params: JSON) -> JSON:
        thread = self._thread(bot_user_id, params)
        if "status" not in params:
            raise StreamRefused("invalid_arguments")
        if len(params.get("loading_messages") or []) > LOADING_LIMIT:
            raise StreamRefused("invalid_arguments")
        if params["status"]:
            self.statuses[thread] = str(params["status"])
        else:
            self.statuses.pop(thread, None)
        await self.changed()
        return {}

    async def _set_title(self, token: str, bot_user_id: str, params: JSON) -> JSON:
        self.titles[self._thread(bot_user_id, params)] = str(params.get("title") or "")
        return {}

    async def _set_prompts(self, token: str, bot_user_id: str, params: JSON) -> JSON:
        raw: Any = params.get("prompts")
        prompts = cast(list[Any], raw) if isinstance(raw, list) else []
        shaped = [cast(JSON, p) for p in prompts if isinstance(p, dict)]
        if not prompts or len(shaped) != len(prompts) or not all(p.get("title") and p.get("message") for p in shaped):
            raise StreamRefused("invalid_arguments")
        self.prompts[self._thread(bot_user_id, params)] = shaped
        return {}

    async def _start(self, token: str, bot_user_id: str, params: JSON) -> JSON:
        if self.refusal is not None:
            raise StreamRefused(self.refusal)
        channel_id, thread_ts = self._thread(bot_user_id, params, "channel")
        direct = channel_id.startswith("D")
        if not direct and not (params.get("recipient_user_id") and params.get("recipient_team_id")):
            raise StreamRefused("missing_recipient_user_id" if not params.get("recipient_user_id")
                                else "missing_recipient_team_id")
        message = self.workspace.post_as_app(token, channel_id, _text(params), thread_ts)
        self.streaming.add(message["ts"])
        return {"channel": channel_id, "ts": message["ts"]}

    async def _append(self, token: str, bot_user_id: str, params: JSON) -> JSON:
        message = self._streaming(bot_user_id, params)
        message["text"] += _text(params)
        await self.changed()
        return {"channel": params["channel"], "ts": message["ts"]}

    async def _stop(self, token: str, bot_user_id: str, params: JSON) -> JSON:
        message = self._streaming(bot_user_id, params)
        message["text"] += _text(params)
        blocks: Any = params.get("blocks")
        if isinstance(blocks, list):  # shown at the foot of the finished message (Slack's feedback block)
            message["blocks"] = cast(list[Any], blocks)
        self.streaming.discard(message["ts"])
        await self.changed()
        return {"channel": params["channel"], "ts": message["ts"], "message": dict(message)}

    def _streaming(self, bot_user_id: str, params: JSON) -> JSON:
        channel = self.workspace.member_channel(bot_user_id, str(params.get("channel", "")))
        message = self.workspace.find(channel["id"], str(params.get("ts", "")))
        if message is None:
            raise StreamRefused("message_not_found")
        if message["ts"] not in self.streaming:
            raise StreamRefused("message_not_in_streaming_state")
        return message


def _text(params: JSON) -> str:
    text = str(params.get("markdown_text") or "")
    if len(text) > STREAM_TEXT_LIMIT:
        raise StreamRefused("msg_too_long")
    return text
