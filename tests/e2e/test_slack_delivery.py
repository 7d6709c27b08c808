"""Delivery guarantees on Slack: signed requests only, one answer per post, limits honoured, sockets held."""

from __future__ import annotations

import itertools
import json
import logging
import time
from dataclasses import replace

import httpx
import pytest
from sqlalchemy import func, select

from storage.db import Database
from storage.models import InboxRow
from tests.support.fakes.slack import FakeSlack, SlackApp
from tests.support.harness import FAST
from tests.support.scripted import echoes, scripted
from tests.support.slack_harness import SlackBot, running_gateway


async def inbox_count(database_url: str) -> int:
    db = Database(database_url)
    try:
        async with db.session() as session:
            return int((await session.execute(select(func.count()).select_from(InboxRow))).scalar_one())
    finally:
        await db.close()


def a_dm_event(slack: FakeSlack, app: SlackApp, user: dict, channel: dict, text: str) -> bytes:
    event = {"type": "message", "channel": channel["id"], "user": user["id"], "text": text, "ts": "1700000000.000100",
             "channel_type": "im", "team": slack.team_id}
    return json.dumps({"type": "event_callback", "team_id": slack.team_id, "api_app_id": app.app_id,
                       "event_id": "Ev0FORGED", "event_time": int(time.time()), "event": event}).encode()


@pytest.mark.parametrize("transport", ["socket", "http"])
async def test_redelivery_is_acknowledged_and_answered_once(slack: FakeSlack, database_url: str,
                                                            redis_url: str | None, transport: str) -> None:
    bot = SlackBot(app=slack.add_app("helper"), transport=transport)
    alice = slack.add_user("alice", real_name="Alice")
    dm = slack.open_dm(alice, bot.app)
    async with running_gateway(slack, [bot], database_url=database_url, redis_url=redis_url, model=echoes()):
        await slack.user_says(dm, alice, "only once")
        [event] = [e for e in slack.events_for(bot.app) if e["event"].get("user") == alice["id"]]
        await slack.redeliver(event["event_id"])
        await slack.wait_for(lambda: not bot.app.unacked and slack.texts(dm, by=bot.app) == ["echo: only once"])
        await slack.user_says(dm, alice, "next")
        await slack.wait_for(lambda: len(slack.texts(dm, by=bot.app)) == 2)
    assert slack.texts(dm, by=bot.app) == ["echo: only once", "echo: next"]
    if transport == "http":
        retried = [d for d in bot.app.http if d.retry_num == 1]
        assert [(d.status, json.loads(d.body)["outcome"]) for d in retried] == [(200, "duplicate")]


STALE = 6 * 60


async def test_url_verification_is_answered_only_after_verification(slack: FakeSlack, sqlite_url: str) -> None:
    bot = SlackBot(app=slack.add_app("helper"), transport="http")
    async with running_gateway(slack, [bot], database_url=sqlite_url, redis_url=None, model=echoes()):
        status, answer, challenge = await slack.verify_url(bot.app)
        body = json.dumps({"type": "url_verification", "challenge": "guess", "token": "x"}).encode()
        refused, text = await slack.post_to_app(bot.app, body, {"Content-Type": "application/json"})
    assert (status, json.loads(answer)) == (200, {"challenge": challenge})
    assert refused == 403 and "guess" not in text


async def test_a_socket_mode_bot_refuses_every_http_call_naming_the_missing_setting(
        slack: FakeSlack, sqlite_url: str) -> None:
    bot = SlackBot(app=slack.add_app("helper"))
    alice = slack.add_user("alice")
    body = a_dm_event(slack, bot.app, alice, slack.open_dm(alice, bot.app), "hi")
    async with running_gateway(slack, [bot], database_url=sqlite_url, redis_url=None,
                               model=echoes()) as gateway, httpx.AsyncClient() as client:
        response = await client.post(f"{gateway.url}/slack/{bot.name}/events", content=body,
                                     headers=slack.signed_headers(bot.app, body))
    assert response.status_code == 403
    assert "signing_secret" in response.json()["error"]
    assert await inbox_count(sqlite_url) == 0


