"""Property-based, the way each platform sends: a real conversation's payloads (a direct message, a group mention,
the click on its approval card), with any field at any depth replaced by any value or by a value of another type
(the transport's own envelope fields, such as a Socket Mode `envelope_id` or `type` and a Telegram `update_id`,
picked as often as all the rest), go out as Socket Mode envelopes, Mattermost event-stream frames and button calls,
Telegram updates polled or pushed, and Slack Events API and interactivity calls. Each is handled and acknowledged
(answered, ignored or kept as rejected), never a crash: the connection holds, the offset moves on, every call gets
a 2xx or a 403, and a valid message afterwards is answered. On SQLite and PostgreSQL, whose `json` refuses numbers
Python reads (`NaN`, `Infinity`)."""

from __future__ import annotations

import asyncio
import itertools
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any
from urllib.parse import urlencode

import httpx
from hypothesis import HealthCheck, given, settings
from pydantic_ai.messages import ModelMessage, ModelRequest, ToolReturnPart
from pydantic_ai.models import Model

from adapters.slack.people import PEOPLE_KEY
from gateway.server.app import Gateway
from tests.contract.chats import Chat, MattermostChat, SlackChat, TelegramChat
from tests.support.fakes.mattermost import FakeMattermost
from tests.support.fakes.slack import FakeSlack
from tests.support.fakes.telegram import FakeTelegram
from tests.support.gated_tools import deploy_registry
from tests.support.mutations import any_change, in_loop
from tests.support.records import inbox_rows
from tests.support.scripted import last_prompt, stepped

