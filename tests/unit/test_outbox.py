"""The outbox on both databases, through a real adapter and the fake platforms: a file is stored before it is
posted and posted once however many deliveries race for it; a file the platform cannot take is refused with
its size and the platform's limit before anything is stored; an upload the platform refuses is said, and a retried
attempt storing that file again is told it was not sent."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import timedelta

import pytest
import pytest_asyncio
from sqlalchemy import select, update

from adapters.base import ChatAddress
from adapters.slack.adapter import SlackAdapter
from adapters.telegram.adapter import TelegramAdapter
from capabilities.run import FileRefused
from gateway.pipeline.outbox import RunOutbox, turn_key
from gateway.pipeline.outbox_sweep import OutboxSweep
from storage.db import Database
from storage.models import OutboxFileRow, utcnow
from tests.support.fakes.slack import FakeSlack
from tests.support.fakes.telegram import FakeTelegram

PNG = b"\x89PNG\r\n\x1a\n" + b"\x01" * 500
TOKEN = "123456:outbox"


@pytest_asyncio.fixture
async def bot(telegram: FakeTelegram) -> AsyncIterator[TelegramAdapter]:
    telegram.add_bot(TOKEN, username="helper_bot")
    adapter = TelegramAdapter(bot_id="helper", token=TOKEN, api_base_url=telegram.url)
    await adapter.open()
    yield adapter
    await adapter.close()


def room(telegram: FakeTelegram) -> ChatAddress:
    chat = telegram.private_chat(telegram.add_user(1001, "Alice"))
    return ChatAddress(bot_id="helper", platform="telegram", channel_id=str(chat["id"]), is_direct=True)


async def statuses(db: Database) -> list[str]:
    async with db.session() as session:
        return list((await session.execute(select(OutboxFileRow.status).order_by(OutboxFileRow.id))).scalars())


def sent_photos(telegram: FakeTelegram) -> int:
    return sum(c.method == "sendPhoto" for c in telegram.calls)


async def test_a_file_is_stored_first_and_posted_once_by_racing_deliveries(db: Database, telegram: FakeTelegram,
                                                                           bot: TelegramAdapter) -> None:
    address = room(telegram)
    outbox = RunOutbox(db, bot, address, run_id=None, key=turn_key(0, None))
    await outbox.post_file(name="chart.png", data=PNG, mime_type="image/png")
    assert (await statuses(db), sent_photos(telegram)) == (["pending"], 0), "stored, not yet posted"
    others = [RunOutbox(db, bot, address, run_id=None, key=outbox.key) for _ in range(3)]
    posted = await asyncio.gather(outbox.deliver(), *(other.deliver() for other in others))
    assert (sum(posted), sent_photos(telegram), await statuses(db)) == (1, 1, ["posted"])
    assert await outbox.deliver() == 0


async def test_the_same_file_stored_again_by_a_retried_attempt_is_one_file(db: Database, telegram: FakeTelegram,
                                                                            bot: TelegramAdapter) -> None:
    address = room(telegram)
    first = RunOutbox(db, bot, address, run_id=None, key=turn_key(0, None))
    retry = RunOutbox(db, bot, address, run_id=None, key=first.key)
    await first.post_file(name="chart.png", data=PNG, mime_type="image/png")
    await retry.post_file(name="chart.png", data=PNG, mime_type="image/png")
    await retry.post_file(name="other.png", data=PNG + b"x", mime_type="image/png")
    assert await retry.deliver() == 2
    assert await statuses(db) == ["posted", "posted"]


async def test_a_file_larger_than_the_platform_takes_is_refused_with_both_sizes(db: Database, telegram: FakeTelegram,
                                                                                bot: TelegramAdapter) -> None:
    outbox = RunOutbox(db, bot, room(telegram), run_id=None, key="run:0")
    huge = b"\x00" * (bot.limits.max_file_bytes + 1)
    with pytest.raises(FileRefused, match=r"huge\.png is 47\.7 MB, larger than the 47\.7 MB allowed here on Telegram"):
        await outbox.post_file(name="huge.png", data=huge, mime_type="image/png")
    assert await statuses(db) == [], "nothing was stored"


async def test_an_upload_the_platform_refuses_is_said_in_the_thread(db: Database, slack: FakeSlack) -> None:
    app = slack.add_app("helper")
    app.scopes.discard("files:write")
    alice = slack.add_user("alice")
    channel = slack.add_channel("general", members=[alice, app])
    root = await slack.user_says(channel, alice, "chart please")
    adapter = SlackAdapter(bot_id="helper", token=app.token, transport="http", signing_secret="s",
                           api_base_url=slack.url)
    await adapter.open()
    address = ChatAddress(bot_id="helper", platform="slack", channel_id=f"{slack.team_id}:{channel['id']}",
                          thread_id=root["ts"])
    try:
        outbox = RunOutbox(db, adapter, address, run_id=None, key="run:0")
        await outbox.post_file(name="chart.png", data=PNG, mime_type="image/png")
        assert await outbox.deliver() == 0
        retry = RunOutbox(db, adapter, address, run_id=None, key="run:0")
        with pytest.raises(FileRefused, match=r"an earlier attempt at this answer could not post chart\.png here"):
            await retry.post_file(name="chart.png", data=PNG, mime_type="image/png")  # not promised again
    finally:
        await adapter.close()
    [notice] = slack.texts(channel, by=app, thread_ts=root["ts"])
    assert notice.startswith("I made chart.png but could not post it here: this Slack app may not post files: "
                             "it needs the files:write scope")
    assert await statuses(db) == ["failed"]


async def test_the_sweep_prunes_posted_rows_after_a_day_and_failed_ones_after_the_inbox_s_30_days(
        db: Database, telegram: FakeTelegram, bot: TelegramAdapter) -> None:
    address = room(telegram)
    outbox = RunOutbox(db, bot, address, run_id=None, key="inbox:7")
    for name in ("old.png", "new.png", "failed.png"):
        await outbox.post_file(name=name, data=PNG + name.encode(), mime_type="image/png")
    assert await outbox.deliver() == 3
    two_days_ago, a_month_ago = utcnow() - timedelta(days=2), utcnow() - timedelta(days=31)
    async with db.session() as session:  # the rows as time would leave them
        await session.execute(update(OutboxFileRow).where(OutboxFileRow.name == "old.png")
                              .values(posted_at=two_days_ago))
        await session.execute(update(OutboxFileRow).where(OutboxFileRow.name == "failed.png")
                              .values(status="failed", posted_at=None, created_at=a_month_ago))
    assert await OutboxSweep(db, {}, claim=timedelta(seconds=10)).prune() == 2
    async with db.session() as session:
        kept = (await session.execute(select(OutboxFileRow.name).order_by(OutboxFileRow.id))).scalars()
        assert list(kept) == ["new.png"]
