"""Approval buttons, a question's option buttons, feedback buttons and a live reply's Stop button on Mattermost:
interactive message actions whose `context` carries our own HMAC; and the interactive dialog that takes a reason
for denying, whose `state` carries it too.

Mattermost does not sign the call it makes to an action's integration URL (server
`model/integration_action.go`), so every button's context is signed with the bot's stored secret
and a click is accepted only when the signature and the channel match. The server strips
`integration` from posts sent to clients, so nobody in the channel sees the context. A dialog's submission
(`type: dialog_submission`, sent by the server to the dialog's `url`) echoes the `state` it was opened with and
names the person who submitted it (`user_id`, from their session): it is accepted only when the state is ours,
unchanged, and names that person and that channel.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, get_args

from adapters.base import REASON_LIMIT, ApprovalCard, ChatAddress, QuestionCard, Verb, VerificationError
from adapters.wire import is_object, optional_text_id, text_id

_STYLES: dict[Verb, str] = {"approve": "primary", "deny": "danger"}
CHOICE_BUTTONS = 10
"""Option buttons one question shows; an attachment's buttons wrap, and past ten a numbered list reads better."""
REASON_DIALOG = "approval:reason"
"""The `callback_id` of the dialog that takes a reason for denying."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Click:
    """A button call, read: the signed context and who clicked where."""

    approval_id: str
    verb: Verb
    channel_id: str
    thread_id: str | None
    is_direct: bool
    post_id: str
    user_id: str
    user_name: str
    trigger_id: str
    choice: int | None = None
    """A question's option button: its position (`approval_id` is then the question's id)."""


def approval_props(card: ApprovalCard, address: ChatAddress, *, url: str, key: str) -> dict[str, Any]:
    """The post's `props`: one attachment with Approve and Deny buttons that call `url`."""
    actions: list[dict[str, Any]] = []
    for verb, name in card.buttons:
        context = {"approval_id": card.approval_id, "verb": verb, "channel_id": address.channel_id,
                   "thread_id": address.thread_id or "", "direct": address.is_direct}
        actions.append({"id": verb.replace("_", ""), "type": "button", "name": name,
                        "style": _STYLES.get(verb, "default"),
                        "integration": {"url": url, "context": {**context, "sig": _signature(context, key)}}})
    return {"attachments": [{"text": "Approve or deny this call:", "actions": actions}]}


def question_props(card: QuestionCard, address: ChatAddress, *, url: str, key: str) -> dict[str, Any]:
    """The post's `props`: one attachment with a button per option, each calling `url` with its signed position."""
    actions: list[dict[str, Any]] = []
    for index, choice in enumerate(card.choices):
        context = {"approval_id": card.question_id, "verb": "choose", "choice": index,
                   "channel_id": address.channel_id, "thread_id": address.thread_id or "", "direct": address.is_direct}
        actions.append({"id": f"choice{index}", "type": "button", "name": choice, "style": "default",
                        "integration": {"url": url, "context": {**context, "sig": _signature(context, key)}}})
    return {"attachments": [{"text": "Pick one:", "actions": actions}]}


def feedback_props(run_id: int, address: ChatAddress, *, url: str, key: str) -> dict[str, Any]:
    """An answer's `props`: one attachment with 👍 and 👎, signed as approval buttons are, naming the run."""
    actions: list[dict[str, Any]] = []
    for verb, name in (("thumbs_up", "👍"), ("thumbs_down", "👎")):
        context = {"approval_id": str(run_id), "verb": verb, "channel_id": address.channel_id,
                   "thread_id": address.thread_id or "", "direct": address.is_direct}
        actions.append({"id": verb.replace("_", ""), "type": "button", "name": name, "style": "default",
                        "integration": {"url": url, "context": {**context, "sig": _signature(context, key)}}})
    return {"attachments": [{"text": "", "actions": actions}]}


def stop_props(address: ChatAddress, *, url: str, key: str) -> dict[str, Any]:
    """A live reply's `props` while its turn runs: one Stop button, signed like an approval button (no approval)."""
    context = {"approval_id": "", "verb": "stop", "channel_id": address.channel_id,
               "thread_id": address.thread_id or "", "direct": address.is_direct}
    action = {"id": "stop", "type": "button", "name": "⏹ Stop", "style": "default",
              "integration": {"url": url, "context": {**context, "sig": _signature(context, key)}}}
    return {"attachments": [{"actions": [action]}]}


