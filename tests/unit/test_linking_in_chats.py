"""`link`, `unlink` and `forget` in DMs: the same human reaches the same notes from Telegram and Slack."""

from __future__ import annotations

import re
from typing import Any

from sqlalchemy import func, select

from gateway.people.identities import CODE_ALPHABET
from storage.db import Database
from storage.models import LinkCodeRow, MessageRow, RunRow
from tests.support.fakes.mattermost import FakeMattermost
from tests.support.fakes.slack import FakeSlack
from tests.support.fakes.telegram import FakeTelegram
from tests.support.harness import TelegramBot, ask
from tests.support.mattermost_harness import MattermostBot
from tests.support.people_harness import identity_rows, memory_gateway, obeys, order, stored_notes
from tests.support.slack_harness import SlackBot

_CODE = re.compile(rf"\b[{CODE_ALPHABET}]{{8}}\b")


async def tell_slack(slack: FakeSlack, bot: SlackBot, dm: dict[str, Any], user: dict[str, Any], text: str) -> str:
    before = len(slack.texts(dm, by=bot.app))
    await slack.user_says(dm, user, text)
    await slack.wait_for(lambda: len(slack.texts(dm, by=bot.app)) > before
                         and not slack.texts(dm, by=bot.app)[-1].endswith("…"))
    return slack.texts(dm, by=bot.app)[-1]


async def tell_slack_channel(slack: FakeSlack, bot: SlackBot, channel: dict[str, Any], user: dict[str, Any],
                             text: str) -> str:
    said = await slack.user_says(channel, user, f"{bot.mention} {text}")
    # A thread's reply streams into a message that starts empty (`chat.startStream`).
    await slack.wait_for(lambda: [t for t in slack.texts(channel, by=bot.app, thread_ts=said["ts"])
                                  if t and not t.endswith("…")] != [])
    return slack.texts(channel, by=bot.app, thread_ts=said["ts"])[-1]


async def tell_mattermost(mattermost: FakeMattermost, bot: MattermostBot, channel: dict[str, Any],
                          user: dict[str, Any], text: str) -> str:
    prefix = "" if channel["type"] == "D" else f"@{bot.username} "
    said = await mattermost.user_posts(channel, user, prefix + text)

    def answers() -> list[str]:
        return [p["message"] for p in mattermost.posts(channel, user=bot.user)
                if p["create_at"] >= said["create_at"] and p["id"] != said["id"]]
    await mattermost.wait_for(lambda: bool(answers()) and not answers()[-1].endswith("…"))
    return answers()[-1]


def code_in(text: str) -> str:
    [code] = set(_CODE.findall(text))
    return code


async def count(database_url: str, column: Any) -> int:
    db = Database(database_url)
    try:
        async with db.session() as session:
            return int((await session.execute(select(func.count(column)))).scalar_one())
    finally:
        await db.close()


async def test_after_linking_the_same_person_reaches_the_same_notes_from_telegram_and_slack(
        telegram: FakeTelegram, slack: FakeSlack, database_url: str) -> None:
    tg_bot, slack_bot = TelegramBot().register(telegram), SlackBot(app=slack.add_app("helper"))
    tg_alice, slack_alice = telegram.add_user(1001, "Alice"), slack.add_user("alice", real_name="Alice")
    tg_dm, slack_dm = telegram.private_chat(tg_alice), slack.open_dm(slack_alice, slack_bot.app)
    async with memory_gateway(telegram=telegram, bots=[tg_bot], slack=slack, slack_bots=[slack_bot],
                              database_url=database_url, model=obeys()):
        await ask(telegram, tg_bot, tg_dm, tg_alice, order("write_memory", path="tea.md", content="green"))
        issued = await ask(telegram, tg_bot, tg_dm, tg_alice, "/link")
        code = code_in(issued)
        linked = await tell_slack(slack, slack_bot, slack_dm, slack_alice, f"link {code}")
        from_slack = await tell_slack(slack, slack_bot, slack_dm, slack_alice, order("read_memory", path="tea.md"))
        await tell_slack(slack, slack_bot, slack_dm, slack_alice, order("write_memory", path="trip.md", content="Oslo"))
        from_telegram = await ask(telegram, tg_bot, tg_dm, tg_alice, order("read_memory", path="trip.md"))
    assert linked.startswith("Linked with Alice on Telegram")
    assert (from_slack, from_telegram) == ("done: green", "done: Oslo")
    identities = await identity_rows(database_url)
    person = identities[str(tg_alice["id"])].person_id
    assert person is not None and identities[slack_alice["id"]].person_id == person
    assert [(kind, key, path) for _, kind, key, path, _ in await stored_notes(database_url)] == [
        ("person", str(person), "tea.md"), ("person", str(person), "trip.md")]


