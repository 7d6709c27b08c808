"""Whose notes a turn reaches is decided by who will hear the answer: a person's in a DM, the room's in a group."""

from __future__ import annotations

from pydantic_ai.tools import ToolDefinition

from capabilities.memory_files.build import INDEX_LIMIT, NO_STORE, ROOM_SCOPE
from capabilities.memory_files.store import MemoryNotes
from capabilities.run import MemoryOwner
from storage.db import Database
from tests.support.fakes.telegram import FakeTelegram
from tests.support.harness import TelegramBot, ask, said_by
from tests.support.people_harness import identity_rows, memory_gateway, obeys, order, stored_notes
from tests.support.scripted import scripted

SECRET = "Alice is allergic to peanuts"


async def test_a_note_written_in_a_dm_is_not_reachable_in_a_group_with_the_same_person(
        telegram: FakeTelegram, database_url: str) -> None:
    bot = TelegramBot().register(telegram)
    alice = telegram.add_user(1001, "Alice")
    dm, group = telegram.private_chat(alice), telegram.group(-5001, "Team")
    async with memory_gateway(telegram=telegram, bots=[bot], database_url=database_url, model=obeys()):
        assert await ask(telegram, bot, dm, alice, order("write_memory", path="health.md", content=SECRET)) \
            == "done: created health.md (28 chars)"
        read_in_group = await ask(telegram, bot, group, alice, order("read_memory", path="health.md"))
        listed_in_group = await ask(telegram, bot, group, alice, order("list_memory"))
    assert "No note has the path 'health.md'" in read_in_group
    assert listed_in_group == "done: No notes yet."
    alice_identity = (await identity_rows(database_url))["1001"].id
    assert await stored_notes(database_url) == [("assistant", "identity", str(alice_identity), "health.md", SECRET)]


async def test_a_room_note_is_read_by_everyone_in_that_room_and_nowhere_else(
        telegram: FakeTelegram, database_url: str) -> None:
    bot = TelegramBot().register(telegram)
    alice, bob = telegram.add_user(1001, "Alice"), telegram.add_user(1002, "Bob")
    team, other = telegram.group(-5001, "Team"), telegram.group(-5002, "Other team")
    async with memory_gateway(telegram=telegram, bots=[bot], database_url=database_url, model=obeys()):
        await ask(telegram, bot, team, alice, order("write_memory", path="release.md", content="Freeze on Friday"))
        bob_in_team = await ask(telegram, bot, team, bob, order("read_memory", path="release.md"))
        bob_elsewhere = await ask(telegram, bot, other, bob, order("read_memory", path="release.md"))
        bob_in_dm = await ask(telegram, bot, telegram.private_chat(bob), bob,
                              order("read_memory", path="release.md"))
    assert bob_in_team == "done: Freeze on Friday"
    assert "No note has the path" in bob_elsewhere and "No note has the path" in bob_in_dm
    assert [(kind, key) for _, kind, key, _, _ in await stored_notes(database_url)] == [
        ("room", f"telegram:{bot.name}:-5001")]


async def test_the_index_is_injected_in_a_dm_and_never_in_a_group(telegram: FakeTelegram, database_url: str) -> None:
    bot = TelegramBot().register(telegram)
    alice = telegram.add_user(1001, "Alice")
    dm, group = telegram.private_chat(alice), telegram.group(-5001, "Team")
    seen: list[str] = []
    async with memory_gateway(telegram=telegram, bots=[bot], database_url=database_url, model=obeys(seen)):
        await ask(telegram, bot, dm, alice, order("write_memory", path="MEMORY.md", content="- food.md: DM index"))
        await ask(telegram, bot, group, alice, order("write_memory", path="MEMORY.md", content="- team.md: room"))
        await ask(telegram, bot, dm, alice, "hello")
        in_dm = seen[-1]
        await ask(telegram, bot, group, alice, "hello")
        in_group = seen[-1]
        readable_in_group = await ask(telegram, bot, group, alice, order("read_memory", path="MEMORY.md"))
    assert "<memory-index>\n- food.md: DM index\n</memory-index>" in in_dm
    assert "room" not in in_dm
    assert ROOM_SCOPE in in_group
    assert "<memory-index>" not in in_group and "team.md" not in in_group and "food.md" not in in_group
    assert readable_in_group == "done: - team.md: room"


async def test_an_index_past_the_limit_is_left_out_whole(telegram: FakeTelegram, database_url: str) -> None:
    bot = TelegramBot().register(telegram)
    alice = telegram.add_user(1001, "Alice")
    dm = telegram.private_chat(alice)
    seen: list[str] = []
    long_index = "".join(f"- note{n:04}.md: a line about something worth remembering\n" for n in range(200))
    assert len(long_index) > INDEX_LIMIT
    async with memory_gateway(telegram=telegram, bots=[bot], database_url=database_url, model=obeys(seen)):
        await ask(telegram, bot, dm, alice, "hello")
        identity = (await identity_rows(database_url))["1001"].id
        db = Database(database_url)
        try:
            await MemoryNotes(db).write("assistant", MemoryOwner(kind="identity", key=str(identity)), "MEMORY.md",
                                        long_index)
        finally:
            await db.close()
        await ask(telegram, bot, dm, alice, "hello again")
    assert "note0000.md" not in seen[-1] and "<memory-index>" not in seen[-1]
    assert f"MEMORY.md is too long to show here ({len(long_index):,} characters" in seen[-1]


