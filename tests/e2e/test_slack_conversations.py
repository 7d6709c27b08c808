"""Slack threads are conversations: a mention is answered under it, and the thread carries on from there."""

from __future__ import annotations

import pytest
from pydantic_ai import ModelMessage

from tests.support.fakes.slack import FakeSlack
from tests.support.scripted import echoes, scripted, user_prompts
from tests.support.slack_harness import SlackBot, running_gateway


def remembering(seen: list[list[str]]):
    """A model that answers `answer N` and keeps the user prompts of every request it got."""

    def reply(messages: list[ModelMessage], _info: object) -> str:
        seen.append(user_prompts(messages))
        return f"answer {len(seen)}"

    return scripted(reply)


def posts(slack: FakeSlack, method: str) -> list[dict]:
    return [call.params for call in slack.calls if call.method == method]


async def test_follow_up_in_the_thread_continues_the_conversation_without_a_mention(
        slack: FakeSlack, database_url: str) -> None:
    bot = SlackBot(app=slack.add_app("helper"))
    alice = slack.add_user("alice", real_name="Alice")
    general = slack.add_channel("general", members=[alice, bot.app])
    seen: list[list[str]] = []
    async with running_gateway(slack, [bot], database_url=database_url, redis_url=None, model=remembering(seen)):
        said = await slack.user_says(general, alice, f"{bot.mention} remember 42")
        await slack.wait_for(lambda: slack.texts(general, by=bot.app, thread_ts=said["ts"]) == ["answer 1"])
        await slack.user_says(general, alice, "colleagues chatting at the top level")
        await slack.user_says(general, alice, "what did I ask you to remember?", thread_ts=said["ts"])
        await slack.wait_for(lambda: slack.texts(general, by=bot.app, thread_ts=said["ts"]) == [
            "answer 1", "answer 2"])
    assert seen[1] == ["[Alice] remember 42", "[Alice] what did I ask you to remember?"]
    assert slack.texts(general, by=bot.app) == []


async def test_a_thread_the_bot_is_not_part_of_is_left_alone(slack: FakeSlack, sqlite_url: str) -> None:
    bot = SlackBot(app=slack.add_app("helper"))
    alice, bob = slack.add_user("alice", real_name="Alice"), slack.add_user("bob", real_name="Bob")
    general = slack.add_channel("general", members=[alice, bob, bot.app])
    async with running_gateway(slack, [bot], database_url=sqlite_url, redis_url=None, model=echoes()):
        root = await slack.user_says(general, alice, "lunch?")
        await slack.user_says(general, bob, "sure", thread_ts=root["ts"])
        said = await slack.user_says(general, alice, f"{bot.mention} ping")
        await slack.wait_for(lambda: slack.texts(general, by=bot.app, thread_ts=said["ts"]) == ["echo: [Alice] ping"])
    assert slack.texts(general, by=bot.app, thread_ts=root["ts"]) == []


async def test_first_mention_mid_thread_reads_the_thread_so_far(slack: FakeSlack, sqlite_url: str) -> None:
    bot = SlackBot(app=slack.add_app("helper"))
    alice, bob = slack.add_user("alice", real_name="Alice"), slack.add_user("bob", real_name="Bob")
    general = slack.add_channel("general", members=[alice, bob, bot.app])
    seen: list[list[str]] = []
    async with running_gateway(slack, [bot], database_url=sqlite_url, redis_url=None, model=remembering(seen)):
        root = await slack.user_says(general, alice, "the build is red again")
        await slack.user_says(general, bob, f"since the <@{alice['id']}> merge?", thread_ts=root["ts"])
        await slack.user_says(general, alice, f"{bot.mention} can you summarise?", thread_ts=root["ts"])
        await slack.wait_for(lambda: slack.texts(general, by=bot.app, thread_ts=root["ts"]) == ["answer 1"])
    [context, prompt] = seen[0]
    assert context.splitlines()[1:] == ["[Alice] the build is red again", "[Bob] since the @Alice merge?"]
    assert prompt == "[Alice] can you summarise?"
    assert len(posts(slack, "conversations.replies")) == 1


