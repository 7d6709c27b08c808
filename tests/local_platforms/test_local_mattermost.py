"""The fake Mattermost speaks the wire protocol: mattermostdriver and a raw WebSocket client work against it."""

from __future__ import annotations

import asyncio
import json

import pytest
from mattermostdriver import Driver
from mattermostdriver.exceptions import NoAccessTokenProvided
from websockets.asyncio.client import connect

from tests.support.fakes.mattermost import FakeMattermost

TOKEN = "b" * 26


def driver(mattermost: FakeMattermost, token: str) -> Driver:
    host, port = mattermost.url.removeprefix("http://").split(":")
    client = Driver({"url": host, "port": int(port), "scheme": "http", "token": token, "basepath": "/api/v4"})
    client.client.token = token  # what `login()` sets
    return client


async def test_mattermostdriver_signs_in_posts_and_edits(mattermost: FakeMattermost) -> None:
    bot = mattermost.add_bot(TOKEN, username="helper")
    team = mattermost.add_team("acme")
    channel = mattermost.add_channel(team, "town-square", members=[bot])
    client = driver(mattermost, TOKEN)
    me = await asyncio.to_thread(client.login)
    root = await asyncio.to_thread(client.posts.create_post, {"channel_id": channel["id"], "message": "hi"})
    reply = await asyncio.to_thread(client.posts.create_post, {"channel_id": channel["id"], "message": "…",
                                                                "root_id": root["id"]})
    await asyncio.to_thread(client.posts.patch_post, reply["id"], {"message": "done"})
    thread = await asyncio.to_thread(client.posts.get_thread, root["id"])
    assert me["id"] == bot["id"]
    assert sorted(p["message"] for p in thread["posts"].values()) == ["done", "hi"]
    assert reply["props"] == {"from_bot": "true"}


async def test_a_wrong_token_is_answered_401(mattermost: FakeMattermost) -> None:
    mattermost.add_bot(TOKEN, username="helper")
    with pytest.raises(NoAccessTokenProvided, match="Invalid or expired session"):
        await asyncio.to_thread(driver(mattermost, "wrong").login)


async def test_the_event_stream_checks_the_challenge_and_sends_posts_as_json_strings(
        mattermost: FakeMattermost) -> None:
    bot = mattermost.add_bot(TOKEN, username="helper")
    alice = mattermost.add_user("alice")
    channel = mattermost.add_channel(mattermost.add_team("acme"), "town-square", members=[bot, alice])
    url = mattermost.url.replace("http://", "ws://") + "/api/v4/websocket"
    async with connect(url) as refused:
        await refused.send(json.dumps({"seq": 1, "action": "authentication_challenge", "data": {"token": "x"}}))
        assert json.loads(await refused.recv())["status"] == "FAIL"
    async with connect(url) as socket:
        await socket.send(json.dumps({"seq": 1, "action": "authentication_challenge", "data": {"token": TOKEN}}))
        assert json.loads(await socket.recv()) == {"status": "OK", "seq_reply": 1}
        assert json.loads(await socket.recv())["event"] == "hello"
        await mattermost.user_posts(channel, alice, "@channel and @helper")
        event = json.loads(await socket.recv())
    assert event["event"] == "posted" and event["data"]["channel_type"] == "O"
    assert json.loads(event["data"]["post"])["message"] == "@channel and @helper"
    assert json.loads(event["data"]["mentions"]) == [bot["id"]]
    assert event["data"]["sender_name"] == "@alice"


async def test_channel_posts_since_a_time_are_only_the_newer_ones(mattermost: FakeMattermost) -> None:
    bot = mattermost.add_bot(TOKEN, username="helper")
    channel = mattermost.add_channel(mattermost.add_team("acme"), "town-square", members=[bot])
    old = await mattermost.user_posts(channel, bot, "old")
    new = await mattermost.user_posts(channel, bot, "new")
    answer = await asyncio.to_thread(driver(mattermost, TOKEN).posts.get_posts_for_channel, channel["id"],
                                     {"since": old["create_at"]})
    assert list(answer["posts"]) == [new["id"]]


async def test_a_create_repeating_a_pending_post_id_returns_the_first_post(mattermost: FakeMattermost) -> None:
    bot = mattermost.add_bot(TOKEN, username="helper")
    team = mattermost.add_team("acme")
    channel = mattermost.add_channel(team, "town-square", members=[bot])
    client = driver(mattermost, TOKEN)
    await asyncio.to_thread(client.login)
    post = {"channel_id": channel["id"], "message": "…", "pending_post_id": "p" * 26}
    first = await asyncio.to_thread(client.posts.create_post, post)
    again = await asyncio.to_thread(client.posts.create_post, post)
    other = await asyncio.to_thread(client.posts.create_post, {**post, "pending_post_id": "q" * 26})
    assert again["id"] == first["id"] != other["id"]
    assert [p["message"] for p in mattermost.posts(channel, user=bot)] == ["…", "…"]