async def test_link_commands_never_reach_the_model_or_the_transcript(telegram: FakeTelegram, sqlite_url: str) -> None:
    bot = TelegramBot().register(telegram)
    alice, alt = telegram.add_user(1001, "Alice"), telegram.add_user(1002, "Alice (work)")
    async with memory_gateway(telegram=telegram, bots=[bot], database_url=sqlite_url, model=obeys()):
        code = code_in(await ask(telegram, bot, telegram.private_chat(alice), alice, "link"))
        answer = await ask(telegram, bot, telegram.private_chat(alt), alt, f"link {code}")
    assert answer.startswith("Linked with Alice on Telegram")
    assert await count(sqlite_url, RunRow.id) == 0 and await count(sqlite_url, MessageRow.id) == 0


async def test_codes_are_neither_issued_nor_accepted_in_a_group(telegram: FakeTelegram, database_url: str) -> None:
    bot = TelegramBot().register(telegram)
    alice, bob = telegram.add_user(1001, "Alice"), telegram.add_user(1002, "Bob")
    group = telegram.group(-5001, "Team")
    async with memory_gateway(telegram=telegram, bots=[bot], database_url=database_url, model=obeys()):
        asked_in_group = await ask(telegram, bot, group, alice, "link")
        code = code_in(await ask(telegram, bot, telegram.private_chat(alice), alice, "link"))
        redeemed_in_group = await ask(telegram, bot, group, bob, f"link {code}")
    assert asked_in_group == "ok", "an ordinary message for the agent"
    assert redeemed_in_group.startswith("Link codes work in a direct message.")
    assert await count(database_url, LinkCodeRow.id) == 1
    assert {row.person_id for row in (await identity_rows(database_url)).values()} == {None}


async def test_a_link_code_typed_in_a_group_is_answered_there_never_reaches_the_model_and_stops_working(
        telegram: FakeTelegram, sqlite_url: str) -> None:
    bot = TelegramBot().register(telegram)
    alice, mallory = telegram.add_user(1001, "Alice"), telegram.add_user(1002, "Mallory")
    group = telegram.group(-5002, "Team")
    async with memory_gateway(telegram=telegram, bots=[bot], database_url=sqlite_url, model=obeys()):
        code = code_in(await ask(telegram, bot, telegram.private_chat(alice), alice, "link"))
        in_group = await ask(telegram, bot, group, alice, f"link {code.lower()}")
        taken = await ask(telegram, bot, telegram.private_chat(mallory), mallory, f"link {code}")
        shaped = await ask(telegram, bot, group, alice, "link ABCD-EFGH")
    assert in_group.startswith("Link codes work in a direct message. That code no longer works")
    assert taken.startswith("That code is not valid"), "whoever read it in the group cannot use it"
    assert shaped.startswith("Link codes work in a direct message: send link CODE")
    assert await count(sqlite_url, RunRow.id) == 0 and await count(sqlite_url, MessageRow.id) == 0


async def test_unlink_in_a_dm_separates_the_accounts_again(telegram: FakeTelegram, sqlite_url: str) -> None:
    bot = TelegramBot().register(telegram)
    alice, alt = telegram.add_user(1001, "Alice"), telegram.add_user(1002, "Alice (work)")
    alice_dm, alt_dm = telegram.private_chat(alice), telegram.private_chat(alt)
    async with memory_gateway(telegram=telegram, bots=[bot], database_url=sqlite_url, model=obeys()):
        code = code_in(await ask(telegram, bot, alice_dm, alice, "link"))
        await ask(telegram, bot, alt_dm, alt, f"link {code}")
        await ask(telegram, bot, alice_dm, alice, order("write_memory", path="tea.md", content="green"))
        unlinked = await ask(telegram, bot, alt_dm, alt, "unlink")
        after = await ask(telegram, bot, alt_dm, alt, order("read_memory", path="tea.md"))
        still = await ask(telegram, bot, alice_dm, alice, order("read_memory", path="tea.md"))
    assert unlinked.startswith("Unlinked")
    assert "No note has the path" in after and still == "done: green"
    assert (await identity_rows(sqlite_url))["1002"].person_id is None


