"""No input crashes a handler: a webhook call is refused (4xx) unless verified, a verified body that cannot be
read is kept as rejected and acknowledged, and a transport reads past any frame or update it cannot read."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
import pytest_asyncio

from gateway.server.app import Gateway
from tests.contract.chats import MattermostChat, SlackChat, TelegramChat
from tests.support.fakes.mattermost import FakeMattermost
from tests.support.fakes.slack import FakeSlack
from tests.support.fakes.telegram import FakeTelegram
from tests.support.mattermost_harness import hook_up, webhook_url
from tests.support.records import inbox_rows
from tests.support.scripted import echoes

HOOK_TOKEN = "hook-token-pasted-from-mattermost"
DEEP = b"[" * 100_000 + b"]" * 100_000
NOT_UTF8 = b'{"type": "event_callback", "event": "\xff\xfe\xfa"}'


@pytest_asyncio.fixture
async def slack_http(sqlite_url: str) -> AsyncIterator[tuple[SlackChat, Gateway]]:
    async with FakeSlack() as fake:
        chat = SlackChat(fake, transport="http")
        async with chat.running(sqlite_url, model=echoes()) as gateway:
            yield chat, gateway


@pytest_asyncio.fixture
async def slack_socket(sqlite_url: str) -> AsyncIterator[tuple[SlackChat, Gateway]]:
    async with FakeSlack() as fake:
        chat = SlackChat(fake)
        async with chat.running(sqlite_url, model=echoes()) as gateway:
            await fake.wait_for(lambda: bool(chat.bot.app.sockets))
            yield chat, gateway


@pytest_asyncio.fixture
async def mattermost(sqlite_url: str) -> AsyncIterator[tuple[MattermostChat, Gateway]]:
    async with FakeMattermost() as fake:
        chat = MattermostChat(fake, webhook_token=HOOK_TOKEN)
        async with chat.running(sqlite_url, model=echoes()) as gateway:
            yield chat, gateway


async def post(url: str, body: bytes, headers: dict[str, str]) -> int:
    async with httpx.AsyncClient() as client:
        return (await client.post(url, content=body, headers=headers)).status_code


async def rejected(database_url: str) -> list[dict[str, Any]]:
    return [row.payload for row in await inbox_rows(database_url) if row.status == "rejected"]


# -- before verification: refused, never a crash --------------------------------------------------

async def test_a_body_that_is_not_utf8_with_a_forged_signature_is_refused(slack_http: tuple[SlackChat, Gateway],
                                                                          sqlite_url: str) -> None:
    chat, _ = slack_http
    headers = {"Content-Type": "application/json", **chat.fake.signed_headers(chat.bot.app, NOT_UTF8, secret="x")}
    assert (await chat.fake.post_to_app(chat.bot.app, NOT_UTF8, headers))[0] == 403
    assert await inbox_rows(sqlite_url) == []


@pytest.mark.parametrize("timestamp", ["²³", "9" * 5000])
async def test_a_timestamp_of_odd_digits_is_refused(slack_http: tuple[SlackChat, Gateway], timestamp: str) -> None:
    chat, _ = slack_http
    headers = {**chat.fake.signed_headers(chat.bot.app, b"{}"), "X-Slack-Request-Timestamp": timestamp}
    async with httpx.AsyncClient() as client:
        response = await client.post(chat.bot.app.request_url or "", content=b"{}",
                                     headers={k: v.encode() for k, v in headers.items()})
    assert response.status_code == 403


@pytest.mark.parametrize("route", ["webhook", "actions"])
async def test_deep_nesting_without_a_token_is_refused_on_mattermost(mattermost: tuple[MattermostChat, Gateway],
                                                                    route: str, sqlite_url: str) -> None:
    chat, gateway = mattermost
    url = f"{gateway.url}/mattermost/{chat.bot_name}/{route}"
    assert await post(url, DEEP, {"Content-Type": "application/json"}) == 403
    assert await inbox_rows(sqlite_url) == []


async def test_a_body_over_the_limit_is_refused_before_it_is_read(slack_http: tuple[SlackChat, Gateway],
                                                                  sqlite_url: str) -> None:
    chat, _ = slack_http
    body = b'{"pad": "' + b"x" * (2 * 1024 * 1024) + b'"}'
    headers = {"Content-Type": "application/json", **chat.fake.signed_headers(chat.bot.app, body)}
    assert (await chat.fake.post_to_app(chat.bot.app, body, headers))[0] == 413
    assert await inbox_rows(sqlite_url) == []


async def test_a_chunked_body_over_the_limit_is_refused_as_it_is_read(slack_http: tuple[SlackChat, Gateway],
                                                                      sqlite_url: str) -> None:
    chat, _ = slack_http
    body = b'{"pad": "' + b"x" * (2 * 1024 * 1024) + b'"}'
    headers = {"Content-Type": "application/json", **chat.fake.signed_headers(chat.bot.app, body)}

    async def chunks() -> AsyncIterator[bytes]:  # no Content-Length: only counting the bytes can stop it
        for start in range(0, len(body), 64 * 1024):
            yield body[start:start + 64 * 1024]

    async with httpx.AsyncClient() as client:
        response = await client.post(chat.bot.app.request_url or "", content=chunks(), headers=headers)
    assert "content-length" not in response.request.headers
    assert response.status_code == 413
    assert await inbox_rows(sqlite_url) == []


# -- verified, unreadable: kept as rejected, capped, and acknowledged ---------------------------------

HUGE_INT = b'{"type": "event_callback", "n": ' + b"9" * 5000 + b"}"
PAST_THE_DEPTH = (b'{"type": "event_callback", "event": {"type": "message", "channel": "D1", "user": "U1", '
                  b'"text": "hi", "ts": "1.1", "blocks": ' + b"[" * 40 + b"]" * 40 + b"}}")


@pytest.mark.parametrize("body", [pytest.param(NOT_UTF8, id="not-utf8"), pytest.param(DEEP[:900_000], id="deep"),
                                  pytest.param(HUGE_INT, id="huge-int"),
                                  pytest.param(PAST_THE_DEPTH, id="nested-past-the-limit")])
async def test_a_signed_body_that_cannot_be_read_is_kept_as_rejected(slack_http: tuple[SlackChat, Gateway],
                                                                     sqlite_url: str, body: bytes) -> None:
    chat, _ = slack_http
    headers = {"Content-Type": "application/json", **chat.fake.signed_headers(chat.bot.app, body)}
    assert (await chat.fake.post_to_app(chat.bot.app, body, headers))[0] == 200
    [record] = await rejected(sqlite_url)
    assert record["size"] == len(body) and len(record["sha256"]) == 64
    assert len(record["excerpt"]) <= 4096 and record["truncated"] is (len(body) > 4096)


async def test_a_mattermost_webhook_naming_an_unknown_post_is_kept_as_rejected(
        mattermost: tuple[MattermostChat, Gateway], sqlite_url: str) -> None:
    chat, gateway = mattermost
    hook = hook_up(chat.fake, gateway, chat.bot, chat.team, trigger_words=["@helper"])
    said = await chat.fake.user_posts(chat.group, chat.alice, "nothing yet")
    fields = {"token": HOOK_TOKEN, "channel_id": chat.group["id"], "channel_name": "town-square",
              "post_id": "nosuchpost00000000000000000", "user_name": "alice", "trigger_word": "@helper"}
    assert hook.callback_urls == [webhook_url(gateway, chat.bot)]
    assert await post(webhook_url(gateway, chat.bot), json.dumps(fields).encode(),
                      {"Content-Type": "application/json"}) == 200
    assert len(await rejected(sqlite_url)) == 1
    assert chat.answers(chat.group, said) == []


async def test_a_telegram_update_of_a_huge_chat_id_is_kept_as_rejected(sqlite_url: str) -> None:
    async with FakeTelegram() as fake:
        chat = TelegramChat(fake, transport="webhook")
        async with chat.running(sqlite_url, model=echoes()):
            update = {"update_id": 9, "message": {"message_id": 1, "date": 10**30, "chat": {"id": 10**40},
                                                  "from": chat.alice, "text": "x"}}
            await fake.push_update(chat.bot.token, update)
            said = await chat.says(chat.dm, "still there?")
            await chat.wait_for(lambda: chat.answers(chat.dm, said) == ["echo: still there?"])
    assert [status for status, _ in fake.webhook_responses] == [200, 200]
    assert len(await rejected(sqlite_url)) == 1


# -- transports read past what they cannot read -------------------------------------------------------

@pytest.mark.parametrize("envelope", [
    pytest.param({"type": "event_callback", "event": {"type": "message", "user": ["U1"], "channel": "C1",
                                                        "text": "hi", "ts": "1.1"}}, id="user-is-a-list"),
    pytest.param([1, 2], id="payload-is-a-list"),
])
async def test_a_malformed_socket_mode_envelope_is_acked_and_kept_as_rejected(
        slack_socket: tuple[SlackChat, Gateway], sqlite_url: str, envelope: Any) -> None:
    chat, _ = slack_socket
    app = chat.bot.app
    await chat.fake.send_frame(app, json.dumps({"envelope_id": "env-poison", "type": "events_api",
                                                "payload": envelope}))
    await chat.wait_for(lambda: "env-poison" in app.acked)
    said = await chat.says(chat.dm, "still there?")
    await chat.wait_for(lambda: chat.answers(chat.dm, said) == ["echo: still there?"])
    assert len(app.connected_at) == 1, "the connection held"
    assert len(await rejected(sqlite_url)) == 1


async def test_a_socket_mode_frame_that_is_not_json_is_kept_as_rejected(slack_socket: tuple[SlackChat, Gateway],
                                                                        sqlite_url: str) -> None:
    chat, _ = slack_socket
    await chat.fake.send_frame(chat.bot.app, "[" * 50_000)
    said = await chat.says(chat.dm, "still there?")
    await chat.wait_for(lambda: chat.answers(chat.dm, said) == ["echo: still there?"])
    assert len(chat.bot.app.connected_at) == 1
    assert len(await rejected(sqlite_url)) == 1


async def test_a_mattermost_frame_that_is_not_json_is_kept_as_rejected(mattermost: tuple[MattermostChat, Gateway],
                                                                       sqlite_url: str) -> None:
    chat, _ = mattermost
    await chat.fake.send_frame(chat.bot.user, "{" * 50_000)
    said = await chat.says(chat.dm, "still there?")
    await chat.wait_for(lambda: chat.answers(chat.dm, said) == ["echo: still there?"])
    assert chat.fake.sessions == 1, "the event stream held"
    assert len(await rejected(sqlite_url)) == 1


def offsets(fake: FakeTelegram) -> list[int]:
    return [c.params.get("offset") or 0 for c in fake.calls if c.method == "getUpdates"]


@pytest.mark.parametrize("update_id", ["seven", True, 10**30])
async def test_an_update_without_a_usable_id_does_not_hold_the_polling_offset(sqlite_url: str,
                                                                               update_id: Any) -> None:
    async with FakeTelegram() as fake:
        chat = TelegramChat(fake)
        async with chat.running(sqlite_url, model=echoes()):
            said = await chat.says(chat.dm, "first")
            await chat.wait_for(lambda: chat.answers(chat.dm, said) == ["echo: first"])
            confirmed = max(offsets(fake))
            await fake.push_update(chat.bot.token, {"update_id": update_id, "message": "unreadable"})
            await chat.wait_for(lambda: max(offsets(fake)) > confirmed)
            said = await chat.says(chat.dm, "second")
            await chat.wait_for(lambda: chat.answers(chat.dm, said)[-1:] == ["echo: second"])
    assert offsets(fake) == sorted(offsets(fake)), "the offset never went back"
    assert len(await rejected(sqlite_url)) == 1
