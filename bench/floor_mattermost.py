"""The Mattermost floor: the event stream over `websockets`, REST through mattermostdriver in worker threads.

The same libraries as the gateway's adapter (`adapters/mattermost/socket.py`, `rest.py`): mattermostdriver's
calls are synchronous, so each runs in `asyncio.to_thread`. A DM or a post whose `mentions` name the bot gets a
placeholder "…" (in a thread rooted at the post outside DMs, as the gateway answers) and one patch to the answer.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
from typing import Any
from urllib.parse import urlsplit

from mattermostdriver import Driver
from websockets.asyncio.client import connect

from bench.floor_answer import PLACEHOLDER, Answerer

MENTION = re.compile(r"@[\w.-]+")


def driver(url: str, token: str) -> Driver:
    parts = urlsplit(url)
    return Driver({"url": parts.hostname, "port": parts.port, "scheme": parts.scheme, "token": token,
                   "basepath": "/api/v4"})


async def serve(answerer: Answerer, url: str, token: str) -> None:
    rest = driver(url, token)
    me = (await asyncio.to_thread(rest.login))["id"]
    tasks: set[asyncio.Task[None]] = set()

    async def answer(post: dict[str, Any], direct: bool) -> None:
        root = post.get("root_id") or ("" if direct else post["id"])
        placeholder = await asyncio.to_thread(rest.posts.create_post, {
            "channel_id": post["channel_id"], "message": PLACEHOLDER, "root_id": root})
        final = await answerer.answer(post["channel_id"], post["id"], MENTION.sub("", post["message"]).strip())
        await asyncio.to_thread(rest.posts.patch_post, placeholder["id"], {"message": final})

    async with connect(url.replace("http", "ws", 1) + "/api/v4/websocket") as socket:
        await socket.send(json.dumps({"seq": 1, "action": "authentication_challenge", "data": {"token": token}}))
        async for frame in socket:
            event = json.loads(frame)
            if event.get("event") != "posted":
                continue
            data = event["data"]
            post = json.loads(data["post"])
            direct = data.get("channel_type") == "D"
            if post["user_id"] != me and (direct or me in json.loads(data.get("mentions") or "[]")):
                task = asyncio.create_task(answer(post, direct))
                tasks.add(task)
                task.add_done_callback(tasks.discard)


def run(answerer: Answerer, args: argparse.Namespace) -> None:
    asyncio.run(serve(answerer, args.url, args.token))
