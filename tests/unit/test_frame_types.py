"""Every field of every frame is untrusted, whatever its type: a Socket Mode envelope whose id, type or payload is a
list, an object, a number, a boolean or null is acknowledged (when its id is one) and kept as rejected on a
connection that holds; a frame or update holding a number JSON has no word for (`NaN`, `Infinity`), which Python
reads and PostgreSQL's `json` refuses, is kept as rejected on each transport instead of failing its commit for ever.
The next message is answered every time. The property tests in `test_transport_properties.py` go wider; these are
the cases, each sent once, on both databases.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from adapters.base import Inbound, MalformedPayload
from adapters.slack.people import PEOPLE_KEY
from tests.contract.chats import Chat, MattermostChat, SlackChat, TelegramChat, chat_on
from tests.support.fakes.mattermost import FakeMattermost
from tests.support.fakes.slack import FakeSlack
from tests.support.fakes.telegram import FakeTelegram
from tests.support.records import inbox_rows
from tests.support.scripted import echoes

CONFUSIONS: dict[str, Any] = {"list": ["env"], "object": {"id": "env"}, "number": 7, "float": 1.5, "null": None,
                              "true": True, "false": False}
"""Values of each JSON type but the one a field should hold."""


async def rejected(database_url: str) -> list[str]:
    return [row.payload["excerpt"] for row in await inbox_rows(database_url) if row.status == "rejected"]


async def answers_next(chat: Chat, text: str = "still there?") -> None:
    said = await chat.says(chat.dm, text)
    await chat.wait_for(lambda: chat.answers(chat.dm, said)[-1:] == [f"echo: {text}"], timeout=30)


async def test_socket_mode_envelopes_of_every_type_confusion_are_acked_kept_and_the_connection_holds(
        database_url: str) -> None:
    async with FakeSlack() as fake:
        chat = SlackChat(fake)
        async with chat.running(database_url, model=echoes()):
            app = chat.bot.app
            await answers_next(chat, "hello")
            [message] = [row.payload for row in await inbox_rows(database_url)]
            payload = {k: v for k, v in message.items() if k != PEOPLE_KEY}
            frames: list[tuple[str, dict[str, Any]]] = []
            for name, value in CONFUSIONS.items():
                frames += [(f"id-{name}", {"envelope_id": value, "type": "events_api", "payload": payload}),
                           (f"type-{name}", {"envelope_id": f"env-type-{name}", "type": value, "payload": payload})]
                if not isinstance(value, dict):  # an object is what a payload is
                    frames.append((f"payload-{name}", {"envelope_id": f"env-payload-{name}", "type": "events_api",
                                                       "payload": value}))
            for marker, envelope in frames:
                await fake.send_frame(app, json.dumps({"marker": marker, **envelope}))
            acked = [envelope["envelope_id"] for _, envelope in frames if isinstance(envelope["envelope_id"], str)]
            await chat.wait_for(lambda: set(acked) <= set(app.acked), timeout=30)
            await answers_next(chat)
            assert len(app.connected_at) == 1, "the connection held"
    kept = await rejected(database_url)
    assert [marker for marker, _ in frames if not any(f'\\"marker\\": \\"{marker}\\"' in r for r in kept)] == []


def with_nan(payload: dict[str, Any]) -> dict[str, Any]:
    return {**payload, "score": float("nan"), "weight": float("inf")}


async def test_a_socket_mode_envelope_holding_nan_is_acked_and_kept(database_url: str) -> None:
    async with FakeSlack() as fake:
        chat = SlackChat(fake)
        async with chat.running(database_url, model=echoes()):
            await answers_next(chat, "hello")
            [message] = [row.payload for row in await inbox_rows(database_url)]
            await fake.send_frame(chat.bot.app, json.dumps({"envelope_id": "env-nan", "type": "events_api",
                                                            "payload": with_nan(message)}))
            await chat.wait_for(lambda: "env-nan" in chat.bot.app.acked, timeout=30)
            await answers_next(chat)
            assert len(chat.bot.app.connected_at) == 1
    assert len(await rejected(database_url)) == 1


async def test_a_mattermost_frame_holding_nan_is_kept_and_the_stream_holds(database_url: str) -> None:
    async with FakeMattermost() as fake:
        chat = MattermostChat(fake)
        async with chat.running(database_url, model=echoes()):
            await answers_next(chat, "hello")
            [event] = [row.payload for row in await inbox_rows(database_url)]
            await fake.send_frame(chat.bot.user, json.dumps(with_nan(event)))
            await answers_next(chat)
            assert fake.sessions == 1, "the event stream held"
    assert len(await rejected(database_url)) == 1


@pytest.mark.parametrize("transport", ["polling", "webhook"])
async def test_a_telegram_update_holding_nan_is_kept_and_the_next_is_answered(database_url: str,
                                                                              transport: str) -> None:
    async with FakeTelegram() as fake:
        chat = TelegramChat(fake, transport=transport)
        async with chat.running(database_url, model=echoes()):
            await answers_next(chat, "hello")
            [update] = [row.payload for row in await inbox_rows(database_url)]
            await fake.push_update(chat.bot.token, with_nan({**update, "update_id": update["update_id"] + 100}))
            await answers_next(chat)
    assert len(await rejected(database_url)) == 1


def replaced(payload: dict[str, Any], path: tuple[str, ...], value: Any) -> dict[str, Any]:
    """`payload` with the field at `path` set to `value`, through a field that carries JSON text (Mattermost's post)."""
    head, *rest = path
    node = payload.get(head, {})
    if not rest:
        return {**payload, head: value}
    if isinstance(node, str):
        return {**payload, head: json.dumps(replaced(json.loads(node), tuple(rest), value))}
    return {**payload, head: replaced(node, tuple(rest), value)}


ID_FIELDS = {
    "slack": [("event", "channel"), ("event", "ts"), ("event", "thread_ts"), ("team_id",)],
    "mattermost": [("data", "post", "root_id"), ("data", "post", "channel_id")],
    "telegram": [("message", "chat", "id"), ("message", "from", "id"), ("message", "message_id"),
                 ("message", "message_thread_id")],
}


@pytest.mark.parametrize("platform", ["slack", "mattermost", "telegram"])
async def test_an_id_of_another_type_is_malformed_never_made_into_an_id(platform: str, sqlite_url: str) -> None:
    """`str()` would make "['C1']" a channel and the turn would fail on it three times; the message is refused."""
    async with chat_on(platform) as chat, chat.running(sqlite_url, model=echoes()) as gateway:
        await answers_next(chat, "hello")
        [seed] = [row.payload for row in await inbox_rows(sqlite_url)]
        parse = gateway.adapters[chat.bot_name].parse
        assert isinstance(parse(seed), Inbound)
        for path in ID_FIELDS[platform]:
            for value in (["C1"], {"id": "C1"}, 1.5, True):
                with pytest.raises(MalformedPayload):
                    parse(replaced(seed, path, value))
