"""Each adapter offers the abilities its platform has, and lacks (rather than stubs) the ones it has not."""

from __future__ import annotations

import pytest

from adapters.mattermost.adapter import MattermostAdapter
from adapters.platforms import PlatformAdapter
from adapters.protocols import Closable, FollowsThreads, PostsFiles, ReadsFiles, ShowsTyping
from adapters.slack.adapter import SlackAdapter
from adapters.telegram.adapter import TelegramAdapter

TOKEN = "123456:" + "a" * 35


def telegram(*, webhook: bool = False) -> TelegramAdapter:
    return TelegramAdapter(bot_id="tg", token=TOKEN, webhook_url="https://gw.example.org/telegram/tg/webhook"
                           if webhook else None, webhook_secret="s" if webhook else None)


def slack(transport: str = "socket") -> SlackAdapter:
    return SlackAdapter(bot_id="sl", token="xoxb-1", transport=transport, app_token="xapp-1")  # type: ignore[arg-type]


def mattermost(transport: str = "websocket") -> MattermostAdapter:
    return MattermostAdapter(bot_id="mm", token="t" * 26, server_url="https://chat.example.org", transport=transport)


@pytest.mark.parametrize(("adapter", "abilities"), [
    (telegram(), {ShowsTyping, Closable}),
    (slack(), {FollowsThreads, Closable}),
    (mattermost(), {FollowsThreads, ShowsTyping}),
], ids=["telegram", "slack", "mattermost"])
def test_optional_abilities_are_present_or_absent(adapter: PlatformAdapter, abilities: set[type]) -> None:
    assert {kind for kind in (Closable, FollowsThreads, ShowsTyping) if isinstance(adapter, kind)} == abilities


@pytest.mark.parametrize("adapter", [telegram(), slack(), mattermost()], ids=["telegram", "slack", "mattermost"])
def test_every_platform_posts_and_reads_files(adapter: PlatformAdapter) -> None:
    assert isinstance(adapter, PostsFiles) and isinstance(adapter, ReadsFiles)


def test_only_socket_and_polling_bots_have_a_transport() -> None:
    assert [a.transport is not None for a in (telegram(), slack("socket"), mattermost("websocket"))] == [True] * 3
    assert [a.transport for a in (telegram(webhook=True), slack("http"), mattermost("webhook"))] == [None] * 3