def reason_dialog(card: ApprovalCard, click: Click, *, key: str) -> dict[str, Any]:
    """The dialog a "Deny with reason…" click opens for its clicker: one text area, and a signed `state` naming the
    card, its conversation and that person."""
    state = {"approval_id": card.approval_id, "channel_id": click.channel_id, "thread_id": click.thread_id or "",
             "direct": click.is_direct, "post_id": click.post_id, "user_id": click.user_id,
             "trigger_id": click.trigger_id}
    return {"callback_id": REASON_DIALOG, "title": "Deny with a reason", "submit_label": "Deny",
            "introduction_text": f"Why deny `{card.tool_name}`? The agent reads your words as your reason.",
            "elements": [{"display_name": "Reason", "name": "reason", "type": "textarea", "optional": False,
                          "max_length": REASON_LIMIT}],
            "notify_on_cancel": False, "state": json.dumps({**state, "sig": _signature(state, key)})}


def is_submission(payload: Mapping[str, Any]) -> bool:
    return payload.get("type") == "dialog_submission" and payload.get("callback_id") == REASON_DIALOG


def check_submission(payload: Mapping[str, Any], key: str | None) -> dict[str, Any]:
    """The dialog's state, once checked: ours, unchanged, submitted by the person it was opened for, in its channel.
    Raises `VerificationError` otherwise."""
    if not key:
        raise VerificationError("no key to check reason dialogs with; every submission is refused")
    try:
        state = json.loads(str(payload.get("state") or ""))
    except ValueError:
        raise VerificationError("reason dialog submission without a readable state") from None
    if not is_object(state):
        raise VerificationError("reason dialog submission whose state is not an object")
    checked = dict(state)
    given = str(checked.pop("sig", ""))
    if not hmac.compare_digest(given.encode(), _signature(checked, key).encode()):
        raise VerificationError("reason dialog state has a missing or wrong signature")
    if checked.get("user_id") != payload.get("user_id"):
        raise VerificationError("reason dialog submitted by someone it was not opened for")
    if checked.get("channel_id") != payload.get("channel_id"):
        raise VerificationError("reason dialog submitted outside the channel of its card")
    return checked


def is_click(payload: Mapping[str, Any]) -> bool:
    return is_object(payload.get("context")) and "post_id" in payload


def check_click(payload: Mapping[str, Any], key: str | None) -> None:
    """Raises `VerificationError` unless the context is ours, unchanged, and clicked in its own channel."""
    if not key:
        raise VerificationError("no key to check approval buttons with; every click is refused")
    context = dict(payload.get("context") or {})
    given = str(context.pop("sig", ""))
    if not hmac.compare_digest(given.encode(), _signature(context, key).encode()):
        raise VerificationError("approval button context has a missing or wrong signature")
    if context.get("channel_id") != payload.get("channel_id"):
        raise VerificationError("approval button was clicked outside the channel it was posted in")


def read_click(payload: Mapping[str, Any]) -> Click | None:
    """The click in `payload`, or None when its context is not one of our approval buttons.

    Raises `MalformedPayload` for a post, user or trigger id that is not text (the context alone is signed)."""
    context = payload.get("context")
    if not is_object(context) or context.get("verb") not in get_args(Verb):
        return None
    return Click(approval_id=str(context.get("approval_id") or ""), verb=context["verb"],
                 channel_id=str(context.get("channel_id") or ""), thread_id=str(context.get("thread_id") or "") or None,
                 is_direct=context.get("direct") is True,
                 post_id=text_id(payload.get("post_id"), "button call's post_id"),
                 user_id=text_id(payload.get("user_id"), "button call's user_id"),
                 user_name=optional_text_id(payload.get("user_name"), "button call's user_name") or "",
                 trigger_id=optional_text_id(payload.get("trigger_id"), "button call's trigger_id") or "",
                 choice=choice if isinstance(choice := context.get("choice"), int) and not isinstance(choice, bool)
                 else None)


def _signature(context: Mapping[str, Any], key: str) -> str:
    body = json.dumps(dict(context), sort_keys=True, separators=(",", ":"))
    return hmac.new(key.encode(), body.encode(), hashlib.sha256).hexdigest()