async def test_without_personal_memory_a_dm_keeps_nothing_and_a_group_still_does(
        telegram: FakeTelegram, database_url: str) -> None:
    bot = TelegramBot(binding={"allow_personal_memory": False}).register(telegram)
    alice = telegram.add_user(1001, "Alice")
    dm, group = telegram.private_chat(alice), telegram.group(-5001, "Team")
    seen: list[str] = []
    async with memory_gateway(telegram=telegram, bots=[bot], database_url=database_url, model=obeys(seen)):
        in_dm = await ask(telegram, bot, dm, alice, order("write_memory", path="health.md", content=SECRET))
        instructions_in_dm = seen[0]
        in_group = await ask(telegram, bot, group, alice, order("write_memory", path="team.md", content="standup 9"))
    assert in_dm == f"done: {NO_STORE}" and NO_STORE in instructions_in_dm
    assert in_group == "done: created team.md (9 chars)"
    assert [(kind, path) for _, kind, _, path, _ in await stored_notes(database_url)] == [("room", "team.md")]


async def test_an_owner_argument_made_up_by_the_model_reaches_nobody_elses_notes(
        telegram: FakeTelegram, database_url: str) -> None:
    bot = TelegramBot().register(telegram)
    alice, mallory = telegram.add_user(1001, "Alice"), telegram.add_user(1666, "Mallory")
    group = telegram.group(-5001, "Team")
    async with memory_gateway(telegram=telegram, bots=[bot], database_url=database_url, model=obeys()):
        await ask(telegram, bot, telegram.private_chat(alice), alice,
                  order("write_memory", path="health.md", content=SECRET))
        alice_identity = (await identity_rows(database_url))["1001"].id
        forged = {"kind": "identity", "key": str(alice_identity)}
        read = await ask(telegram, bot, group, mallory, order("read_memory", path="health.md", owner=forged))
        written = await ask(telegram, bot, group, mallory,
                            order("write_memory", path="health.md", content="overwritten", scope=forged))
    assert SECRET not in read and "owner" in read
    assert "created" not in written and "replaced" not in written
    assert await stored_notes(database_url) == [("assistant", "identity", str(alice_identity), "health.md", SECRET)]


async def test_two_agents_never_read_each_others_notes(telegram: FakeTelegram, database_url: str) -> None:
    first = TelegramBot(username="first_bot").register(telegram)
    second = TelegramBot(username="second_bot").register(telegram)
    alice = telegram.add_user(1001, "Alice")
    dm = telegram.private_chat(alice)
    async with memory_gateway(telegram=telegram, bots=[first, second], database_url=database_url, model=obeys(),
                              agent_of={first.name: "alpha", second.name: "beta"}):
        await ask(telegram, first, dm, alice, order("write_memory", path="health.md", content=SECRET))
        read_by_beta = await ask(telegram, second, dm, alice, order("read_memory", path="health.md"))
        read_by_alpha = await ask(telegram, first, dm, alice, order("read_memory", path="health.md"))
    assert "No note has the path" in read_by_beta
    assert read_by_alpha == f"done: {SECRET}"


async def test_writing_a_note_waits_for_approval_then_lands_in_the_store_of_the_turn_that_asked(
        telegram: FakeTelegram, database_url: str) -> None:
    bot = TelegramBot().register(telegram)
    alice = telegram.add_user(1001, "Alice")
    dm = telegram.private_chat(alice)
    async with memory_gateway(telegram=telegram, bots=[bot], database_url=database_url, model=obeys(),
                              memory={"id": "memory_files"}):
        await telegram.user_says(bot.token, dm, alice, order("write_memory", path="health.md", content=SECRET))
        await telegram.wait_for(lambda: any(m.get("reply_markup") for m in telegram.bot_messages(dm["id"])))
        assert await stored_notes(database_url) == []
        [card] = [m for m in telegram.bot_messages(dm["id"]) if m.get("reply_markup")]
        [approve] = [b["callback_data"] for row in card["reply_markup"]["inline_keyboard"] for b in row
                     if "Approve" in b["text"]]
        await telegram.user_clicks(bot.token, card, alice, approve)
        await telegram.wait_for(lambda: said_by(telegram, dm, bot)[-1] == "done: created health.md (28 chars)")
    alice_identity = (await identity_rows(database_url))["1001"].id
    assert await stored_notes(database_url) == [("assistant", "identity", str(alice_identity), "health.md", SECRET)]


async def test_the_memory_tools_offer_no_way_to_name_a_store(telegram: FakeTelegram, sqlite_url: str) -> None:
    bot = TelegramBot().register(telegram)
    alice = telegram.add_user(1001, "Alice")
    offered: list[ToolDefinition] = []
    model = scripted(lambda _messages, info: offered.extend(info.function_tools) or "ok")
    async with memory_gateway(telegram=telegram, bots=[bot], database_url=sqlite_url, model=model):
        await ask(telegram, bot, telegram.private_chat(alice), alice, "hello")
    arguments = {tool.name: set(tool.parameters_json_schema["properties"]) for tool in offered}
    assert arguments == {"list_memory": set(), "read_memory": {"path"}, "write_memory": {"path", "content"},
                         "edit_memory": {"path", "old_text", "new_text"}, "delete_memory": {"path"}}
    for tool in offered:
        assert "<returns>" in (tool.description or ""), tool.name
        assert all(spec.get("description") for spec in tool.parameters_json_schema["properties"].values())