async def test_own_and_other_bots_messages_are_ignored(slack: FakeSlack, sqlite_url: str) -> None:
    bot = SlackBot(app=slack.add_app("helper"))
    alice = slack.add_user("alice", real_name="Alice")
    other = slack.add_user("otherbot", is_bot=True)
    general = slack.add_channel("general", members=[alice, other, bot.app])
    async with running_gateway(slack, [bot], database_url=sqlite_url, redis_url=None, model=echoes()):
        await slack.bot_says(general, other, f"{bot.mention} please loop forever")
        await slack.bot_says(general, other, f"{bot.mention} legacy webhook post", legacy=True)
        said = await slack.user_says(general, alice, f"{bot.mention} hi")
        await slack.wait_for(lambda: slack.texts(general, by=bot.app, thread_ts=said["ts"]) == ["echo: [Alice] hi"])
        # The bot's own posts (placeholder and answer) came back as events, and were dropped too.
        await slack.wait_for(lambda: len([e for e in slack.events_for(bot.app)
                                          if e["event"].get("user") == bot.user_id]) >= 1)
    assert await inbox_count(sqlite_url) == 1


async def test_allowed_bots_are_answered_when_they_mention_the_bot_but_never_followed(
        slack: FakeSlack, sqlite_url: str) -> None:
    bot = SlackBot(app=slack.add_app("helper"), binding={"allow_bots": True})
    other = slack.add_user("otherbot", real_name="Other Bot", is_bot=True)
    general = slack.add_channel("general", members=[other, bot.app])
    async with running_gateway(slack, [bot], database_url=sqlite_url, redis_url=None, model=echoes()):
        said = await slack.bot_says(general, other, f"{bot.mention} status?")
        await slack.wait_for(lambda: slack.texts(general, by=bot.app, thread_ts=said["ts"]) == [
            "echo: [Other Bot] status?"])
        await slack.bot_says(general, other, "thanks!", thread_ts=said["ts"])
        await slack.bot_says(general, other, f"{bot.mention} one more", thread_ts=said["ts"])
        await slack.wait_for(lambda: len(slack.texts(general, by=bot.app, thread_ts=said["ts"])) == 2)
    assert slack.texts(general, by=bot.app, thread_ts=said["ts"])[-1] == "echo: [Other Bot] one more"


async def test_a_long_answer_full_of_entities_is_split_without_cutting_one(slack: FakeSlack, sqlite_url: str) -> None:
    bot = SlackBot(app=slack.add_app("helper"))
    alice = slack.add_user("alice", real_name="Alice")
    general = slack.add_channel("general", members=[alice, bot.app])
    paragraphs = [f"Paragraph {n}: " + "word & " * 100 for n in range(12)]  # about 9,000 characters
    async with running_gateway(slack, [bot], database_url=sqlite_url, redis_url=None,
                               model=scripted(lambda *_: "\n\n".join(paragraphs), chunk=2000)):
        said = await slack.user_says(general, alice, f"{bot.mention} tell me everything")
        await slack.wait_for(lambda: "Paragraph 11" in "".join(slack.texts(general, by=bot.app, thread_ts=said["ts"])))
    texts = slack.texts(general, by=bot.app, thread_ts=said["ts"])
    assert len(texts) == 3 and slack.texts(general, by=bot.app) == []
    assert all(len(text) <= 4000 for text in texts)
    # Where entities would pass the cap, `&` travels as its full-width look-alike instead of being cut.
    words = " ".join(" ".join(texts).replace("&amp;", "&").replace("\uff06", "&").split())
    assert words == " ".join(" ".join(paragraphs).split())


async def test_429_retry_after_is_honoured(slack: FakeSlack, sqlite_url: str) -> None:
    bot = SlackBot(app=slack.add_app("helper"))
    alice = slack.add_user("alice")
    dm = slack.open_dm(alice, bot.app)
    slack.fail_next("chat.postMessage", retry_after=1)
    async with running_gateway(slack, [bot], database_url=sqlite_url, redis_url=None, model=echoes()):
        await slack.user_says(dm, alice, "hi")
        await slack.wait_for(lambda: slack.texts(dm, by=bot.app) == ["echo: hi"])
    refused, accepted = [c for c in slack.calls if c.method == "chat.postMessage"][:2]
    assert accepted.at - refused.at >= 1.0


