"""The one payload shape every Mattermost transport hands to the parser: the WebSocket `posted` event.

The event stream sends it as is; the outgoing webhook and the catch-up after a reconnect rebuild it
from REST posts (`posted_event`, `replayed_events`), so what counts as a message is decided once.
Wire facts (server `app/notification.go`): `data.post` and `data.mentions` are JSON *strings*;
`mentions` is absent when nobody is mentioned and lists every member on `@channel`/`@all`/`@here`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any
from urllib.parse import parse_qs

from adapters.base import FileRef, MalformedPayload
from adapters.wire import file_ref, is_array, is_object, objects_in, optional_text_id, read_json, read_json_object

POSTED = "posted"
FORM_FIELDS = 50
"""Fields an outgoing webhook form may have; Mattermost sends about fifteen."""
DIRECT = "D"
_USERNAME_END = r"(?![\w-]|\.[\w-])"
"""A mention ends where the username does; a trailing period is punctuation, not part of the name."""
_ROOM_HANDLES = re.compile(rf"(?<![\w.@-])@(channel|all|here|everyone){_USERNAME_END}", re.IGNORECASE)


@dataclass(frozen=True, slots=True, kw_only=True)
class Posted:
    """A `posted` event, read."""

    post_id: str
    channel_id: str
    channel_type: str
    """`O` public, `P` private, `D` direct, `G` group message."""
    user_id: str
    root_id: str
    """The thread root; empty for a top-level post."""
    message: str
    create_at: int
    sender_name: str
    mentions: frozenset[str]
    trigger_word: str
    """The outgoing webhook's trigger word that fired; empty on other transports."""
    from_bot: bool
    system: bool
    """A system message (join, leave, header change) or a deleted post."""
    bot_joined_later: bool
    """Replayed after a reconnect, and older than the bot's first part in its thread."""
    files: tuple[FileRef, ...]


def read_posted(payload: Mapping[str, Any]) -> Posted | None:
    """The `posted` event in `payload`; None for any other event. Raises `MalformedPayload`."""
    if payload.get("event") != POSTED:
        return None
    data = payload.get("data")
    if not is_object(data):
        raise MalformedPayload("posted event without a data object")
    post = _decoded(data.get("post"), "data.post")
    if not is_object(post) or not all(isinstance(post.get(k), str) and post.get(k)
                                                for k in ("id", "channel_id", "user_id")):
        raise MalformedPayload("posted event whose post lacks id, channel_id or user_id")
    mentions = _decoded(data.get("mentions") or "[]", "data.mentions")
    props: Mapping[str, Any] = found if is_object(found := post.get("props")) else {}
    return Posted(
        post_id=post["id"], channel_id=post["channel_id"], channel_type=str(data.get("channel_type") or ""),
        user_id=post["user_id"], root_id=optional_text_id(post.get("root_id"), "posted event's root_id") or "",
        message=str(post.get("message") or ""),
        create_at=integer(post.get("create_at")), sender_name=str(data.get("sender_name") or ""),
        mentions=frozenset(m for m in mentions if isinstance(m, str)) if is_array(mentions) else frozenset(),
        trigger_word=str(data.get("trigger_word") or ""),
        from_bot=str(props.get("from_bot", "")).lower() == "true" or str(props.get("from_webhook", "")) == "true",
        system=bool(post.get("type")) or bool(post.get("delete_at")),
        bot_joined_later=data.get("bot_joined_later") is True, files=_files(post))


def posted_event(post: Mapping[str, Any], *, channel_type: str, sender_name: str, mentions: Iterable[str] = (),
                 trigger_word: str = "", bot_joined_later: bool = False) -> dict[str, Any]:
    """Rebuild the event the WebSocket would have sent for `post`, a REST post object."""
    data: dict[str, Any] = {"channel_type": channel_type, "post": json.dumps(dict(post)), "sender_name": sender_name}
    listed = sorted(set(mentions))
    if listed:
        data["mentions"] = json.dumps(listed)
    if trigger_word:
        data["trigger_word"] = trigger_word
    if bot_joined_later:
        data["bot_joined_later"] = True
    return {"event": POSTED, "data": data, "broadcast": {"channel_id": post.get("channel_id", "")}}


