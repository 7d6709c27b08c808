"""A person takes charge of a running turn on Telegram: the Stop button (in groups: a private chat shows the answer as
a draft, which carries none) and the word `stop` end it within 2 s with the text so far marked stopped, only for the
asker (and a group's approvers); a message sent mid-turn is handed to the running turn (`while_busy: steer`), or
interrupts it, and every message is answered once."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack
from typing import Any

import pytest
from pydantic_ai import ModelMessage, ModelRequest, ModelResponse, TextPart
from pydantic_ai.messages import ToolReturnPart
from pydantic_ai.models.function import AgentInfo, DeltaToolCall, DeltaToolCalls, FunctionModel
from sqlalchemy import select

from gateway.pipeline.turn_control import NOT_YOURS, NOTHING_RUNNING
from gateway.server.app import Gateway
from storage.db import Database
from storage.models import InboxRow, RunRow
from tests.support.fakes.telegram import FakeTelegram
from tests.support.harness import TelegramBot, ask, running_gateway, said_by
from tests.support.records import until_done
from tests.support.scripted import last_prompt, user_prompts

STOP_WITHIN = 2.0
"""Seconds from the click (or the word) to the reply marked stopped."""


def held_first(gate: asyncio.Event, *, then_call: str | None = None,
               seen: list[list[str]] | None = None) -> FunctionModel:
    """The first request streams "thinking " and holds until `gate` is set (the model still working), then ends
    (or calls `then_call`); every later request echoes its last prompt, or with `seen` answers every prompt it was
    sent (recorded there)."""
    calls = 0

    async def stream(messages: list[ModelMessage], _info: AgentInfo) -> AsyncIterator[str | DeltaToolCalls]:
        nonlocal calls
        calls += 1
        if calls == 1:
            yield "thinking "
            await gate.wait()
            if then_call is not None:
                yield {0: DeltaToolCall(name=then_call, json_args=json.dumps({}), tool_call_id="call-1")}
                return
            yield "and done"
            return
        if seen is not None:
            prompts = user_prompts(messages)
            seen.append(prompts)
            yield "answered: " + " + ".join(prompts)
            return
        yield f"echo: {last_prompt(messages)}"

    def complete(_messages: list[ModelMessage], _info: AgentInfo) -> ModelResponse:
        raise AssertionError("this model only streams")

    return FunctionModel(complete, stream_function=stream)


def stop_buttons(telegram: FakeTelegram, chat: dict[str, Any]) -> list[dict[str, Any]]:
    """The bot's messages that show a Stop button now."""
    return [m for m in telegram.bot_messages(chat["id"])
            if any(b.get("callback_data") == "st:" for row in m.get("reply_markup", {}).get("inline_keyboard", [])
                   for b in row)]


def thinking(telegram: FakeTelegram, chat: dict[str, Any]) -> bool:
    """The turn is being written in a private chat: its text so far shows as a draft, which carries no button."""
    return any(text.startswith("thinking") for text in telegram.drafts.current(chat["id"]))


def sent_starting(telegram: FakeTelegram, chat: dict[str, Any], prefix: str) -> list[str]:
    return [m["text"] for m in telegram.bot_messages(chat["id"]) if m["text"].startswith(prefix)]


def message(telegram: FakeTelegram, chat: dict[str, Any], message_id: int) -> dict[str, Any]:
    [found] = [m for m in telegram.bot_messages(chat["id"]) if m["message_id"] == message_id]
    return found


def click_answers(telegram: FakeTelegram) -> list[dict[str, Any]]:
    return [c.params for c in telegram.calls if c.method == "answerCallbackQuery"]


async def runs(database_url: str) -> list[str]:
    db = Database(database_url)
    try:
        async with db.session() as session:
            return list((await session.execute(select(RunRow.status).order_by(RunRow.id))).scalars())
    finally:
        await db.close()


async def items(database_url: str) -> list[tuple[str, int | None]]:
    db = Database(database_url)
    try:
        async with db.session() as session:
            rows = await session.execute(select(InboxRow.status, InboxRow.taken_by).order_by(InboxRow.id))
            return [(status, taken) for status, taken in rows.all()]
    finally:
        await db.close()


