"""Files in chats end to end, through real gateways and the fake platforms: a chart lands in the conversation's
thread on each platform; the outbox posts a run's file once across a park, a resume on another gateway, and a
worker that died between storing and posting; what a person attaches reaches the model as content."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from dataclasses import replace
from datetime import timedelta
from typing import Any

import pytest
import pytest_asyncio
from pydantic_ai import BinaryContent, ModelMessage, ModelRequest, UserPromptPart
from pydantic_ai.messages import ToolReturnPart
from pydantic_ai.models.function import AgentInfo, DeltaToolCall, DeltaToolCalls, FunctionModel
from pydantic_ai.profiles import ModelProfile
from sqlalchemy import select

from storage.db import Database
from storage.models import OutboxFileRow
from tests.contract.chats import Chat, MattermostChat, SlackChat, TelegramChat, chat_on
from tests.support.fakes.telegram import FakeTelegram
from tests.support.gated_tools import deploy_registry
from tests.support.harness import FAST, TelegramBot, running_gateway
from tests.support.scripted import stepped

CHARTS = [{"id": "charts"}]
CHART = {"chart_type": "bar", "title": "Sales by month", "x_values": ["Jan", "Feb", "Mar"],
         "series": [{"key": "sales", "values": [3, 5, 4]}]}
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
CSV = b"month,sales\njan,3\nfeb,5\nmar,4\n"
JPEG = b"\xff\xd8\xff\xe0" + b"\x00" * 64
PDF = b"%PDF-1.4\n%fake but well-formed enough\n"


def returned(messages: list[ModelMessage]) -> list[ToolReturnPart]:
    return [p for m in messages if isinstance(m, ModelRequest) for p in m.parts
            if isinstance(p, ToolReturnPart) and p.outcome != "retried"]


def steps(*calls: tuple[str, dict[str, Any]], answer: str = "Here it is.") -> FunctionModel:
    """Calls the tools in order, one per request, then answers `answer`."""
    def step(messages: list[ModelMessage]) -> tuple[str, dict[str, object], str] | str:
        done = len(returned(messages))
        return (calls[done][0], calls[done][1], f"call-{done + 1}") if done < len(calls) else answer
    return stepped(step)


# -- a chart into the conversation's thread, on each platform ---------------------------------------------------

@pytest_asyncio.fixture(params=["telegram", "slack", "mattermost"])
async def chat(request: pytest.FixtureRequest) -> AsyncIterator[Chat]:
    async with chat_on(request.param) as world:
        yield world


def pictures(chat: Chat, said: dict[str, Any]) -> list[bytes]:
    """The images the bot posted in the conversation of `said` (the group), as the platform stores them."""
    if isinstance(chat, TelegramChat):
        return [chat.fake.file_content(m) for m in chat.fake.bot_messages(chat.group["id"]) if "photo" in m]
    if isinstance(chat, SlackChat):
        return [chat.fake.files.content[f["id"]] for m in chat.fake.messages(chat.group, thread_ts=said["ts"])
                if m.get("user") == chat.bot.user_id for f in m.get("files") or []]
    assert isinstance(chat, MattermostChat)
    return [chat.fake.files.content[file_id] for p in chat.fake.posts(chat.group, user=chat.bot.user)
            if p["root_id"] == said["id"] for file_id in p.get("file_ids") or []]


def text_answers(chat: Chat, said: dict[str, Any]) -> list[str]:
    """The bot's words in the conversation, without the file posts (whose text is the caption, empty here)."""
    if isinstance(chat, TelegramChat):
        return [m["text"] for m in chat.fake.bot_messages(chat.group["id"]) if "text" in m]
    return [a for a in chat.answers(chat.group, said) if a]