async def test_socket_mode_reconnects_after_the_socket_drops_with_backoff(slack: FakeSlack, sqlite_url: str) -> None:
    bot = SlackBot(app=slack.add_app("helper"))
    alice = slack.add_user("alice")
    dm = slack.open_dm(alice, bot.app)
    async with running_gateway(slack, [bot], database_url=sqlite_url, redis_url=None, model=echoes()):
        await slack.drop_socket(bot.app)
        await slack.user_says(dm, alice, "said while the socket was down")
        await slack.wait_for(lambda: len(bot.app.connected_at) == 2 and bool(bot.app.sockets))
        await slack.drop_socket(bot.app)
        await slack.wait_for(lambda: len(bot.app.connected_at) == 3 and bool(bot.app.sockets))
        await slack.user_says(dm, alice, "and after")
        await slack.wait_for(lambda: len(slack.texts(dm, by=bot.app)) == 2)
    assert slack.texts(dm, by=bot.app) == ["echo: said while the socket was down", "echo: and after"]
    gaps = [later - earlier for earlier, later in itertools.pairwise(bot.app.connected_at)]
    first = FAST.transport_first_delay
    assert gaps[0] >= first and gaps[1] >= 2 * first, "the delay doubles after a short-lived connection"


async def test_a_refresh_request_reconnects_at_once(slack: FakeSlack, sqlite_url: str) -> None:
    bot = SlackBot(app=slack.add_app("helper"))
    patient = replace(FAST, transport_first_delay=30.0)
    async with running_gateway(slack, [bot], database_url=sqlite_url, redis_url=None, model=echoes(),
                               tuning=patient):
        await slack.request_refresh(bot.app)
        await slack.wait_for(lambda: len(bot.app.connected_at) == 2 and bool(bot.app.sockets), timeout=5)


async def test_envelopes_are_acknowledged_only_after_the_inbox_commit(slack: FakeSlack, database_url: str) -> None:
    bot = SlackBot(app=slack.add_app("helper"))
    alice = slack.add_user("alice")
    dm = slack.open_dm(alice, bot.app)
    stored_at_ack: list[int] = []

    async def count_rows(_app: SlackApp, _envelope_id: str) -> None:
        # Only the first ack (the user's message): a query still running at teardown would hold a lock
        # that the fixture's DROP SCHEMA waits for.
        if not stored_at_ack:
            stored_at_ack.append(await inbox_count(database_url))

    async with running_gateway(slack, [bot], database_url=database_url, redis_url=None, model=echoes()):
        slack.on_ack = count_rows
        await slack.user_says(dm, alice, "hi")
        await slack.wait_for(lambda: slack.texts(dm, by=bot.app) == ["echo: hi"] and bool(stored_at_ack))
    assert stored_at_ack == [1], "the first ack came after the message was committed"


async def test_tokens_and_the_signing_secret_never_reach_the_log(slack: FakeSlack, sqlite_url: str,
                                                                 caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    socket_bot = SlackBot(app=slack.add_app("helper"))
    http_bot = SlackBot(app=slack.add_app("clerk"), transport="http")
    alice = slack.add_user("alice")
    dm = slack.open_dm(alice, http_bot.app)
    async with running_gateway(slack, [socket_bot, http_bot], database_url=sqlite_url, redis_url=None,
                               model=echoes()):
        await slack.user_says(dm, alice, "hi")
        await slack.wait_for(lambda: slack.texts(dm, by=http_bot.app) == ["echo: hi"])
        body = a_dm_event(slack, http_bot.app, alice, dm, "forged")
        await slack.post_to_app(http_bot.app, body, slack.signed_headers(http_bot.app, body, secret="nope"))
    logged = caplog.text
    for secret in (socket_bot.app.token, socket_bot.app.app_token, http_bot.app.token, http_bot.app.signing_secret):
        assert secret not in logged
    assert "forged" not in logged, "a refused body is never logged"