async def test_forget_asks_first_then_deletes_what_every_agent_remembers(
        telegram: FakeTelegram, database_url: str) -> None:
    first = TelegramBot(username="first_bot").register(telegram)
    second = TelegramBot(username="second_bot").register(telegram)
    alice = telegram.add_user(1001, "Alice")
    dm, group = telegram.private_chat(alice), telegram.group(-5001, "Team")
    async with memory_gateway(telegram=telegram, bots=[first, second], database_url=database_url, model=obeys(),
                              agent_of={first.name: "alpha", second.name: "beta"}):
        await ask(telegram, first, dm, alice, order("write_memory", path="a.md", content="for alpha"))
        await ask(telegram, second, dm, alice, order("write_memory", path="b.md", content="for beta"))
        await ask(telegram, first, group, alice, order("write_memory", path="team.md", content="room"))
        asked = await ask(telegram, second, dm, alice, "forget")
        notes_after_asking = len(await stored_notes(database_url))
        done = await ask(telegram, second, dm, alice, "/forget yes")
    assert "(2 note(s))" in asked and "forget yes" in asked and notes_after_asking == 3
    assert done.startswith("Done: 2 note(s) deleted")
    assert [(agent, kind, path) for agent, kind, _, path, _ in await stored_notes(database_url)] == [
        ("alpha", "room", "team.md")]


async def test_forget_deletes_the_notes_an_agent_wrote_before_the_operator_unbound_memory(
        telegram: FakeTelegram, database_url: str) -> None:
    bot, alice = TelegramBot().register(telegram), telegram.add_user(1001, "Alice")
    dm = telegram.private_chat(alice)
    async with memory_gateway(telegram=telegram, bots=[bot], database_url=database_url, model=obeys()):
        await ask(telegram, bot, dm, alice, order("write_memory", path="tea.md", content="green"))
    async with memory_gateway(telegram=telegram, bots=[bot], database_url=database_url, model=obeys(),
                              memory={"id": "clock"}):
        asked = await ask(telegram, bot, dm, alice, "forget")
        done = await ask(telegram, bot, dm, alice, "forget yes")
    assert "(1 note(s))" in asked and done.startswith("Done: 1 note(s) deleted")
    assert await stored_notes(database_url) == []


async def test_one_agent_in_telegram_dms_mattermost_and_a_slack_channel_keeps_private_notes_out_of_rooms(
        telegram: FakeTelegram, slack: FakeSlack, mattermost: FakeMattermost, database_url: str) -> None:
    tg_bot, slack_bot = TelegramBot().register(telegram), SlackBot(app=slack.add_app("helper"))
    mm_bot = MattermostBot().register(mattermost)
    tg_alice = telegram.add_user(1001, "Alice")
    mm_alice = mattermost.add_user("alice", first_name="Alice")
    town = mattermost.add_channel(mattermost.add_team("acme"), "town-square", members=[mm_bot.user, mm_alice])
    slack_alice, slack_bob = slack.add_user("alice", real_name="Alice"), slack.add_user("bob", real_name="Bob")
    general = slack.add_channel("general", members=[slack_alice, slack_bob, slack_bot.app])
    async with memory_gateway(telegram=telegram, bots=[tg_bot], slack=slack, slack_bots=[slack_bot],
                              mattermost=mattermost, mattermost_bots=[mm_bot], database_url=database_url,
                              model=obeys()):
        tg_dm, mm_dm = telegram.private_chat(tg_alice), mattermost.direct_channel(mm_alice, mm_bot.user)
        await ask(telegram, tg_bot, tg_dm, tg_alice, order("write_memory", path="me.md", content="private"))
        code = code_in(await ask(telegram, tg_bot, tg_dm, tg_alice, "link"))
        linked = await tell_mattermost(mattermost, mm_bot, mm_dm, mm_alice, f"link {code}")
        in_mattermost_dm = await tell_mattermost(mattermost, mm_bot, mm_dm, mm_alice,
                                                 order("read_memory", path="me.md"))
        in_mattermost_channel = await tell_mattermost(mattermost, mm_bot, town, mm_alice,
                                                      order("read_memory", path="me.md"))
        await tell_slack_channel(slack, slack_bot, general, slack_alice,
                                 order("write_memory", path="team.md", content="standup at 9"))
        bob_reads_room = await tell_slack_channel(slack, slack_bot, general, slack_bob,
                                                  order("read_memory", path="team.md"))
        bob_tries_private = await tell_slack_channel(slack, slack_bot, general, slack_bob,
                                                     order("read_memory", path="me.md"))
    assert linked.startswith("Linked with Alice on Telegram") and in_mattermost_dm == "done: private"
    assert "No note has the path 'me.md'" in in_mattermost_channel and "private" not in in_mattermost_channel
    assert "No note has the path 'me.md'" in bob_tries_private and "private" not in bob_tries_private
    assert bob_reads_room == "done: standup at 9"