async def test_a_chart_is_posted_as_a_picture_into_the_conversations_thread(chat: Chat, sqlite_url: str) -> None:
    async with chat.running(sqlite_url, model=steps(("create_chart", CHART)), capabilities=CHARTS):
        said = await chat.says(chat.group, "chart our sales")
        await chat.wait_for(lambda: len(pictures(chat, said)) == 1 and text_answers(chat, said) == ["Here it is."])
    [png] = pictures(chat, said)
    assert png[:8] == PNG_SIGNATURE


# -- the outbox across a park, a resume elsewhere, and a crash ---------------------------------------------------

def photos(telegram: FakeTelegram, chat_id: int) -> list[dict[str, Any]]:
    return [m for m in telegram.bot_messages(chat_id) if "photo" in m]


async def stored_files(database_url: str) -> list[OutboxFileRow]:
    db = Database(database_url)
    try:
        async with db.session() as session:
            return list((await session.execute(select(OutboxFileRow).order_by(OutboxFileRow.id))).scalars())
    finally:
        await db.close()


@pytest.mark.parametrize("database_url", ["sqlite", "postgresql"], indirect=True)
async def test_a_chart_made_before_a_park_is_posted_once_across_a_resume_on_another_gateway(
        telegram: FakeTelegram, database_url: str) -> None:
    bot = TelegramBot().register(telegram)
    alice = telegram.add_user(1001, "Alice")
    chat = telegram.private_chat(alice)
    executed: list[str] = []
    model = steps(("create_chart", CHART), ("deploy_service", {"service": "web"}), answer="deployed")
    capabilities = [*CHARTS, {"id": "deploy"}]
    async with running_gateway(telegram, [bot], database_url=database_url, redis_url=None, model=model,
                               registry=deploy_registry(executed), capabilities=capabilities):
        await telegram.user_says(bot.token, chat, alice, "chart it, then deploy web")
        await telegram.wait_for(lambda: any(m.get("reply_markup") for m in telegram.bot_messages(chat["id"])))
        assert len(photos(telegram, chat["id"])) == 1, "the park posted what the run had made"
    [card] = [m for m in telegram.bot_messages(chat["id"]) if m.get("reply_markup")]
    [photo] = photos(telegram, chat["id"])
    assert photo["message_id"] < card["message_id"], "the file is shown before the card"
    approve = next(b["callback_data"] for row in card["reply_markup"]["inline_keyboard"] for b in row
                   if "Approve" in b["text"])
    await telegram.user_clicks(bot.token, card, alice, approve)
    async with running_gateway(telegram, [bot], database_url=database_url, redis_url=None, model=model,
                               registry=deploy_registry(executed), capabilities=capabilities):
        await telegram.wait_for(lambda: [m.get("text") for m in telegram.bot_messages(chat["id"])][-1] == "deployed")
    assert executed == ["web"]
    assert len(photos(telegram, chat["id"])) == 1
    assert sum(c.method == "sendPhoto" for c in telegram.calls) == 1
    assert [row.status for row in await stored_files(database_url)] == ["posted"]


def charts_then_waits(gate: asyncio.Event, reached: asyncio.Event) -> FunctionModel:
    """Draws the chart, then holds its next request (the tool has returned: the chart is stored) until `gate` is
    set, setting `reached` when it gets there; the worker dies meanwhile."""
    async def stream(messages: list[ModelMessage], _info: AgentInfo) -> AsyncIterator[str | DeltaToolCalls]:
        if not returned(messages):
            yield {0: DeltaToolCall(name="create_chart", json_args=json.dumps(CHART), tool_call_id="call-1")}
            return
        reached.set()
        await gate.wait()
        yield "Here it is."
    return FunctionModel(stream_function=stream)


