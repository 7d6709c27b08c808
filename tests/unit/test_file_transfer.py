"""Files both ways through each real adapter, read off the fake platforms' wire: a file the bot posts lands in
the conversation's thread with its caption, and a file a person sent is downloaded with the bot's own token,
within a size cap, or refused with a reason a person can read."""

from __future__ import annotations

import pytest

from adapters.base import ChatAddress, FileRef, FileUnreadable, OutgoingFile
from adapters.mattermost.adapter import MattermostAdapter
from adapters.slack.adapter import SlackAdapter
from adapters.telegram.adapter import TelegramAdapter
from tests.support.fakes.mattermost import FakeMattermost
from tests.support.fakes.slack import FakeSlack
from tests.support.fakes.telegram import FakeTelegram

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 2000
CSV = b"month,sales\njan,3\nfeb,5\n"


async def slack_bot(slack: FakeSlack) -> tuple[SlackAdapter, object]:
    app = slack.add_app("helper")
    adapter = SlackAdapter(bot_id="helper", token=app.token, transport="http", signing_secret="s",
                           api_base_url=slack.url)
    await adapter.open()
    return adapter, app


async def test_slack_posts_a_file_into_the_thread_through_the_external_upload(slack: FakeSlack) -> None:
    adapter, app = await slack_bot(slack)
    alice = slack.add_user("alice")
    channel = slack.add_channel("general", members=[alice, app])
    root = await slack.user_says(channel, alice, "chart please")
    try:
        address = ChatAddress(bot_id="helper", platform="slack", channel_id=f"{slack.team_id}:{channel['id']}",
                              thread_id=root["ts"])
        await adapter.post_file(address, OutgoingFile(name="chart.png", data=PNG, mime_type="image/png",
                                                      caption="Sales by *month*"))
    finally:
        await adapter.close()
    [posted] = slack.messages(channel, thread_ts=root["ts"])
    [file] = posted["files"]
    assert (file["name"], slack.files.content[file["id"]], posted["text"]) == ("chart.png", PNG, "Sales by _month_")
    assert [c.method for c in slack.calls][-2:] == ["files.getUploadURLExternal", "files.completeUploadExternal"]


async def test_slack_without_files_write_names_the_missing_scope(slack: FakeSlack) -> None:
    adapter, app = await slack_bot(slack)
    app.scopes.discard("files:write")  # type: ignore[attr-defined]
    channel = slack.add_channel("general", members=[app])
    address = ChatAddress(bot_id="helper", platform="slack", channel_id=f"{slack.team_id}:{channel['id']}")
    try:
        with pytest.raises(FileUnreadable, match="files:write"):
            await adapter.post_file(address, OutgoingFile(name="c.png", data=PNG, mime_type="image/png"))
    finally:
        await adapter.close()


async def test_slack_reads_a_persons_file_with_the_bot_token(slack: FakeSlack) -> None:
    adapter, _app = await slack_bot(slack)
    shared = slack.files.add("sales.csv", CSV, mimetype="text/csv")
    try:
        data = await adapter.fetch_file(FileRef(file_id=shared["id"], name="sales.csv"), max_bytes=1000)
    finally:
        await adapter.close()
    assert data == CSV


async def test_slack_sign_in_page_instead_of_a_file_is_refused_not_read(slack: FakeSlack) -> None:
    adapter, _app = await slack_bot(slack)
    shared = slack.files.add("secret.pdf", b"%PDF-1.4", mimetype="application/pdf", private=True)
    try:
        with pytest.raises(FileUnreadable, match="text/html"):
            await adapter.fetch_file(FileRef(file_id=shared["id"], name="secret.pdf"), max_bytes=1000)
    finally:
        await adapter.close()


async def test_slack_without_files_read_says_which_scope_is_missing(slack: FakeSlack) -> None:
    adapter, app = await slack_bot(slack)
    app.scopes.discard("files:read")  # type: ignore[attr-defined]
    shared = slack.files.add("sales.csv", CSV, mimetype="text/csv")
    try:
        with pytest.raises(FileUnreadable, match="files:read"):
            await adapter.fetch_file(FileRef(file_id=shared["id"], name="sales.csv"), max_bytes=1000)
    finally:
        await adapter.close()


async def test_slack_download_past_the_cap_is_refused(slack: FakeSlack) -> None:
    adapter, _app = await slack_bot(slack)
    shared = slack.files.add("big.csv", CSV * 100, mimetype="text/csv")
    try:
        with pytest.raises(FileUnreadable, match="larger than"):
            await adapter.fetch_file(FileRef(file_id=shared["id"], name="big.csv"), max_bytes=100)
    finally:
        await adapter.close()


