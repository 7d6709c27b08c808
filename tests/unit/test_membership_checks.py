"""`Directory.is_member` asks the platform, over its wire API, whether a person is in a room right now."""

from __future__ import annotations

import pytest

from adapters.base import DirectoryRefused
from adapters.mattermost.adapter import MattermostAdapter
from adapters.slack.adapter import SlackAdapter
from adapters.telegram.adapter import TelegramAdapter
from tests.support.fakes.mattermost import FakeMattermost
from tests.support.fakes.slack import FakeSlack
from tests.support.fakes.telegram import FakeTelegram

TELEGRAM_TOKEN = "4242:membership-token"


async def test_telegram_asks_get_chat_member_and_a_person_who_left_is_no_member(telegram: FakeTelegram) -> None:
    bot = telegram.add_bot(TELEGRAM_TOKEN, username="helper_bot")
    alice = telegram.add_user(1001, "Alice")
    group = telegram.group(-500, "Ops")
    telegram.add_member(group, bot)
    telegram.add_member(group, alice)
    adapter = TelegramAdapter(bot_id="tg", token=TELEGRAM_TOKEN, api_base_url=telegram.url)
    await adapter.open()
    try:
        assert await adapter.directory.is_member("-500", "1001") is True
        telegram.remove_member(group, alice)
        assert await adapter.directory.is_member("-500", "1001") is False
        assert any(call.method == "getChatMember" for call in telegram.calls)
    finally:
        await adapter.close()


async def test_telegram_refuses_a_group_the_bot_is_not_in(telegram: FakeTelegram) -> None:
    telegram.add_bot(TELEGRAM_TOKEN, username="helper_bot")
    telegram.add_user(1001, "Alice")
    telegram.group(-501, "Elsewhere")
    adapter = TelegramAdapter(bot_id="tg", token=TELEGRAM_TOKEN, api_base_url=telegram.url)
    await adapter.open()
    try:
        with pytest.raises(DirectoryRefused):
            await adapter.directory.is_member("-501", "1001")
    finally:
        await adapter.close()


async def test_slack_reads_the_member_list_and_a_removed_person_is_no_member(slack: FakeSlack) -> None:
    app = slack.add_app("helper")
    alice = slack.add_user("alice")
    channel = slack.add_channel("ops", members=[app, alice])
    hidden = slack.add_channel("hidden", members=[alice])
    adapter = SlackAdapter(bot_id="sl", token=app.token, app_token=app.app_token, api_base_url=slack.url)
    await adapter.open()
    try:
        assert await adapter.directory.is_member(channel["id"], alice["id"]) is True
        slack.remove_member(channel, alice)
        assert await adapter.directory.is_member(channel["id"], alice["id"]) is False
        with pytest.raises(DirectoryRefused):
            await adapter.directory.is_member(hidden["id"], alice["id"])
    finally:
        await adapter.close()


async def test_mattermost_asks_for_the_one_membership(mattermost: FakeMattermost) -> None:
    token = "m" * 26
    bot = mattermost.add_bot(token, username="helper")
    alice = mattermost.add_user("alice", first_name="Alice")
    team = mattermost.add_team("acme")
    channel = mattermost.add_channel(team, "ops", members=[bot, alice])
    private = mattermost.add_channel(team, "secret", kind="P", members=[alice])
    adapter = MattermostAdapter(bot_id="mm", token=token, server_url=mattermost.url, team="acme")
    await adapter.open()
    assert await adapter.directory.is_member(channel["id"], alice["id"]) is True
    mattermost.remove_member(channel, alice)
    assert await adapter.directory.is_member(channel["id"], alice["id"]) is False
    with pytest.raises(DirectoryRefused):
        await adapter.directory.is_member(private["id"], alice["id"])