async def test_top_level_mention_does_not_read_a_thread(slack: FakeSlack, sqlite_url: str) -> None:
    bot = SlackBot(app=slack.add_app("helper"))
    alice = slack.add_user("alice", real_name="Alice")
    general = slack.add_channel("general", members=[alice, bot.app])
    async with running_gateway(slack, [bot], database_url=sqlite_url, redis_url=None, model=echoes()):
        said = await slack.user_says(general, alice, f"{bot.mention} hi")
        await slack.wait_for(lambda: slack.texts(general, by=bot.app, thread_ts=said["ts"]) == ["echo: [Alice] hi"])
    assert posts(slack, "conversations.replies") == []


async def test_group_dm_is_a_group_and_needs_a_mention(slack: FakeSlack, sqlite_url: str) -> None:
    bot = SlackBot(app=slack.add_app("helper"))
    alice, bob = slack.add_user("alice", real_name="Alice"), slack.add_user("bob", real_name="Bob")
    group = slack.group_dm([alice, bob], bot.app)
    async with running_gateway(slack, [bot], database_url=sqlite_url, redis_url=None, model=echoes()):
        await slack.user_says(group, bob, "just us two talking")
        said = await slack.user_says(group, alice, f"{bot.mention} and you?")
        await slack.wait_for(lambda: slack.texts(group, by=bot.app, thread_ts=said["ts"]) == [
            "echo: [Alice] and you?"])
    assert slack.texts(group, by=bot.app) == []


async def test_mentions_and_links_reach_the_model_as_words(slack: FakeSlack, sqlite_url: str) -> None:
    bot = SlackBot(app=slack.add_app("helper"))
    alice = slack.add_user("alice", real_name="Alice Liddell", display_name="alice.l")
    bob = slack.add_user("bob", real_name="Bob")
    general = slack.add_channel("general", members=[alice, bob, bot.app])
    async with running_gateway(slack, [bot], database_url=sqlite_url, redis_url=None, model=echoes()):
        text = f"{bot.mention}, ask <@{bob['id']}> about <https://x.org|the doc> &amp; <#{general['id']}|general>"
        said = await slack.user_says(general, alice, text)
        await slack.wait_for(lambda: len(slack.texts(general, by=bot.app, thread_ts=said["ts"])) == 1
                             and "…" not in slack.texts(general, by=bot.app, thread_ts=said["ts"])[0])
    [answer] = slack.texts(general, by=bot.app, thread_ts=said["ts"])
    # Streamed as Markdown (`markdown_text`), which Slack renders itself: no mrkdwn escapes.
    assert answer == "echo: [alice.l] ask @Bob about the doc (https://x.org) & #general"


async def test_a_shared_file_is_a_message(slack: FakeSlack, sqlite_url: str) -> None:
    bot = SlackBot(app=slack.add_app("helper"))
    alice = slack.add_user("alice", real_name="Alice")
    dm = slack.open_dm(alice, bot.app)
    files = [{"id": "F1", "name": "report.pdf", "mimetype": "application/pdf", "size": 1234}]
    async with running_gateway(slack, [bot], database_url=sqlite_url, redis_url=None, model=echoes()):
        await slack.user_says(dm, alice, "see attached", files=files)
        await slack.wait_for(lambda: len(slack.texts(dm, by=bot.app)) == 1)
    [answer] = slack.texts(dm, by=bot.app)
    assert answer.startswith("echo: ['see attached'") and "report.pdf" in answer, answer


@pytest.mark.parametrize("transport", ["socket", "http"])
async def test_both_transports_deliver(slack: FakeSlack, sqlite_url: str, transport: str) -> None:
    bot = SlackBot(app=slack.add_app("helper"), transport=transport)
    alice = slack.add_user("alice", real_name="Alice")
    dm = slack.open_dm(alice, bot.app)
    async with running_gateway(slack, [bot], database_url=sqlite_url, redis_url=None, model=echoes()):
        await slack.user_says(dm, alice, f"via {transport}")
        await slack.wait_for(lambda: slack.texts(dm, by=bot.app) == [f"echo: via {transport}"])
    if transport == "http":
        assert {d.status for d in bot.app.http} == {200}
    else:
        assert bot.app.acked and not bot.app.unacked
