"""The local Telegram speaks the Bot API closely enough for the real python-telegram-bot client."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import timedelta

import aiohttp
import pytest
from aiohttp import web
from telegram import Bot, InlineKeyboardButton, InlineKeyboardMarkup, MessageEntity
from telegram.error import BadRequest, Conflict, InvalidToken, RetryAfter

from tests.support.fakes.telegram import FakeTelegram
from tests.support.loopback import serving

TOKEN = "123456:local-test-token"
SECRET = "s3cret_token-1"


@pytest.fixture
async def telegram() -> AsyncIterator[FakeTelegram]:
    async with FakeTelegram() as server:
        server.add_bot(TOKEN, username="gateway_bot", first_name="Gateway")
        yield server


@pytest.fixture
async def bot(telegram: FakeTelegram) -> AsyncIterator[Bot]:
    async with Bot(TOKEN, base_url=f"{telegram.url}/bot") as client:
        yield client


@pytest.fixture
def alice(telegram: FakeTelegram) -> dict:
    return telegram.add_user(1001, "Alice", username="alice")


@pytest.mark.parametrize("body", [b"{not json", b"[1, 2]"], ids=["unparsable", "not-an-object"])
async def test_a_json_body_that_is_not_an_object_is_a_bad_request(telegram: FakeTelegram, alice: dict,
                                                                   body: bytes) -> None:
    chat = telegram.private_chat(alice)
    headers = {"Content-Type": "application/json"}
    async with aiohttp.ClientSession() as session, session.post(
            f"{telegram.url}/bot{TOKEN}/sendMessage", data=body, headers=headers) as answer:
        assert (answer.status, await answer.json()) == (400, {
            "ok": False, "error_code": 400, "description": "Bad Request: can't parse JSON object"})
    assert telegram.messages(chat["id"]) == []


async def test_get_me_answers_the_registered_bot(bot: Bot) -> None:
    me = await bot.get_me()

    assert (me.id, me.username, me.is_bot) == (123456, "gateway_bot", True)


async def test_unknown_token_is_unauthorized(telegram: FakeTelegram) -> None:
    stranger = Bot("999:wrong", base_url=f"{telegram.url}/bot")
    try:
        with pytest.raises(InvalidToken):
            await stranger.initialize()
    finally:
        await stranger.shutdown()

    assert telegram.calls[-1].method == "getMe"


async def test_long_poll_returns_as_soon_as_a_user_speaks(telegram: FakeTelegram, bot: Bot, alice: dict) -> None:
    chat = telegram.private_chat(alice)
    poll = asyncio.create_task(bot.get_updates(timeout=30))
    await telegram.wait_for(lambda: any(call.method == "getUpdates" for call in telegram.calls))

    await telegram.user_says(TOKEN, chat, alice, "/start@gateway_bot hi @bob")
    async with asyncio.timeout(5):
        (update,) = await poll

    assert update.message.text == "/start@gateway_bot hi @bob"
    assert [(e.type, e.offset, e.length) for e in update.message.entities] == [
        (MessageEntity.BOT_COMMAND, 0, 18),
        (MessageEntity.MENTION, 22, 4),
    ]


async def test_offset_confirms_delivered_updates(telegram: FakeTelegram, bot: Bot, alice: dict) -> None:
    chat = telegram.private_chat(alice)
    await telegram.user_says(TOKEN, chat, alice, "one")
    await telegram.user_says(TOKEN, chat, alice, "two")

    first = await bot.get_updates()
    after_confirm = await bot.get_updates(offset=first[-1].update_id + 1)

    assert [u.message.text for u in first] == ["one", "two"]
    assert after_confirm == ()


async def test_deliver_again_repeats_an_update_with_its_id(telegram: FakeTelegram, bot: Bot, alice: dict) -> None:
    await telegram.user_says(TOKEN, telegram.private_chat(alice), alice, "once")
    (first,) = await bot.get_updates()
    await bot.get_updates(offset=first.update_id + 1)

    await telegram.deliver_again(TOKEN, first.update_id)
    (again,) = await bot.get_updates(offset=first.update_id + 1)

    assert (again.update_id, again.message.text) == (first.update_id, "once")


async def test_html_is_stored_as_visible_text(telegram: FakeTelegram, bot: Bot, alice: dict) -> None:
    chat = telegram.private_chat(alice)

    sent = await bot.send_message(chat["id"], "<b>Done</b> &amp; <i>dusted</i> &lt;3", parse_mode="HTML")

    assert sent.text == "Done & dusted <3"
    assert [(e.type, e.offset, e.length) for e in sent.entities] == [
        (MessageEntity.BOLD, 0, 4),
        (MessageEntity.ITALIC, 7, 6),
    ]
    assert telegram.transcript(chat["id"]) == [("Gateway", "Done & dusted <3")]


@pytest.mark.parametrize(
    "markup",
    [
        pytest.param("<b>open", id="unclosed"),
        pytest.param("<b>x</i>", id="mismatched"),
        pytest.param("<div>x</div>", id="unsupported"),
        pytest.param("1 < 2", id="bare-lt"),
        pytest.param("R & D", id="bare-amp"),
    ],
)
async def test_invalid_html_is_a_bad_request(telegram: FakeTelegram, bot: Bot, alice: dict, markup: str) -> None:
    chat = telegram.private_chat(alice)

    with pytest.raises(BadRequest, match=r"^Can't parse entities"):
        await bot.send_message(chat["id"], markup, parse_mode="HTML")

    assert telegram.bot_messages(chat["id"]) == []


async def test_editing_to_the_same_text_is_not_modified(telegram: FakeTelegram, bot: Bot, alice: dict) -> None:
    chat = telegram.private_chat(alice)
    sent = await bot.send_message(chat["id"], "draft")
    await bot.edit_message_text("final", chat_id=chat["id"], message_id=sent.message_id)

    with pytest.raises(BadRequest, match=r"^Message is not modified"):
        await bot.edit_message_text("final", chat_id=chat["id"], message_id=sent.message_id)

    assert [m["text"] for m in telegram.bot_messages(chat["id"])] == ["final"]


@pytest.mark.filterwarnings("ignore:.*retry_after.*:telegram.warnings.PTBDeprecationWarning")
async def test_too_many_requests_raises_retry_after(telegram: FakeTelegram, bot: Bot, alice: dict) -> None:
    chat = telegram.private_chat(alice)
    telegram.fail_next("sendMessage", retry_after=7)

    with pytest.raises(RetryAfter) as raised:
        await bot.send_message(chat["id"], "hello")
    sent = await bot.send_message(chat["id"], "hello")

    assert _seconds(raised.value) == 7
    assert sent.text == "hello"


async def test_button_click_reaches_the_bot_and_is_answered(telegram: FakeTelegram, bot: Bot, alice: dict) -> None:
    chat = telegram.private_chat(alice)
    keyboard = InlineKeyboardMarkup([[InlineKeyboardButton("Approve", callback_data="ap:42")]])
    card = await bot.send_message(chat["id"], "Approve?", reply_markup=keyboard)

    await telegram.user_clicks(TOKEN, card.to_dict(), alice, "ap:42")
    (update,) = await bot.get_updates()

    assert update.callback_query.data == "ap:42"
    assert update.callback_query.message.message_id == card.message_id
    assert await update.callback_query.answer("Recorded") is True


async def test_webhook_push_carries_the_secret_header(telegram: FakeTelegram, bot: Bot, alice: dict) -> None:
    received: list[tuple[str | None, dict]] = []

    async def receive(request: web.Request) -> web.Response:
        received.append((request.headers.get("X-Telegram-Bot-Api-Secret-Token"), await request.json()))
        return web.Response(text="ok")

    async with _receiver(receive) as url:
        await bot.set_webhook(url, secret_token=SECRET)
        message = await telegram.user_says(TOKEN, telegram.private_chat(alice), alice, "via webhook")

    assert received == [(SECRET, {"update_id": 1, "message": message})]
    assert telegram.webhook_responses == [(200, "ok")]


async def test_failed_webhook_push_stays_pending(telegram: FakeTelegram, bot: Bot, alice: dict) -> None:
    answers = iter([web.Response(status=500, text="boom"), web.Response(text="ok")])

    async def receive(request: web.Request) -> web.Response:
        return next(answers)

    async with _receiver(receive) as url:
        await bot.set_webhook(url, secret_token=SECRET)
        await telegram.user_says(TOKEN, telegram.private_chat(alice), alice, "retry me")
        pending = (await bot.get_webhook_info()).pending_update_count
        redelivered = await telegram.redeliver_pending(TOKEN)

    assert (pending, redelivered) == (1, 1)
    assert telegram.webhook_responses == [(500, "boom"), (200, "ok")]


async def test_get_updates_conflicts_with_an_active_webhook(bot: Bot) -> None:
    await bot.set_webhook("http://127.0.0.1:9/hook")

    with pytest.raises(Conflict, match="webhook is active"):
        await bot.get_updates()


async def test_secret_token_with_unallowed_characters_is_refused(bot: Bot) -> None:
    with pytest.raises(BadRequest, match="unallowed characters"):
        await bot.set_webhook("http://127.0.0.1:9/hook", secret_token="not allowed!")


def _seconds(error: RetryAfter) -> float:
    retry_after = error.retry_after  # an int in PTB 22 by default, a timedelta with PTB_TIMEDELTA=1
    return retry_after.total_seconds() if isinstance(retry_after, timedelta) else retry_after


@contextlib.asynccontextmanager
async def _receiver(handler: Callable[[web.Request], Awaitable[web.Response]]) -> AsyncIterator[str]:
    """A one-route aiohttp server on 127.0.0.1:0 standing in for the gateway's webhook; yields its URL."""
    app = web.Application()
    app.router.add_post("/hook", handler)
    async with serving(app) as url:
        yield f"{url}/hook"