async def test_the_stop_button_ends_a_streaming_turn_and_the_next_message_is_answered(
        telegram: FakeTelegram, database_url: str) -> None:
    gate = asyncio.Event()  # never set: the model would hold for ever
    bot = TelegramBot().register(telegram)
    ada = telegram.add_user(101, "Ada", username="ada")
    chat = telegram.group(-4001, "Ops")  # a private chat shows drafts, which carry no button
    async with running_gateway(telegram, [bot], database_url=database_url, redis_url=None, model=held_first(gate)):
        await telegram.user_says(bot.token, chat, ada, "@helper_bot write me a long story")
        await telegram.wait_for(lambda: len(stop_buttons(telegram, chat)) == 1)
        [live] = stop_buttons(telegram, chat)
        assert live["text"].startswith("thinking")
        await telegram.user_clicks(bot.token, live, ada, "st:")
        await telegram.wait_for(lambda: "Stopped" in message(telegram, chat, live["message_id"])["text"],
                                timeout=STOP_WITHIN)
        stopped = message(telegram, chat, live["message_id"])
        assert stopped["text"] == "thinking\n\n⏹ Stopped by Ada (@ada)."
        assert not stopped.get("reply_markup")
        await telegram.wait_for(lambda: len(click_answers(telegram)) == 1)
        assert click_answers(telegram)[0]["show_alert"] is False
        assert await ask(telegram, bot, chat, ada, "hello") == "echo: [Ada] hello"  # a group names its speakers
        await until_done(database_url, 3)
    assert await runs(database_url) == ["stopped", "answered"]
    assert [status for status, _taken in await items(database_url)] == ["done", "done", "done"]


async def test_the_word_stop_ends_the_turn_and_stop_with_nothing_running_says_so(
        telegram: FakeTelegram, database_url: str) -> None:
    gate = asyncio.Event()
    bot = TelegramBot().register(telegram)
    ada = telegram.add_user(101, "Ada", username="ada")
    chat = telegram.private_chat(ada)
    async with running_gateway(telegram, [bot], database_url=database_url, redis_url=None, model=held_first(gate)):
        await telegram.user_says(bot.token, chat, ada, "write me a long story")
        await telegram.wait_for(lambda: thinking(telegram, chat))
        await telegram.user_says(bot.token, chat, ada, "stop")
        await telegram.wait_for(lambda: bool(sent_starting(telegram, chat, "thinking")), timeout=STOP_WITHIN)
        assert sent_starting(telegram, chat, "thinking") == ["thinking\n\n⏹ Stopped by Ada (@ada)."]
        await until_done(database_url, 2)  # the stopped turn's end is committed after its last text is sent
        assert await ask(telegram, bot, chat, ada, "/stop") == NOTHING_RUNNING
    assert await runs(database_url) == ["stopped"]


async def test_in_a_group_only_the_asker_or_an_approver_stops_the_turn(telegram: FakeTelegram, sqlite_url: str) -> None:
    gate = asyncio.Event()
    bot = TelegramBot(binding={"approvals": {"who": "approvers", "approvers": ["@olga"]}}).register(telegram)
    alice = telegram.add_user(1001, "Alice", username="alice")
    mallory = telegram.add_user(1002, "Mallory", username="mallory")
    olga = telegram.add_user(1003, "Olga", username="olga")
    group = telegram.group(-4001, "Ops")
    async with running_gateway(telegram, [bot], database_url=sqlite_url, redis_url=None, model=held_first(gate)):
        await telegram.user_says(bot.token, group, alice, "@helper_bot write me a long story")
        await telegram.wait_for(lambda: len(stop_buttons(telegram, group)) == 1)
        [live] = stop_buttons(telegram, group)
        await telegram.user_clicks(bot.token, live, mallory, "st:")
        await telegram.wait_for(lambda: len(click_answers(telegram)) == 1)
        assert click_answers(telegram)[0] == {**click_answers(telegram)[0], "text": NOT_YOURS, "show_alert": True}
        await telegram.user_says(bot.token, group, mallory, "@helper_bot stop")
        await telegram.wait_for(lambda: said_by(telegram, group, bot)[-1] == NOT_YOURS)
        assert message(telegram, group, live["message_id"])["text"] == "thinking"
        await telegram.user_clicks(bot.token, live, olga, "st:")
        await telegram.wait_for(lambda: "Stopped" in message(telegram, group, live["message_id"])["text"],
                                timeout=STOP_WITHIN)
    assert message(telegram, group, live["message_id"])["text"].endswith("⏹ Stopped by Olga (@olga).")