EXAMPLES = settings(max_examples=40, deadline=None, database=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
Send = Callable[[Any], Awaitable[None]]
"""Sends one payload the platform's way; returns once the gateway handled it, or fails the example."""


def deploys_or_echoes() -> Model:
    """Asks for the gated deploy when told to deploy, says what it returned after, and echoes anything else."""
    def step(messages: list[ModelMessage]) -> tuple[str, dict[str, object], str] | str:
        request = messages[-1]
        returned = [p for p in request.parts if isinstance(p, ToolReturnPart)] if isinstance(request, ModelRequest) \
            else []
        if returned:
            return f"done: {returned[-1].content}"
        said = last_prompt(messages)
        return ("deploy_service", {"service": "web"}, "call-1") if "deploy web" in said else f"echo: {said}"
    return stepped(step)


@asynccontextmanager
async def conversation(chat: Chat, database_url: str) -> AsyncIterator[tuple[Gateway, list[dict[str, Any]]]]:
    """The gateway after a DM, a group mention and an approved card; the card as it was before the click too."""
    async with chat.running(database_url, model=deploys_or_echoes(), registry=deploy_registry([]),
                            capabilities=[{"id": "deploy"}]) as gateway:
        said = await chat.says(chat.dm, "hello")
        await chat.wait_for(lambda: chat.answers(chat.dm, said) == ["echo: hello"])
        said = await chat.says(chat.group, "deploy web")
        await chat.wait_for(lambda: len(chat.cards(chat.group, said)) == 1)
        card = chat.cards(chat.group, said)[0]
        await chat.approve(card)
        await chat.wait_for(lambda: chat.answers(chat.group, said)[-1:] == ["done: deployed web"])
        yield gateway, [card]


async def still_answers(chat: Chat) -> None:
    """A valid message after the examples is answered: once the turns the accepted examples queued in its
    conversation are done, which on a busy machine can take a while (the bound is on the wait, not a figure)."""
    said = await chat.says(chat.dm, "still there?")
    await chat.wait_for(lambda: chat.answers(chat.dm, said)[-1:] == ["echo: still there?"], timeout=90)


async def seeds_of(database_url: str) -> list[dict[str, Any]]:
    """What was committed to the inbox in the conversation: the payloads as the transport handed them in."""
    return [{k: v for k, v in row.payload.items() if k != PEOPLE_KEY}
            for row in await inbox_rows(database_url) if row.status != "rejected"]


def run_property(loop: asyncio.AbstractEventLoop, seeds: list[Any], send: Send) -> Awaitable[None]:
    @EXAMPLES
    @given(any_change(seeds))
    def handled(payload: Any) -> None:
        in_loop(loop, send(payload))
    return asyncio.to_thread(handled)


async def kept_as_rejected(database_url: str, marker: str) -> bool:
    return any(marker in row.payload["excerpt"] for row in await inbox_rows(database_url) if row.status == "rejected")


async def wait_until_rejected(database_url: str, marker: str) -> None:
    """Until the record of the frame carrying `marker` is committed as rejected (polled: it is in the database)."""
    async with asyncio.timeout(30):  # a busy machine is slow
        while True:
            if await kept_as_rejected(database_url, marker):
                return
            await asyncio.sleep(0.01)


FRESH_ID = "fresh-id"
"""Stands for an envelope or update id of its own, given to each as it is sent."""


# -- Telegram ---------------------------------------------------------------------------------------

def offsets(fake: FakeTelegram) -> list[int]:
    return [c.params.get("offset") or 0 for c in fake.calls if c.method == "getUpdates"]


async def test_any_polled_telegram_update_moves_the_offset_on(database_url: str) -> None:
    async with FakeTelegram() as fake:
        chat = TelegramChat(fake)
        async with conversation(chat, database_url):
            seeds = await seeds_of(database_url)
            assert {"message", "callback_query"} <= {key for seed in seeds for key in seed}
            fresh = itertools.count(10_000)
            updates = [{**seed, "update_id": FRESH_ID} for seed in seeds]

            async def send(payload: Any) -> None:
                # An id of another type is sent as it is (the fake gives it a place in line); a whole number stands
                # for Telegram's own next id, since ids out of Telegram's order are not a type confusion.
                update_id = next(fresh)
                update = payload if isinstance(payload, dict) else {"update_id": FRESH_ID, "message": payload}
                given = update.get("update_id")
                if given == FRESH_ID or (isinstance(given, int) and not isinstance(given, bool)):
                    update = {**update, "update_id": update_id}
                before = max(offsets(fake))
                await fake.push_update(chat.bot.token, update)
                await fake.wait_for(lambda: max(offsets(fake)) > max(before, update_id if update.get("update_id") ==
                                                                      update_id else before), timeout=30)

            await run_property(asyncio.get_running_loop(), updates, send)
            await still_answers(chat)
    assert offsets(fake) == sorted(offsets(fake)), "the offset never went back"


async def test_any_telegram_update_pushed_to_the_webhook_is_acknowledged(database_url: str) -> None:
    async with FakeTelegram() as fake:
        chat = TelegramChat(fake, transport="webhook")
        async with conversation(chat, database_url):
            seeds = await seeds_of(database_url)

            async def send(payload: Any) -> None:
                pushed = len(fake.webhook_responses)
                await fake.push_update(chat.bot.token, payload if isinstance(payload, dict) else {"message": payload})
                assert [status for status, _ in fake.webhook_responses[pushed:]] == [200]

            await run_property(asyncio.get_running_loop(), seeds, send)
            await still_answers(chat)


# -- Slack ------------------------------------------------------------------------------------------

def envelope_kind(payload: Any) -> str:
    return "interactive" if isinstance(payload, dict) and payload.get("type") == "block_actions" else "events_api"


def expected_of(envelope: Any) -> tuple[bool, bool]:
    """(acknowledged, kept as rejected) for a frame: an envelope with an id is acknowledged; one whose id, type or
    payload is of the wrong type is kept as rejected (a payload Slack names may be rejected by the parser too)."""
    if not isinstance(envelope, dict):
        return False, True
    envelope_id, kind, payload = envelope.get("envelope_id"), envelope.get("type"), envelope.get("payload")
    has_id = isinstance(envelope_id, str) and envelope_id != ""
    readable = has_id and isinstance(kind, str) and (kind not in SLACK_PAYLOADS or isinstance(payload, dict))
    return has_id, not readable


SLACK_PAYLOADS = ("events_api", "interactive", "slash_commands")


async def test_any_socket_mode_envelope_is_acked_and_kept_on_a_connection_that_holds(database_url: str) -> None:
    """Any field of the envelope or its payload changed, types confused included: each envelope is acknowledged,
    one that cannot be read is kept as rejected, the connection holds, and a message afterwards is answered."""
    async with FakeSlack() as fake:
        chat = SlackChat(fake)
        async with conversation(chat, database_url):
            app = chat.bot.app
            seeds = await seeds_of(database_url)
            assert {"event_callback", "block_actions"} <= {seed.get("type") for seed in seeds}
            envelopes = [{"envelope_id": FRESH_ID, "type": envelope_kind(seed), "payload": seed} for seed in seeds]
            ids = itertools.count()

            async def send(envelope: Any) -> None:
                number = next(ids)
                if isinstance(envelope, dict):
                    if envelope.get("type") in ("hello", "disconnect"):
                        return  # Slack's own frames, not envelopes
                    fresh = envelope.get("envelope_id") == FRESH_ID
                    envelope = {"~marker": f"frame-{number}", **envelope,
                                **({"envelope_id": f"env-{number}"} if fresh else {})}
                else:
                    envelope = [f"frame-{number}", envelope]
                acked, rejected = expected_of(envelope)
                before = app.acked.count(envelope["envelope_id"]) if acked else 0
                await fake.send_frame(app, json.dumps(envelope))
                if acked:  # a busy machine is slow
                    await fake.wait_for(lambda: app.acked.count(envelope["envelope_id"]) > before, timeout=30)
                if rejected:
                    await wait_until_rejected(database_url, f"frame-{number}")
                assert len(app.connected_at) == 1, "the connection held"

            await run_property(asyncio.get_running_loop(), envelopes, send)
            await still_answers(chat)


async def test_any_signed_events_api_or_interactivity_call_is_answered_200(database_url: str) -> None:
    async with FakeSlack() as fake:
        chat = SlackChat(fake, transport="http")
        async with conversation(chat, database_url) as (gateway, _):
            seeds = await seeds_of(database_url)

            async def send(payload: Any) -> None:
                click = envelope_kind(payload) == "interactive"
                body = urlencode({"payload": json.dumps(payload)}).encode() if click else json.dumps(payload).encode()
                headers = {"Content-Type": "application/x-www-form-urlencoded" if click else "application/json",
                           **fake.signed_headers(chat.bot.app, body)}
                route = "interactions" if click else "events"
                status, text = await fake.post_to_app(chat.bot.app, body, headers,
                                                      url=f"{gateway.url}/slack/{chat.bot_name}/{route}")
                assert status == 200, (status, text)

            await run_property(asyncio.get_running_loop(), seeds, send)
            await still_answers(chat)


# -- Mattermost -------------------------------------------------------------------------------------

async def test_any_event_stream_frame_is_handled_on_a_stream_that_holds(database_url: str) -> None:
    async with FakeMattermost() as fake:
        chat = MattermostChat(fake)
        async with conversation(chat, database_url):
            seeds = [seed for seed in await seeds_of(database_url) if seed.get("event") == "posted"]
            assert len(seeds) >= 2

            markers = itertools.count()

            async def send(payload: Any) -> None:
                # Frames are read in order and nothing goes back per frame: the record of an unreadable marker sent
                # after this one says it was read.
                marker = f"marker-{next(markers)}"
                await fake.send_frame(chat.bot.user, json.dumps(payload))
                await fake.send_frame(chat.bot.user, f"not json: {marker}")
                async with asyncio.timeout(5):
                    while True:
                        if await kept_as_rejected(database_url, marker):
                            break
                        await asyncio.sleep(0.01)
                assert fake.sessions == 1, "the event stream held"

            await run_property(asyncio.get_running_loop(), seeds, send)
            await still_answers(chat)


async def test_any_button_call_is_answered_200_or_refused_403(database_url: str) -> None:
    async with FakeMattermost() as fake:
        chat = MattermostChat(fake)
        async with conversation(chat, database_url) as (_, [card]):
            [action] = [a for attachment in card["props"]["attachments"] for a in attachment["actions"]
                        if a["id"] == "approve"]
            seed = {"user_id": chat.alice["id"], "user_name": "alice", "channel_id": chat.group["id"],
                    "channel_name": chat.group["name"], "team_id": chat.team["id"], "team_domain": "acme",
                    "post_id": card["id"], "trigger_id": "t" * 26, "type": "", "data_source": "",
                    "context": action["integration"]["context"]}

            async def send(payload: Any) -> None:
                async with httpx.AsyncClient() as client:
                    response = await client.post(action["integration"]["url"], content=json.dumps(payload),
                                                 headers={"Content-Type": "application/json"})
                assert response.status_code in (200, 403), (response.status_code, response.text)

            await run_property(asyncio.get_running_loop(), [seed], send)
            await still_answers(chat)

