"""The adapter contract, held by all three platforms: what a person says is read once with its address,
answers are sent, edited and split to the platform's limits, cards are decided by a click, forged calls
are refused with nothing stored, and no payload makes a parser raise anything but `MalformedPayload`."""

from __future__ import annotations

import contextlib
import copy
import json
import random
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import httpx
import pytest
import pytest_asyncio

from adapters.base import Inbound, MalformedPayload
from gateway.server.app import Gateway
from tests.contract.chats import Chat, MattermostChat, SlackChat, TelegramChat, chat_on
from tests.support.fakes.mattermost import FakeMattermost
from tests.support.fakes.slack import FakeSlack
from tests.support.fakes.telegram import FakeTelegram
from tests.support.gated_tools import deploy_registry
from tests.support.mattermost_harness import hook_up, webhook_url
from tests.support.records import inbox_rows
from tests.support.scripted import answers, calls_then_answers, echoes, scripted

PLATFORMS = ["telegram", "slack", "mattermost"]
DEPLOY = [{"id": "deploy"}]


@pytest_asyncio.fixture(params=PLATFORMS)
async def chat(request: pytest.FixtureRequest) -> AsyncIterator[Chat]:
    async with chat_on(request.param) as world:
        yield world


def ends_with_address(logical_id: str, chat: Chat, room: dict[str, Any], said: dict[str, Any]) -> bool:
    return logical_id.startswith(f"{chat.platform}:{chat.bot_name}:") and logical_id.endswith(
        f":{chat.room_id(room)}:{chat.message_id(said)}")


# -- reading what people say ---------------------------------------------------------------------

async def test_a_direct_message_is_answered_in_the_same_chat(chat: Chat, database_url: str,
                                                             redis_url: str | None) -> None:
    async with chat.running(database_url, redis_url=redis_url, model=echoes()):
        said = await chat.says(chat.dm, "hello there")
        await chat.wait_for(lambda: chat.answers(chat.dm, said) == ["echo: hello there"])
    [row] = await inbox_rows(database_url)
    assert ends_with_address(row.logical_id, chat, chat.dm, said)


async def test_a_group_mention_is_answered_in_its_conversation_and_chatter_is_not(chat: Chat,
                                                                                 database_url: str) -> None:
    async with chat.running(database_url, model=echoes()):
        await chat.chatters(chat.group, "colleagues talking among themselves")
        said = await chat.says(chat.group, "what is 2+2?")
        await chat.wait_for(lambda: chat.answers(chat.group, said) == [f"echo: [{chat.speaker}] what is 2+2?"])
    [row] = await inbox_rows(database_url)
    assert ends_with_address(row.logical_id, chat, chat.group, said), "the chatter left no row"


async def test_another_bots_mention_is_ignored(chat: Chat, sqlite_url: str) -> None:
    async with chat.running(sqlite_url, model=echoes()):
        await chat.another_bot_mentions(chat.group, "please loop forever")
        said = await chat.says(chat.group, "hi")
        await chat.wait_for(lambda: chat.answers(chat.group, said) == [f"echo: [{chat.speaker}] hi"])
    [row] = await inbox_rows(sqlite_url)
    assert ends_with_address(row.logical_id, chat, chat.group, said)


@dataclass(frozen=True, slots=True, kw_only=True)
class Twins:
    """A platform that sends one message twice: the world, and how the gateway is connected to both copies."""

    id: str
    world: Callable[[Any], Chat]
    fake: type
    connect: Callable[[Any, Gateway], None] = lambda _chat, _gateway: None


HOOK_TOKEN = "hook-token-pasted-from-mattermost"


def both_mattermost_transports(chat: MattermostChat, gateway: Gateway) -> None:
    hook_up(chat.fake, gateway, chat.bot, chat.team, trigger_words=[f"@{chat.bot.username}"])


TWINS = [
    Twins(id="slack-message-and-app-mention-socket", fake=FakeSlack, world=SlackChat),
    Twins(id="slack-message-and-app-mention-http", fake=FakeSlack,
          world=lambda fake: SlackChat(fake, transport="http")),
    Twins(id="mattermost-websocket-and-webhook", fake=FakeMattermost,
          world=lambda fake: MattermostChat(fake, webhook_token=HOOK_TOKEN), connect=both_mattermost_transports),
]