async def test_steer_hands_a_message_sent_mid_turn_to_the_running_turns_next_request(
        telegram: FakeTelegram, database_url: str) -> None:
    gate = asyncio.Event()
    seen: list[list[str]] = []
    bot = TelegramBot().register(telegram)
    ada = telegram.add_user(101, "Ada", username="ada")
    chat = telegram.private_chat(ada)
    async with running_gateway(telegram, [bot], database_url=database_url, redis_url=None,
                               model=held_first(gate, then_call="read_plan", seen=seen),
                               capabilities=[{"id": "planning"}]) as gateway:
        await telegram.user_says(bot.token, chat, ada, "plan my trip")
        await telegram.wait_for(lambda: thinking(telegram, chat))
        await telegram.user_says(bot.token, chat, ada, "by train, please")
        assert gateway.worker is not None
        [signal] = gateway.worker.turns.running()
        noted = asyncio.Event()
        signal.on_newer = noted.set  # the heartbeat read it: the next request takes it
        if not signal.newer:
            await asyncio.wait_for(noted.wait(), 5)
        gate.set()
        await telegram.wait_for(lambda: any(t.startswith("answered:") for t in said_by(telegram, chat, bot)))
        await until_done(database_url, 2)
    assert seen == [["plan my trip", "by train, please"]]
    answers = [t for t in said_by(telegram, chat, bot) if t.startswith("answered:")]
    assert answers == ["answered: plan my trip + by train, please"]
    first, second = await items(database_url)
    assert first == ("done", None) and second[0] == "done" and second[1] is not None
    assert await runs(database_url) == ["answered"]


async def test_interrupt_stops_the_running_turn_and_a_new_one_answers_both(
        telegram: FakeTelegram, sqlite_url: str) -> None:
    gate = asyncio.Event()
    seen: list[list[str]] = []
    bot = TelegramBot(binding={"while_busy": "interrupt"}).register(telegram)
    ada = telegram.add_user(101, "Ada", username="ada")
    chat = telegram.private_chat(ada)
    async with running_gateway(telegram, [bot], database_url=sqlite_url, redis_url=None,
                               model=held_first(gate, seen=seen)):
        await telegram.user_says(bot.token, chat, ada, "plan my trip")
        await telegram.wait_for(lambda: thinking(telegram, chat))
        await telegram.user_says(bot.token, chat, ada, "by train, please")
        await telegram.wait_for(lambda: any(t.startswith("answered:") for t in said_by(telegram, chat, bot)))
    assert sent_starting(telegram, chat, "thinking") == ["thinking\n\n⏹ Interrupted by a newer message."]
    assert seen == [["plan my trip", "by train, please"]]
    assert await runs(sqlite_url) == ["stopped", "answered"]


async def test_queue_keeps_a_message_sent_mid_turn_for_its_own_turn(telegram: FakeTelegram, sqlite_url: str) -> None:
    gate = asyncio.Event()
    bot = TelegramBot(binding={"while_busy": "queue"}).register(telegram)
    ada = telegram.add_user(101, "Ada", username="ada")
    chat = telegram.private_chat(ada)
    async with running_gateway(telegram, [bot], database_url=sqlite_url, redis_url=None, model=held_first(gate),
                               capabilities=[{"id": "planning"}]):
        await telegram.user_says(bot.token, chat, ada, "plan my trip")
        await telegram.wait_for(lambda: thinking(telegram, chat))
        await telegram.user_says(bot.token, chat, ada, "by train, please")
        gate.set()
        await telegram.wait_for(lambda: "echo: by train, please" in said_by(telegram, chat, bot))
    assert said_by(telegram, chat, bot) == ["thinking and done", "echo: by train, please"]