async def telegram_bot(telegram: FakeTelegram) -> tuple[TelegramAdapter, str]:
    token = "123456:abcdef"
    telegram.add_bot(token, username="helper_bot")
    adapter = TelegramAdapter(bot_id="helper", token=token, api_base_url=telegram.url)
    await adapter.open()
    return adapter, token


async def test_telegram_posts_a_picture_as_a_photo_in_the_topic(telegram: FakeTelegram) -> None:
    adapter, _token = await telegram_bot(telegram)
    forum = telegram.group(-100, "Team", supergroup=True, forum=True)
    address = ChatAddress(bot_id="helper", platform="telegram", channel_id=str(forum["id"]), thread_id="7")
    try:
        await adapter.post_file(address, OutgoingFile(name="chart.png", data=PNG, mime_type="image/png",
                                                      caption="Sales by **month**"))
        await adapter.post_file(address, OutgoingFile(name="data.csv", data=CSV, mime_type="text/csv"))
    finally:
        await adapter.close()
    photo, document = telegram.bot_messages(forum["id"], thread_id=7)
    assert (photo["caption"], telegram.file_content(photo)) == ("Sales by month", PNG)
    assert (document["document"]["file_name"], telegram.file_content(document)) == ("data.csv", CSV)
    assert [c.method for c in telegram.calls][-2:] == ["sendPhoto", "sendDocument"]


async def test_telegram_reads_a_persons_file_through_getfile(telegram: FakeTelegram) -> None:
    adapter, _token = await telegram_bot(telegram)
    telegram.add_file("doc-1", CSV, file_name="sales.csv")
    try:
        data = await adapter.fetch_file(FileRef(file_id="doc-1", name="sales.csv"), max_bytes=1000)
        with pytest.raises(FileUnreadable, match="larger than"):
            await adapter.fetch_file(FileRef(file_id="doc-1", name="sales.csv"), max_bytes=10)
        with pytest.raises(FileUnreadable, match=r"(?i)invalid file_id"):
            await adapter.fetch_file(FileRef(file_id="gone", name="gone.csv"), max_bytes=1000)
    finally:
        await adapter.close()
    assert data == CSV


async def mattermost_bot(mattermost: FakeMattermost) -> tuple[MattermostAdapter, dict[str, object]]:
    bot = mattermost.add_bot("tok" * 8, username="helper")
    adapter = MattermostAdapter(bot_id="helper", token="tok" * 8, server_url=mattermost.url, transport="webhook")
    await adapter.open()
    return adapter, bot


async def test_mattermost_uploads_then_posts_the_file_in_the_thread(mattermost: FakeMattermost) -> None:
    adapter, bot = await mattermost_bot(mattermost)
    alice = mattermost.add_user("alice")
    channel = mattermost.add_channel(mattermost.add_team("acme"), "town", members=[bot, alice])
    root = await mattermost.user_posts(channel, alice, "@helper chart")
    address = ChatAddress(bot_id="helper", platform="mattermost", channel_id=channel["id"], thread_id=root["id"])
    await adapter.post_file(address, OutgoingFile(name="chart.png", data=PNG, mime_type="image/png",
                                                  caption="Sales", key="k1"))
    [posted] = mattermost.posts(channel, user=bot, thread=root["id"])
    [file_id] = posted["file_ids"]
    assert (posted["message"], mattermost.files.content[file_id]) == ("Sales", PNG)
    assert posted["metadata"]["files"][0]["name"] == "chart.png"


async def test_mattermost_reads_a_file_of_its_channel_and_not_of_others(mattermost: FakeMattermost) -> None:
    adapter, bot = await mattermost_bot(mattermost)
    alice = mattermost.add_user("alice")
    team = mattermost.add_team("acme")
    mine = mattermost.add_channel(team, "town", members=[bot, alice])
    theirs = mattermost.add_channel(team, "private", members=[alice])
    readable = mattermost.files.add(mine["id"], alice["id"], "sales.csv", CSV, mime_type="text/csv")
    hidden = mattermost.files.add(theirs["id"], alice["id"], "hr.csv", CSV, mime_type="text/csv")
    assert await adapter.fetch_file(FileRef(file_id=readable["id"], name="sales.csv"), max_bytes=1000) == CSV
    with pytest.raises(FileUnreadable, match="403"):
        await adapter.fetch_file(FileRef(file_id=hidden["id"], name="hr.csv"), max_bytes=1000)
