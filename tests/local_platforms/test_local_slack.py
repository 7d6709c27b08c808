"""The local Slack speaks the Web API, Socket Mode and signed Events API closely enough for slack-sdk."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

import aiohttp
import pytest
from aiohttp import web
from slack_sdk.errors import SlackApiError
from slack_sdk.signature import SignatureVerifier
from slack_sdk.web.async_client import AsyncWebClient

from tests.support.fakes.slack import FakeSlack, SlackApp
from tests.support.loopback import serving


@pytest.fixture
async def slack() -> AsyncIterator[FakeSlack]:
    async with FakeSlack() as server:
        yield server


@pytest.fixture
def app(slack: FakeSlack) -> SlackApp:
    return slack.add_app("helper")


@pytest.fixture
async def client(slack: FakeSlack, app: SlackApp) -> AsyncIterator[AsyncWebClient]:
    async with aiohttp.ClientSession() as session:
        yield AsyncWebClient(token=app.token, base_url=f"{slack.url}/api/", session=session, retry_handlers=[])


async def test_auth_test_answers_the_bot_and_wrong_tokens_are_refused(slack: FakeSlack, app: SlackApp,
                                                                      client: AsyncWebClient) -> None:
    me = await client.auth_test()
    assert (me["user_id"], me["bot_id"], me["team_id"]) == (app.bot_user_id, app.bot_id, slack.team_id)
    with pytest.raises(SlackApiError) as wrong:
        await client.auth_test(token="xoxb-nobody")
    with pytest.raises(SlackApiError) as app_level:
        await client.chat_postMessage(token=app.app_token, channel="C1", text="hi")
    assert (wrong.value.response["error"], app_level.value.response["error"]) == (
        "invalid_auth", "not_allowed_token_type")
    assert slack.calls[0].token == app.token, "the token travels as Authorization: Bearer"


async def test_threads_are_kept_and_read_page_by_page(slack: FakeSlack, app: SlackApp,
                                                      client: AsyncWebClient) -> None:
    alice = slack.add_user("alice")
    channel = slack.add_channel("general", members=[alice, app])
    root = await slack.user_says(channel, alice, "root")
    for n in range(3):
        await client.chat_postMessage(channel=channel["id"], thread_ts=root["ts"], text=f"reply {n}")
    first = await client.conversations_replies(channel=channel["id"], ts=root["ts"], limit=2)
    rest = await client.conversations_replies(channel=channel["id"], ts=root["ts"], limit=2,
                                              cursor=first["response_metadata"]["next_cursor"])
    texts = [m["text"] for m in first["messages"] + rest["messages"]]
    assert texts == ["root", "reply 0", "reply 1", "reply 2"]
    assert rest["response_metadata"]["next_cursor"] == ""


async def test_update_refuses_long_text_and_other_peoples_messages(slack: FakeSlack, app: SlackApp,
                                                                   client: AsyncWebClient) -> None:
    alice = slack.add_user("alice")
    channel = slack.add_channel("general", members=[alice, app])
    said = await slack.user_says(channel, alice, "mine")
    posted = await client.chat_postMessage(channel=channel["id"], text="…")
    errors = []
    for ts, text in ((posted["ts"], "x" * 4001), (said["ts"], "changed")):
        with pytest.raises(SlackApiError) as refused:
            await client.chat_update(channel=channel["id"], ts=ts, text=text)
        errors.append(refused.value.response["error"])
    assert errors == ["msg_too_long", "cant_update_message"]


async def test_rate_limit_answers_429_with_retry_after(slack: FakeSlack, app: SlackApp) -> None:
    slack.fail_next("users.info", retry_after=7)
    async with aiohttp.ClientSession() as session, session.post(
            f"{slack.url}/api/users.info", data={"user": app.bot_user_id},
            headers={"Authorization": f"Bearer {app.token}"}) as answer:
        assert (answer.status, answer.headers["Retry-After"]) == (429, "7")
        assert await answer.json() == {"ok": False, "error": "ratelimited"}


@pytest.mark.parametrize("body", [b"{not json", b'["channel", "text"]'], ids=["unparsable", "not-an-object"])
async def test_a_json_body_that_is_not_an_object_is_invalid_json(slack: FakeSlack, app: SlackApp, body: bytes) -> None:
    general = slack.add_channel("general", members=[app])
    async with aiohttp.ClientSession() as session, session.post(
            f"{slack.url}/api/chat.postMessage", data=body,
            headers={"Authorization": f"Bearer {app.token}", "Content-Type": "application/json"}) as answer:
        assert await answer.json() == {"ok": False, "error": "invalid_json"}
    assert slack.messages(general) == []


async def test_a_mention_reaches_the_app_as_message_and_app_mention(slack: FakeSlack, app: SlackApp) -> None:
    alice = slack.add_user("alice")
    channel = slack.add_channel("general", members=[alice, app])
    said = await slack.user_says(channel, alice, f"<@{app.bot_user_id}> hi")
    events = slack.events_for(app)
    assert sorted(e["event"]["type"] for e in events) == ["app_mention", "message"]
    assert {e["event"]["ts"] for e in events} == {said["ts"]}
    assert len({e["event_id"] for e in events}) == 2


async def socket_of(slack: FakeSlack, app: SlackApp, session: aiohttp.ClientSession,
                    client: AsyncWebClient) -> aiohttp.ClientWebSocketResponse:
    opened = await client.apps_connections_open(app_token=app.app_token)
    socket = await session.ws_connect(opened["url"])
    assert (await socket.receive_json())["type"] == "hello"
    return socket


async def test_socket_mode_sends_unacknowledged_envelopes_again_on_the_next_connection(
        slack: FakeSlack, app: SlackApp, client: AsyncWebClient) -> None:
    alice = slack.add_user("alice")
    dm = slack.open_dm(alice, app)
    async with aiohttp.ClientSession() as session:
        first = await socket_of(slack, app, session, client)
        await slack.user_says(dm, alice, "hello")
        envelope = await first.receive_json()
        await first.close()  # gone without an ack
        second = await socket_of(slack, app, session, client)
        again = await second.receive_json()
        await second.send_json({"envelope_id": again["envelope_id"]})
        await slack.wait_for(lambda: app.acked == [again["envelope_id"]])
        await second.close()
    assert envelope["type"] == "events_api" and envelope["payload"]["event"]["text"] == "hello"
    assert (again["payload"], again["retry_attempt"]) == (envelope["payload"], 1)


async def test_events_api_posts_are_signed_and_retried_when_refused(slack: FakeSlack, app: SlackApp) -> None:
    received: list[tuple[bool, str | None]] = []
    verifier = SignatureVerifier(app.signing_secret)

    async def endpoint(request: web.Request) -> web.Response:
        received.append((verifier.is_valid_request(await request.read(), dict(request.headers)),
                         request.headers.get("X-Slack-Retry-Num")))
        return web.Response(status=500 if len(received) == 1 else 200)

    server = web.Application()
    server.router.add_post("/events", endpoint)
    async with serving(server) as url:
        app.request_url = f"{url}/events"
        alice = slack.add_user("alice")
        await slack.user_says(slack.open_dm(alice, app), alice, "hi")
    assert received == [(True, None), (True, "1")]
    assert [d.status for d in app.http] == [500, 200]


async def test_clicks_arrive_as_signed_form_posts(slack: FakeSlack, app: SlackApp, client: AsyncWebClient) -> None:
    bodies: list[dict] = []

    async def endpoint(request: web.Request) -> web.Response:
        if request.content_type == "application/x-www-form-urlencoded":
            bodies.append(json.loads(str((await request.post())["payload"])))
        return web.Response()

    server = web.Application()
    server.router.add_post("/events", endpoint)
    async with serving(server) as url:
        app.request_url = f"{url}/events"
        alice = slack.add_user("alice")
        channel = slack.add_channel("general", members=[alice, app])
        blocks = [{"type": "actions", "block_id": "b1", "elements": [
            {"type": "button", "action_id": "go", "value": "42", "text": {"type": "plain_text", "text": "Go"}}]}]
        posted = await client.chat_postMessage(channel=channel["id"], text="Go?", blocks=blocks)
        await slack.user_clicks(app, posted["message"], alice, "go")  # returns once the POST was answered
    [click] = bodies
    assert (click["actions"][0]["value"], click["user"]["id"], click["container"]["message_ts"]) == (
        "42", alice["id"], posted["ts"])
