"""What the Slack parser makes of each event: one logical message per post, persons' words only, no crash."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import pytest
import pytest_asyncio

from adapters.base import Inbound
from adapters.slack.adapter import SlackAdapter
from adapters.slack.people import PEOPLE_KEY
from tests.support.fakes.slack import FakeSlack, SlackApp


@pytest_asyncio.fixture
async def app(slack: FakeSlack) -> SlackApp:
    return slack.add_app("helper")


@pytest_asyncio.fixture
async def adapter(slack: FakeSlack, app: SlackApp) -> AsyncIterator[SlackAdapter]:
    opened = SlackAdapter(bot_id="helper", token=app.token, app_token=app.app_token, api_base_url=slack.url)
    await opened.open()
    yield opened
    await opened.close()


async def test_a_logical_id_names_the_workspace_and_both_twins_are_mentions(
        slack: FakeSlack, app: SlackApp, adapter: SlackAdapter) -> None:
    alice = slack.add_user("alice")
    general = slack.add_channel("general", members=[alice, app])
    said = await slack.user_says(general, alice, f"<@{app.bot_user_id}> hi")
    twins = [adapter.parse(payload) for payload in slack.events_for(app)]
    assert all(isinstance(twin, Inbound) and twin.addressed == "mention" for twin in twins)
    assert {twin.logical_id for twin in twins} == {  # type: ignore[union-attr]
        f"slack:helper:{slack.team_id}:{general['id']}:{said['ts']}"}


@dataclass(frozen=True, slots=True, kw_only=True)
class Case:
    id: str
    change: dict[str, Any]
    answered: bool


SUBTYPES = [
    Case(id="plain", change={}, answered=True),
    Case(id="file-share", change={"subtype": "file_share", "files": [{"id": "F1", "name": "a.txt"}]}, answered=True),
    Case(id="thread-broadcast", change={"subtype": "thread_broadcast", "thread_ts": "1.000001"}, answered=True),
    Case(id="edit", change={"subtype": "message_changed", "hidden": True}, answered=False),
    Case(id="deleted", change={"subtype": "message_deleted", "hidden": True}, answered=False),
    Case(id="join", change={"subtype": "channel_join"}, answered=False),
    Case(id="legacy-bot", change={"subtype": "bot_message", "bot_id": "B9"}, answered=False),
    Case(id="modern-bot", change={"bot_id": "B9", "bot_profile": {"name": "ci"}}, answered=False),
]


@pytest.mark.parametrize("case", [pytest.param(c, id=c.id) for c in SUBTYPES])
async def test_only_messages_that_carry_a_persons_words_are_read(
        slack: FakeSlack, app: SlackApp, adapter: SlackAdapter, case: Case) -> None:
    alice = slack.add_user("alice")
    general = slack.add_channel("general", members=[alice, app])
    await slack.user_says(general, alice, f"<@{app.bot_user_id}> hi")
    [payload] = slack.events_for(app, event_type="message")
    payload["event"] |= case.change
    assert isinstance(adapter.parse(payload), Inbound) is case.answered


async def test_an_app_mention_without_bot_id_from_a_bot_user_is_ignored(
        slack: FakeSlack, app: SlackApp, adapter: SlackAdapter) -> None:
    other = slack.add_user("ci", is_bot=True)
    general = slack.add_channel("general", members=[other, app])
    await slack.user_says(general, other, f"<@{app.bot_user_id}> build done")
    [payload] = slack.events_for(app, event_type="app_mention")
    assert adapter.parse(await adapter.annotate(payload)) is None


async def test_threads_per_room_kind(slack: FakeSlack, app: SlackApp, adapter: SlackAdapter) -> None:
    alice = slack.add_user("alice")
    dm, general = slack.open_dm(alice, app), slack.add_channel("general", members=[alice, app])
    top_dm = await slack.user_says(dm, alice, "top")
    in_dm_thread = await slack.user_says(dm, alice, "reply", thread_ts=top_dm["ts"])
    top_channel = await slack.user_says(general, alice, f"<@{app.bot_user_id}> top")
    threads = {}
    for payload in slack.events_for(app, event_type="message"):
        parsed = adapter.parse(payload)
        assert isinstance(parsed, Inbound)
        threads[parsed.message_id] = (parsed.address.thread_id, parsed.address.is_direct)
    assert threads == {top_dm["ts"]: (None, True), in_dm_thread["ts"]: (top_dm["ts"], True),
                       top_channel["ts"]: (top_channel["ts"], False)}


async def test_names_travel_in_the_payload(slack: FakeSlack, app: SlackApp, adapter: SlackAdapter) -> None:
    alice = slack.add_user("alice", real_name="Alice")
    bob = slack.add_user("bob", real_name="Bob")
    general = slack.add_channel("general", members=[alice, bob, app])
    await slack.user_says(general, alice, f"<@{app.bot_user_id}> ask <@{bob['id']}>")
    [payload] = slack.events_for(app, event_type="app_mention")
    annotated = await adapter.annotate(payload)
    parsed = adapter.parse(annotated)
    assert sorted(annotated[PEOPLE_KEY]) == sorted([alice["id"], bob["id"]])
    assert isinstance(parsed, Inbound) and (parsed.speaker.display_name, parsed.text) == ("Alice", "ask @Bob")