@pytest.mark.parametrize("twins", [pytest.param(t, id=t.id) for t in TWINS])
async def test_twins_share_one_logical_id_and_are_answered_once(twins: Twins, database_url: str) -> None:
    async with twins.fake() as fake:
        chat = twins.world(fake)
        async with chat.running(database_url, model=echoes()) as gateway:
            twins.connect(chat, gateway)
            said = await chat.says(chat.group, "once please")
            await chat.wait_for(lambda: chat.answers(chat.group, said) == [f"echo: [{chat.speaker}] once please"])
            again = await chat.says(chat.group, "and next")
            await chat.wait_for(lambda: len(chat.answers(chat.group, again)) == 1)
            if isinstance(chat, SlackChat):
                parsed = [gateway.adapters[chat.bot_name].parse(e) for e in fake.events_for(chat.bot.app)
                          if e["event"].get("ts") == said["ts"]]
                assert len(parsed) == 2 and len({p.logical_id for p in parsed if isinstance(p, Inbound)}) == 1
        if isinstance(chat, MattermostChat):
            assert [status for status, _ in fake.webhook_responses] == [200, 200], "both copies arrived"
    assert chat.answers(chat.group, said) == [f"echo: [{chat.speaker}] once please"]
    assert len(await inbox_rows(database_url)) == 2


# -- sending, editing, splitting -----------------------------------------------------------------

async def test_the_answer_streams_into_one_message_edited_in_place(chat: Chat, sqlite_url: str) -> None:
    text = "More detail follows. " * 20
    async with chat.running(sqlite_url, model=answers(text)):
        said = await chat.says(chat.dm, "plan?")
        await chat.wait_for(lambda: chat.answers(chat.dm, said) == [text.rstrip()])
    assert chat.sends() == 1, "one message"
    if chat.platform == "telegram":  # the first post waits for text, and an answer done by then is sent whole
        assert chat.edits() == 0
    else:
        assert chat.edits() >= 1, "the placeholder was edited in place"