def works_then_answers_this_turn(started: dict[str, asyncio.Event] | None = None) -> FunctionModel:
    """Each turn calls `read_plan` once (a request that takes a moment, as a model's does), then answers with the
    prompts of this turn: those after the last answer in the history, steered ones included. `started`: the event of
    each prompt a turn has begun working on is set."""

    def this_turn(messages: list[ModelMessage]) -> list[str]:
        start = max((i for i, m in enumerate(messages) if isinstance(m, ModelResponse)
                     and any(isinstance(p, TextPart) for p in m.parts)), default=-1)
        return user_prompts(messages[start + 1:])

    async def stream(messages: list[ModelMessage], _info: AgentInfo) -> AsyncIterator[str | DeltaToolCalls]:
        returned = any(isinstance(p, ToolReturnPart) for p in messages[-1].parts) \
            if isinstance(messages[-1], ModelRequest) else False
        if not returned:
            for prompt in this_turn(messages):
                (started or {}).setdefault(prompt, asyncio.Event()).set()
            await asyncio.sleep(0.3)  # the model at work; what is asserted waits on the chat, not on this
            yield {0: DeltaToolCall(name="read_plan", json_args="{}", tool_call_id=f"call-{len(messages)}")}
            return
        yield "answered: " + " + ".join(this_turn(messages))

    def complete(_messages: list[ModelMessage], _info: AgentInfo) -> ModelResponse:
        raise AssertionError("this model only streams")

    return FunctionModel(complete, stream_function=stream)


async def test_every_message_sent_mid_turn_is_answered_exactly_once(telegram: FakeTelegram,
                                                                    database_url: str) -> None:
    bot = TelegramBot().register(telegram)
    people = [telegram.add_user(200 + n, f"P{n}") for n in range(6)]
    chats = [telegram.private_chat(person) for person in people]
    sent = [[f"p{n} m{k}" for k in range(4)] for n in range(len(people))]
    started = {texts[0]: asyncio.Event() for texts in sent}

    async def talk(n: int) -> None:
        chat, person = chats[n], people[n]
        await telegram.user_says(bot.token, chat, person, sent[n][0])
        async with asyncio.timeout(30):
            await started[sent[n][0]].wait()  # its turn runs
        for text in sent[n][1:]:
            await telegram.user_says(bot.token, chat, person, text)

    def answered() -> list[str]:
        return [t for chat in chats for t in said_by(telegram, chat, bot) if t.startswith("answered:")]

    def covered() -> bool:
        said = " + ".join(answered())
        return all(text in said for texts in sent for text in texts)

    async with running_gateway(telegram, [bot], database_url=database_url, redis_url=None,
                               model=works_then_answers_this_turn(started), capabilities=[{"id": "planning"}]):
        await asyncio.gather(*(talk(n) for n in range(len(people))))
        await telegram.wait_for(covered, timeout=60)
        await until_done(database_url, sum(map(len, sent)))
    answers = [a.removeprefix("answered: ").split(" + ") for a in answered()]
    every = [text for answer in answers for text in answer]
    assert sorted(every) == sorted(text for texts in sent for text in texts)  # each once, none twice
    rows = await items(database_url)
    assert [status for status, _taken in rows] == ["done"] * sum(map(len, sent))
    assert any(taken is not None for _status, taken in rows)  # some were steered into a running turn
    for n, chat in enumerate(chats):  # in order within each conversation
        mine = [text for t in said_by(telegram, chat, bot) if t.startswith("answered:")
                for text in t.removeprefix("answered: ").split(" + ")]
        assert mine == sent[n]


@pytest.mark.parametrize("database_url", ["postgresql"], indirect=True)
async def test_a_stop_reaches_a_turn_running_on_the_other_replica(telegram: FakeTelegram, database_url: str) -> None:
    """Without Redis: the stop is written on the turn's inbox row, and the replica running it reads it."""
    gate = asyncio.Event()
    bot = TelegramBot().register(telegram)
    ada = telegram.add_user(101, "Ada", username="ada")
    chat = telegram.group(-4001, "Ops")  # the button shows in groups
    async with AsyncExitStack() as stack:
        replicas: list[Gateway] = [await stack.enter_async_context(running_gateway(
            telegram, [bot], database_url=database_url, redis_url=None, model=held_first(gate))) for _ in range(2)]
        await telegram.user_says(bot.token, chat, ada, "@helper_bot write me a long story")
        await telegram.wait_for(lambda: len(stop_buttons(telegram, chat)) == 1)
        [live] = stop_buttons(telegram, chat)
        [running] = [g for g in replicas if g.worker is not None and g.worker.turns.running()]
        assert running.worker is not None
        await running.worker.drain(0)  # it claims nothing more: the click is the other replica's to take
        await telegram.user_clicks(bot.token, live, ada, "st:")
        await telegram.wait_for(lambda: "Stopped" in message(telegram, chat, live["message_id"])["text"],
                                timeout=STOP_WITHIN)
        await telegram.wait_for(lambda: len(click_answers(telegram)) == 1)
    assert await runs(database_url) == ["stopped"]
