"""The one Mattermost parser: every transport's shape reads the same; nothing it is handed makes it raise."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import pytest

from adapters.base import BotIdentity, Inbound, MalformedPayload
from adapters.mattermost.adapter import MattermostAdapter
from adapters.mattermost.events import posted_event, replayed_events

BOT = BotIdentity(user_id="botid", handle="helper", display_name="Helper")


def adapter() -> MattermostAdapter:
    parser = MattermostAdapter(bot_id="mm", token="t" * 26, server_url="https://chat.example.org")
    parser.identity = BOT
    return parser


def a_post(message: str, *, post_id: str = "p1", root_id: str = "", user_id: str = "alice") -> dict[str, Any]:
    return {"id": post_id, "channel_id": "c1", "user_id": user_id, "root_id": root_id, "message": message,
            "create_at": 1_700_000_000_000, "type": "", "props": {}}


def socket_event(post: dict[str, Any], *, channel_type: str = "O", mentions: list[str] | None = None) -> dict:
    data = {"channel_type": channel_type, "post": json.dumps(post), "sender_name": "@alice"}
    if mentions:
        data["mentions"] = json.dumps(mentions)
    return {"event": "posted", "data": data, "broadcast": {"channel_id": "c1"}, "seq": 4}


@dataclass(frozen=True, slots=True, kw_only=True)
class Case:
    id: str
    message: str
    mentions: tuple[str, ...] = ()
    addressed: bool


CASES = [
    Case(id="mention", message="@helper what now?", mentions=("botid",), addressed=True),
    Case(id="mention-at-sentence-end", message="thanks @helper.", mentions=("botid",), addressed=True),
    Case(id="mention-key-only", message="hey Helper", mentions=("botid",), addressed=True),
    Case(id="someone-else", message="@helperbot deploy", addressed=False),
    Case(id="an-email-address", message="write to ops@helper.example", addressed=False),
    Case(id="at-channel-lists-everyone", message="@channel release at 5", mentions=("botid", "bob"), addressed=False),
    Case(id="at-here", message="@here anyone?", mentions=("botid",), addressed=False),
    Case(id="at-channel-and-the-bot", message="@channel and @helper: notes", mentions=("botid",), addressed=True),
]


@pytest.mark.parametrize("case", [pytest.param(c, id=c.id) for c in CASES])
def test_a_channel_post_is_addressed_only_by_a_mention_of_this_bot(case: Case) -> None:
    parsed = adapter().parse(socket_event(a_post(case.message), mentions=list(case.mentions)))
    assert isinstance(parsed, Inbound)
    assert (parsed.addressed is not None) is case.addressed


def test_the_three_transports_share_one_logical_id_and_one_conversation() -> None:
    post = a_post("@helper hi", post_id="p2", root_id="p1")
    parser = adapter()
    live = parser.parse(socket_event(post, mentions=["botid"]))
    webhook = parser.parse(posted_event(post, channel_type="O", sender_name="@alice", trigger_word="@helper"))
    [replayed] = [parser.parse(e) for e in replayed_events([post], channel_types={"c1": "O"},
                                                           usernames={"alice": "alice"}, bot_user_id="botid",
                                                           bot_handle="helper")]
    assert isinstance(live, Inbound) and isinstance(webhook, Inbound) and isinstance(replayed, Inbound)
    assert live.logical_id == webhook.logical_id == replayed.logical_id == "mattermost:mm:c1:p2"
    assert live.address == webhook.address == replayed.address
    assert live.address.thread_id == "p1" and live.text == webhook.text == replayed.text == "hi"


def test_own_posts_other_bots_and_system_messages_are_ignored() -> None:
    parser = adapter()
    own = a_post("@helper hello", user_id="botid")
    other_bot = {**a_post("@helper ping"), "props": {"from_bot": "true"}}
    joined = {**a_post("alice joined the channel"), "type": "system_join_channel"}
    assert [parser.parse(socket_event(p, mentions=["botid"])) for p in (own, other_bot, joined)] == [None] * 3


@pytest.mark.parametrize("payload", [
    {"event": "posted"}, {"event": "posted", "data": {"post": "{not json"}},
    {"event": "posted", "data": {"post": json.dumps({"id": "p"})}},
    {"event": "posted", "data": {"post": "[]"}},
], ids=["no-data", "post-not-json", "post-without-channel", "post-not-an-object"])
def test_a_broken_posted_event_is_malformed(payload: dict[str, Any]) -> None:
    with pytest.raises(MalformedPayload):
        adapter().parse(payload)