async def test_a_long_answer_is_split_to_the_platform_limits_in_its_conversation(chat: Chat,
                                                                                sqlite_url: str) -> None:
    async with chat.running(sqlite_url, model=echoes()) as gateway:
        limit = gateway.adapters[chat.bot_name].limits.max_text
    paragraphs = [f"Paragraph {n}: " + "word " * 150 for n in range(limit * 5 // 2 // 760)]  # 2.5 limits long
    model = scripted(lambda *_: "\n\n".join(paragraphs), chunk=2000)
    async with chat.running(sqlite_url, model=model):
        said = await chat.says(chat.group, "tell me everything")
        await chat.wait_for(lambda: f"Paragraph {len(paragraphs) - 1}:" in " ".join(chat.answers(chat.group, said)),
                            timeout=10)
    texts = chat.answers(chat.group, said)
    assert len(texts) == 3 and all(len(text) <= limit for text in texts)
    assert " ".join(texts).split() == " ".join(paragraphs).split()


# -- cards ---------------------------------------------------------------------------------------

async def test_a_card_is_posted_approved_by_a_click_and_closed(chat: Chat, sqlite_url: str) -> None:
    executed: list[str] = []
    async with chat.running(sqlite_url, model=calls_then_answers(("deploy_service", {"service": "web"})),
                            registry=deploy_registry(executed), capabilities=DEPLOY):
        said = await chat.says(chat.group, "deploy web")
        await chat.wait_for(lambda: len(chat.cards(chat.group, said)) == 1)
        [card] = chat.cards(chat.group, said)
        assert executed == [] and '"service": "web"' in str(card)
        await chat.approve(card)
        await chat.wait_for(lambda: chat.answers(chat.group, said)[-1:] == ["done: deployed web"])
        assert chat.is_closed_as_approved(card)
    assert executed == ["web"]


# -- refusals ------------------------------------------------------------------------------------

@dataclass(frozen=True, slots=True, kw_only=True)
class Forgery:
    id: str
    fake: type
    world: Callable[[Any], Chat]
    send: Callable[[Any, Gateway], Awaitable[tuple[int, str]]]
    """Sends the forged call to the gateway; returns the status and body it answered."""
    reason: str
    """A word the refusal names."""


def telegram_update(chat: TelegramChat) -> dict[str, Any]:
    return {"update_id": 1, "message": {"message_id": 71, "date": int(time.time()), "chat": chat.dm,
                                        "from": chat.alice, "text": "forged"}}


def telegram_post(headers: dict[str, str]) -> Callable[[TelegramChat, Gateway], Awaitable[tuple[int, str]]]:
    async def send(chat: TelegramChat, gateway: Gateway) -> tuple[int, str]:
        async with httpx.AsyncClient() as client:
            response = await client.post(f"{gateway.url}/telegram/{chat.bot_name}/webhook",
                                         json=telegram_update(chat), headers=headers)
        return response.status_code, response.text
    return send


def slack_event(chat: SlackChat) -> bytes:
    event = {"type": "message", "channel": chat.dm["id"], "user": chat.alice["id"], "text": "run rm -rf /",
             "ts": "1700000000.000100", "channel_type": "im", "team": chat.fake.team_id}
    return json.dumps({"type": "event_callback", "team_id": chat.fake.team_id, "api_app_id": chat.bot.app.app_id,
                       "event_id": "Ev0FORGED", "event_time": int(time.time()), "event": event}).encode()


STALE = 6 * 60


def slack_post(sign: Callable[[SlackChat, bytes], dict[str, str]],
               ) -> Callable[[SlackChat, Gateway], Awaitable[tuple[int, str]]]:
    async def send(chat: SlackChat, _gateway: Gateway) -> tuple[int, str]:
        body = slack_event(chat)
        return await chat.fake.post_to_app(chat.bot.app, body, {"Content-Type": "application/json",
                                                                **sign(chat, body)})
    return send


def mattermost_hook(token: str | None) -> Callable[[MattermostChat, Gateway], Awaitable[tuple[int, str]]]:
    async def send(chat: MattermostChat, gateway: Gateway) -> tuple[int, str]:
        hook = chat.fake.add_outgoing_webhook(chat.team, callback_url=webhook_url(gateway, chat.bot),
                                              trigger_words=["@helper"], token=HOOK_TOKEN)
        post = await chat.fake.user_posts(chat.group, chat.alice, "nothing yet")
        [answered] = await chat.fake.deliver_webhook(hook, post, token=token, trigger_word="@helper")
        return answered
    return send


def webhook_telegram(fake: FakeTelegram) -> TelegramChat:
    return TelegramChat(fake, transport="webhook")


def http_slack(fake: FakeSlack) -> SlackChat:
    return SlackChat(fake, transport="http")


def hooked_mattermost(fake: FakeMattermost) -> MattermostChat:
    return MattermostChat(fake, webhook_token=HOOK_TOKEN)


FORGERIES = [
    Forgery(id="telegram-missing-secret", fake=FakeTelegram, world=webhook_telegram, send=telegram_post({}),
            reason="Secret-Token"),
    Forgery(id="telegram-wrong-secret", fake=FakeTelegram, world=webhook_telegram,
            send=telegram_post({"X-Telegram-Bot-Api-Secret-Token": "guessed"}), reason="Secret-Token"),
    Forgery(id="slack-wrong-secret", fake=FakeSlack, world=http_slack, reason="X-Slack",
            send=slack_post(lambda chat, body: chat.fake.signed_headers(chat.bot.app, body, secret="guessed"))),
    Forgery(id="slack-unsigned", fake=FakeSlack, world=http_slack, send=slack_post(lambda _chat, _body: {}),
            reason="X-Slack"),
    Forgery(id="slack-stale", fake=FakeSlack, world=http_slack, reason="X-Slack",
            send=slack_post(lambda chat, body: chat.fake.signed_headers(chat.bot.app, body,
                                                                        timestamp=int(time.time()) - STALE))),
    Forgery(id="slack-tampered-body", fake=FakeSlack, world=http_slack, reason="X-Slack",
            send=slack_post(lambda chat, body: chat.fake.signed_headers(chat.bot.app,
                                                                        body.replace(b"rm -rf", b"ls -la")))),
    Forgery(id="mattermost-missing-token", fake=FakeMattermost, world=hooked_mattermost, send=mattermost_hook(None),
            reason="token"),
    Forgery(id="mattermost-wrong-token", fake=FakeMattermost, world=hooked_mattermost,
            send=mattermost_hook("guessed"), reason="token"),
    Forgery(id="mattermost-bot-without-webhook-token", fake=FakeMattermost, world=MattermostChat,
            send=mattermost_hook(HOOK_TOKEN), reason="token"),
]


@pytest.mark.parametrize("forgery", [pytest.param(f, id=f.id) for f in FORGERIES])
async def test_a_forged_webhook_call_is_refused_and_nothing_stored(forgery: Forgery, database_url: str) -> None:
    async with forgery.fake() as fake:
        chat = forgery.world(fake)
        async with chat.running(database_url, model=echoes()) as gateway:
            status, body = await forgery.send(chat, gateway)
    assert status == 403 and forgery.reason in json.loads(body)["error"]
    assert await inbox_rows(database_url) == []
    assert chat.sends() == 0


# -- parsing anything ----------------------------------------------------------------------------

JUNK: list[Any] = [None, 0, -1, "", "x", "@helper", [], {}, {"id": None}, 1.5, True, [{}], "[]", "{}", "{not json"]


def _slots(node: Any) -> list[tuple[Any, Any]]:
    """Every (container, key) in a JSON value, nested ones included."""
    found: list[tuple[Any, Any]] = []
    keys = list(node) if isinstance(node, dict) else range(len(node)) if isinstance(node, list) else []
    for key in keys:
        found.append((node, key))
        found.extend(_slots(node[key]))
    return found


def _decoded(value: Any) -> Any:
    if isinstance(value, str) and value[:1] in ("{", "["):
        with contextlib.suppress(ValueError):
            return json.loads(value)
    return None


def mutated(value: Any, rng: random.Random) -> Any:
    """`value` with one field dropped or replaced by junk, looking inside fields that carry JSON text too."""
    value = copy.deepcopy(value)
    slots = _slots(value)
    if not slots:
        return rng.choice(JUNK)
    parent, key = rng.choice(slots)
    inner = _decoded(parent[key])
    if inner is not None and rng.random() < 0.7:
        parent[key] = json.dumps(mutated(inner, rng))
    elif isinstance(parent, dict) and rng.random() < 0.4:
        del parent[key]
    else:
        parent[key] = rng.choice(JUNK)
    return value


async def test_a_fuzzed_payload_never_raises_anything_but_malformed(chat: Chat, sqlite_url: str) -> None:
    """Seeds are what crossed the wire: a direct message, a group mention and a click on its card."""
    async with chat.running(sqlite_url, model=calls_then_answers(("deploy_service", {"service": "web"})),
                            registry=deploy_registry([]), capabilities=DEPLOY) as gateway:
        await chat.says(chat.dm, "hello")
        said = await chat.says(chat.group, "deploy web")
        await chat.wait_for(lambda: len(chat.cards(chat.group, said)) == 1)
        await chat.approve(chat.cards(chat.group, said)[0])
        await chat.wait_for(lambda: chat.answers(chat.group, said)[-1:] == ["done: deployed web"])
        seeds = [row.payload for row in await inbox_rows(sqlite_url)]
        assert len(seeds) == 3
        parse = gateway.adapters[chat.bot_name].parse
        rng = random.Random(chat.platform)
        for _ in range(3000):
            payload = rng.choice(seeds)
            for _ in range(rng.randint(1, 3)):
                payload = mutated(payload, rng)
            with contextlib.suppress(MalformedPayload):
                parse(payload if isinstance(payload, dict) else {"update_id": 1, "message": payload})
