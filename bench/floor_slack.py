"""The Slack floor: slack-sdk's Socket Mode client (aiohttp) and its async Web API client, by hand.

Each envelope is acknowledged first; a DM (`message` in an `im`) or an `app_mention` in a channel then gets a
placeholder "…" (in a thread rooted at the mention, as the gateway answers in channels) and one `chat.update`
to the answer. Other events (channel `message`s, the bot's own posts, edits) are only acknowledged.
"""

from __future__ import annotations

import argparse
import asyncio
import re
from typing import Any

from slack_sdk.socket_mode.aiohttp import SocketModeClient
from slack_sdk.socket_mode.request import SocketModeRequest
from slack_sdk.socket_mode.response import SocketModeResponse
from slack_sdk.web.async_client import AsyncWebClient

from bench.floor_answer import PLACEHOLDER, Answerer

MENTION = re.compile(r"<@[UW][A-Z0-9]+(?:\|[^>]*)?>")


def wanted(event: dict[str, Any]) -> bool:
    """A person's DM to the bot, or a person's mention of it in a channel."""
    if event.get("bot_id") or event.get("subtype"):
        return False
    return event.get("type") == "app_mention" or (event.get("type") == "message" and event.get("channel_type") == "im")


async def serve(answerer: Answerer, url: str, token: str, app_token: str) -> None:
    web = AsyncWebClient(token=token, base_url=f"{url}/api/")
    client = SocketModeClient(app_token=app_token, web_client=web)

    async def on_request(client: SocketModeClient, request: SocketModeRequest) -> None:
        await client.send_socket_mode_response(SocketModeResponse(envelope_id=request.envelope_id))
        event = request.payload.get("event") or {}
        if request.type != "events_api" or not wanted(event):
            return
        thread = event.get("thread_ts") or (event["ts"] if event["type"] == "app_mention" else None)
        placeholder = await web.chat_postMessage(channel=event["channel"], text=PLACEHOLDER, thread_ts=thread)
        text = MENTION.sub("", str(event.get("text", ""))).strip()
        final = await answerer.answer(event["channel"], event["ts"], text)
        await web.chat_update(channel=event["channel"], ts=str(placeholder["ts"]), text=final)

    client.socket_mode_request_listeners.append(on_request)  # type: ignore[arg-type]
    await client.connect()
    await asyncio.Event().wait()  # until SIGTERM


def run(answerer: Answerer, args: argparse.Namespace) -> None:
    asyncio.run(serve(answerer, args.url, args.token, args.app_token))