@pytest.mark.parametrize("database_url", ["sqlite", "postgresql"], indirect=True)
async def test_a_chart_stored_by_a_worker_that_died_before_posting_is_posted_once_by_the_retry(
        telegram: FakeTelegram, database_url: str) -> None:
    bot = TelegramBot().register(telegram)
    alice = telegram.add_user(1001, "Alice")
    chat = telegram.private_chat(alice)
    short_lease = replace(FAST, worker_lease=timedelta(seconds=1))
    never, stored = asyncio.Event(), asyncio.Event()
    first = running_gateway(telegram, [bot], database_url=database_url, redis_url=None,
                            model=charts_then_waits(never, stored), capabilities=CHARTS, tuning=short_lease)
    gateway = await first.__aenter__()
    try:
        await telegram.user_says(bot.token, chat, alice, "chart our sales")
        async with asyncio.timeout(10):
            await stored.wait()
        assert [row.status for row in await stored_files(database_url)] == ["pending"]
        await gateway.abort()  # the worker dies with the chart stored and not posted
    finally:
        await first.__aexit__(None, None, None)
    assert photos(telegram, chat["id"]) == []
    async with running_gateway(telegram, [bot], database_url=database_url, redis_url=None,
                               model=steps(("create_chart", CHART)), capabilities=CHARTS, tuning=short_lease):
        await telegram.wait_for(lambda: [m.get("text") for m in telegram.bot_messages(chat["id"])][-1:]
                                == ["Here it is."], timeout=15)
    assert len(photos(telegram, chat["id"])) == 1
    assert [row.status for row in await stored_files(database_url)] == ["posted"]


# -- what a person attaches reaches the model ---------------------------------------------------------------------

def receiving(seen: list[list[Any]], profile: ModelProfile | None = None) -> FunctionModel:
    """Answers 'read it', recording the content of the last user prompt of every request."""
    def step(messages: list[ModelMessage]) -> str:
        parts = [p for p in messages[-1].parts if isinstance(p, UserPromptPart)] \
            if isinstance(messages[-1], ModelRequest) else []
        content = parts[-1].content if parts else ""
        seen.append(list(content) if not isinstance(content, str) else [content])
        return "read it"
    model = stepped(step)
    return model if profile is None else FunctionModel(model.function, stream_function=model.stream_function,
                                                       profile=profile)


def binaries(seen: list[list[Any]]) -> list[BinaryContent]:
    return [item for item in seen[-1] if isinstance(item, BinaryContent)]


def texts(seen: list[list[Any]]) -> str:
    return "\n".join(item for item in seen[-1] if isinstance(item, str))


async def test_telegram_csv_photo_and_pdf_reach_the_model_as_text_and_binary_content(
        telegram: FakeTelegram, sqlite_url: str) -> None:
    bot = TelegramBot().register(telegram)
    alice = telegram.add_user(1001, "Alice")
    chat = telegram.private_chat(alice)
    seen: list[list[Any]] = []
    async with running_gateway(telegram, [bot], database_url=sqlite_url, redis_url=None, model=receiving(seen)):
        for content, name, mime, photo in ((CSV, "sales.csv", "text/csv", False), (JPEG, "p.jpg", "image/jpeg", True),
                                           (PDF, "report.pdf", "application/pdf", False)):
            before = len(seen)
            await telegram.user_sends_file(bot.token, chat, alice, content, file_name=name, mime_type=mime,
                                           caption="what is in it?", photo=photo)
            await telegram.wait_for(lambda before=before: len(seen) > before)  # type: ignore[misc]
            if name == "sales.csv":
                assert "what is in it?" in texts(seen) and "jan,3\nfeb,5" in texts(seen)
                assert 'name="sales.csv"' in texts(seen) and binaries(seen) == []
            else:
                [binary] = binaries(seen)
                assert (binary.data, binary.media_type) == (content, mime)


async def test_slack_csv_and_pdf_reach_the_model_and_an_unreadable_file_is_said(sqlite_url: str) -> None:
    async with chat_on("slack") as world:
        assert isinstance(world, SlackChat)
        seen: list[list[Any]] = []
        csv = world.fake.files.add("sales.csv", CSV, mimetype="text/csv")
        pdf = world.fake.files.add("report.pdf", PDF, mimetype="application/pdf")
        hidden = world.fake.files.add("hr.pdf", PDF, mimetype="application/pdf", private=True)
        async with world.running(sqlite_url, model=receiving(seen)):
            await world.fake.user_says(world.dm, world.alice, "read these", files=[csv, pdf, hidden])
            await world.wait_for(lambda: len(seen) >= 1)
    assert "jan,3\nfeb,5" in texts(seen)
    [binary] = binaries(seen)
    assert (binary.data, binary.media_type) == (PDF, "application/pdf")
    assert "The person attached hr.pdf, which you cannot see" in texts(seen)
    assert "Tell them so" in texts(seen)


