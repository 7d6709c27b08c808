"""Channel lookups on Slack: bound to the room that admitted the run, through the bot's own token."""

from __future__ import annotations

from typing import Any

from pydantic_ai.models.function import FunctionModel

from tests.support.fakes.slack import FakeSlack
from tests.support.scripted import calls_then_answers
from tests.support.slack_harness import SlackBot, running_gateway

ALL = ["get_channel_info", "list_channel_members", "search_channels", "read_channel_history"]


def calls_then_reports(*calls: tuple[str, dict[str, Any]]) -> FunctionModel:
    """Calls the tools in order, one per request, then answers with every result, separated by `//`."""
    return calls_then_answers(*calls, answer="\n//\n".join)


async def test_the_four_lookups_answer_about_the_admitting_channel(slack: FakeSlack, sqlite_url: str) -> None:
    bot = SlackBot(app=slack.add_app("helper"), binding={"channel_tools": {"tools": ALL}})
    alice, bob = slack.add_user("alice", real_name="Alice"), slack.add_user("bob", real_name="Bob")
    ops = slack.add_channel("ops", members=[alice, bob, bot.app], purpose="Release coordination",
                            topic="Friday freeze")
    slack.add_channel("ops-archive", members=[alice, bot.app], purpose="Old releases")
    slack.add_channel("random", members=[alice, bot.app])
    model = calls_then_reports(("get_channel_info", {}), ("list_channel_members", {}),
                               ("search_channels", {"query": "ops"}), ("read_channel_history", {"limit": 2}))
    async with running_gateway(slack, [bot], database_url=sqlite_url, redis_url=None, model=model):
        await slack.user_says(ops, bob, "the release is at five")
        said = await slack.user_says(ops, alice, f"{bot.mention} where are we?")
        await slack.wait_for(lambda: any("Listed" in t for t in slack.texts(ops, by=bot.app, thread_ts=said["ts"])))
    [answer] = slack.texts(ops, by=bot.app, thread_ts=said["ts"])
    info, members, search, history = answer.split("\n//\n")
    assert info == "name: ops\nkind: channel\npurpose: Release coordination\ntopic: Friday freeze\nmembers: 3"
    assert members.splitlines() == ["Listed 3 of 3 people in this channel.", "Alice (@alice)", "Bob (@bob)",
                                    "helper (@helper) [bot]"]
    assert [line.split(" [")[0] for line in search.splitlines()] == ["#ops", "#ops-archive"]
    assert [line.split("] ", 1)[1] for line in history.splitlines()] == [
        "Bob (@bob): the release is at five", "Alice (@alice): @helper where are we?"]
    asked = {c.params.get("channel") for c in slack.calls if c.method in (
        "conversations.info", "conversations.members", "conversations.history")}
    assert asked == {ops["id"]}
