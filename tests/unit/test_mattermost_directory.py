"""The Mattermost directory answers the four channel lookups from the server, as the bot account sees it."""

from __future__ import annotations

from typing import Any

import pytest
import pytest_asyncio

from adapters.base import DirectoryRefused
from adapters.mattermost.adapter import MattermostAdapter
from tests.support.fakes.mattermost import FakeMattermost

TOKEN = "d" * 26


@pytest_asyncio.fixture
async def setup(mattermost: FakeMattermost) -> dict[str, Any]:
    bot = mattermost.add_bot(TOKEN, username="helper")
    alice = mattermost.add_user("alice", first_name="Alice")
    team = mattermost.add_team("acme")
    channel = mattermost.add_channel(team, "release-planning", members=[bot, alice])
    private = mattermost.add_channel(team, "secret-plans", kind="P", members=[alice])
    adapter = MattermostAdapter(bot_id="mm", token=TOKEN, server_url=mattermost.url, team="acme")
    await adapter.open()
    return {"adapter": adapter, "channel": channel, "private": private, "alice": alice, "bot": bot}


async def test_channel_info_names_the_room_and_counts_its_members(setup: dict[str, Any]) -> None:
    info = await setup["adapter"].directory.channel_info(setup["channel"]["id"])
    assert (info.name, info.member_count, info.is_direct) == ("Release Planning", 2, False)


async def test_channel_members_are_speakers_of_this_server(setup: dict[str, Any], mattermost: FakeMattermost) -> None:
    members = await setup["adapter"].directory.channel_members(setup["channel"]["id"], limit=10)
    assert sorted(m.handle for m in members) == ["alice", "helper"]
    assert {m.workspace for m in members} == {mattermost.url.removeprefix("http://")}


async def test_search_finds_public_channels_of_the_team(setup: dict[str, Any]) -> None:
    found = await setup["adapter"].directory.search_channels("release", limit=5)
    assert [c.channel_id for c in found] == [setup["channel"]["id"]]
    assert await setup["adapter"].directory.search_channels("secret", limit=5) == []


async def test_history_is_the_newest_posts_oldest_first(setup: dict[str, Any], mattermost: FakeMattermost) -> None:
    for text in ("one", "two", "three"):
        await mattermost.user_posts(setup["channel"], setup["alice"], text)
    history = await setup["adapter"].directory.channel_history(setup["channel"]["id"], limit=2)
    assert [(h.speaker.handle, h.text) for h in history] == [("alice", "two"), ("alice", "three")]


async def test_a_channel_the_bot_cannot_see_is_refused(setup: dict[str, Any]) -> None:
    with pytest.raises(DirectoryRefused, match="invite it there first"):
        await setup["adapter"].directory.channel_info(setup["private"]["id"])