async def test_mattermost_image_reaches_the_model_through_get_files(sqlite_url: str) -> None:
    async with chat_on("mattermost") as world:
        assert isinstance(world, MattermostChat)
        seen: list[list[Any]] = []
        async with world.running(sqlite_url, model=receiving(seen)):
            info = world.fake.files.add(world.dm["id"], world.alice["id"], "chart.png", PNG_SIGNATURE + b"x" * 10,
                                        mime_type="image/png")
            await world.fake.user_posts(world.dm, world.alice, "what is this?", file_ids=[info["id"]])
            await world.wait_for(lambda: len(seen) >= 1)
    [binary] = binaries(seen)
    assert (binary.data[:8], binary.media_type) == (PNG_SIGNATURE, "image/png")


async def test_a_model_that_cannot_see_pictures_is_told_what_it_was_sent(telegram: FakeTelegram,
                                                                       sqlite_url: str) -> None:
    bot = TelegramBot().register(telegram)
    alice = telegram.add_user(1001, "Alice")
    chat = telegram.private_chat(alice)
    seen: list[list[Any]] = []
    blind = receiving(seen, ModelProfile(supports_image_input=False))  # as a text-only model's profile says
    async with running_gateway(telegram, [bot], database_url=sqlite_url, redis_url=None, model=blind):
        await telegram.user_sends_file(bot.token, chat, alice, JPEG, file_name="p.jpg", mime_type="image/jpeg",
                                       photo=True)
        await telegram.wait_for(lambda: len(seen) >= 1)
    assert binaries(seen) == []
    assert "cannot look at pictures" in texts(seen)



JSON_FILE = b'{"month": "jan", "sales": 3, "note": "<b>not markup</b>"}'
HTML_FILE = b"<!DOCTYPE html><html><body><h1>Quarterly</h1><p>sales up 5%</p></body></html>"


async def attach(chat: Chat, name: str, content: bytes, mime_type: str) -> None:
    """Alice sends one file to the bot in their direct chat, as her platform carries it."""
    if isinstance(chat, TelegramChat):
        await chat.fake.user_sends_file(chat.bot.token, chat.dm, chat.alice, content, file_name=name,
                                        mime_type=mime_type, caption="what is in it?")
    elif isinstance(chat, SlackChat):
        file = chat.fake.files.add(name, content, mimetype=mime_type)
        await chat.fake.user_says(chat.dm, chat.alice, "what is in it?", files=[file])
    else:
        assert isinstance(chat, MattermostChat)
        info = chat.fake.files.add(chat.dm["id"], chat.alice["id"], name, content, mime_type=mime_type)
        await chat.fake.user_posts(chat.dm, chat.alice, "what is in it?", file_ids=[info["id"]])


@pytest.mark.parametrize(("name", "content", "mime_type"), [("sales.json", JSON_FILE, "application/json"),
                                                            ("report.html", HTML_FILE, "text/html")])
async def test_a_json_or_html_file_reaches_the_model_as_text_whatever_type_it_is_served_with(
        chat: Chat, sqlite_url: str, name: str, content: bytes, mime_type: str) -> None:
    seen: list[list[Any]] = []
    async with chat.running(sqlite_url, model=receiving(seen)):
        await attach(chat, name, content, mime_type)
        await chat.wait_for(lambda: len(seen) >= 1)
    assert f'name="{name}"' in texts(seen)
    assert content.decode() in texts(seen)
    assert "cannot see" not in texts(seen)