def replayed_events(posts: Iterable[Mapping[str, Any]], *, channel_types: Mapping[str, str],
                    usernames: Mapping[str, str], bot_user_id: str, bot_handle: str | None) -> list[dict[str, Any]]:
    """Events for posts fetched after a reconnect, oldest first.

    A post older than the bot's first part in its thread (the bot's own post, or one naming it) is
    flagged, so that chatter from before the bot was asked is not answered as a thread follow-up.
    """
    ordered = sorted(posts, key=lambda post: integer(post.get("create_at")))
    joined: dict[str, int] = {}
    for post in ordered:
        if post.get("user_id") == bot_user_id or names(str(post.get("message") or ""), bot_handle):
            joined.setdefault(str(post.get("root_id") or post.get("id")), integer(post.get("create_at")))
    events: list[dict[str, Any]] = []
    for post in ordered:
        thread = str(post.get("root_id") or post.get("id"))
        named = names(str(post.get("message") or ""), bot_handle)
        username = usernames.get(str(post.get("user_id")))
        events.append(posted_event(
            post, channel_type=channel_types.get(str(post.get("channel_id")), ""),
            sender_name=f"@{username}" if username else "", mentions=[bot_user_id] if named else [],
            bot_joined_later=integer(post.get("create_at")) < joined.get(thread, 0)))
    return events


def names(message: str, handle: str | None) -> bool:
    """True when `message` @-mentions `handle` (case-insensitive, as Mattermost matches)."""
    return bool(handle) and _handle_pattern(handle).search(message) is not None


def names_a_room(message: str) -> bool:
    """`@channel`, `@all`, `@here`, `@everyone`: announcements, never an address to the bot."""
    return _ROOM_HANDLES.search(message) is not None


def without_address(message: str, handle: str | None, trigger_word: str) -> str:
    """The words the model reads: the bot's @-mention and a leading trigger word removed."""
    text = message.strip()
    if trigger_word and text.lower().startswith(trigger_word.lower()):
        text = text[len(trigger_word):]
    if handle:
        text = _handle_pattern(handle).sub("", text)
    return re.sub(r"[ \t]{2,}", " ", text).strip()


def read_webhook_fields(headers: Mapping[str, str], body: bytes) -> dict[str, str]:
    """An outgoing webhook's fields, sent as JSON or as a form as its creator chose. Raises `MalformedPayload`."""
    content_type = {k.lower(): v for k, v in headers.items()}.get("content-type", "").lower()
    text = body.decode("utf-8", errors="replace").strip()
    if "json" in content_type or (not content_type.startswith("application/x-www-form") and text.startswith("{")):
        fields = read_json_object(text, "outgoing webhook body")
        return {str(k): "" if v is None else str(v) for k, v in fields.items()}
    try:
        form = parse_qs(text, keep_blank_values=True, max_num_fields=FORM_FIELDS)
    except ValueError:
        raise MalformedPayload(f"outgoing webhook form has more than {FORM_FIELDS} fields") from None
    if not form:
        raise MalformedPayload("outgoing webhook body is neither JSON nor a form")
    return {k: v[0] for k, v in form.items()}


@lru_cache(maxsize=64)
def _handle_pattern(handle: str) -> re.Pattern[str]:
    return re.compile(rf"(?<![\w.@-])@{re.escape(handle)}{_USERNAME_END}", re.IGNORECASE)


def _decoded(value: Any, where: str) -> Any:
    return read_json(value, where) if isinstance(value, str) else value


def integer(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _files(post: Mapping[str, Any]) -> tuple[FileRef, ...]:
    metadata: Mapping[str, Any] = found if is_object(found := post.get("metadata")) else {}
    described = {str(f.get("id")): f for f in objects_in(metadata.get("files"))}
    ids: list[Any] = given if is_array(given := post.get("file_ids")) else list(described)
    files: list[FileRef] = []
    for file_id in ids:
        info: Mapping[str, Any] = described.get(str(file_id), {})
        ref = file_ref(file_id=file_id, name=info.get("name"), mime_type=info.get("mime_type"), size=info.get("size"))
        if ref is not None:
            files.append(ref)
    return tuple(files)
