"""The floors: the smallest bots on the gateway's own libraries, for `bench.ratio` to compare against.

    python -m bench.floor_bots [--platform telegram|slack|mattermost] --kind echo|llm --url http://127.0.0.1:PORT \
        --token TOKEN [--app-token XAPP] --username NAME

`echo`: each private message or @mention gets a placeholder "…", then an edit to `answer <tag>`. `llm`: the same,
with one streamed pydantic-ai run (`run_stream`, the bench's scripted model) between the two, the history of each
chat kept in memory and cut to the gateway's default window (50 turns) (`bench/floor_answer.py`). Telegram:
python-telegram-bot long polling (here); Slack: slack-sdk's Socket Mode client (`bench/floor_slack.py`);
Mattermost: the `websockets` event stream and mattermostdriver (`bench/floor_mattermost.py`). No database, no
durability: what the libraries cost by themselves.
"""

from __future__ import annotations

import argparse
import asyncio
import logging

from telegram import Update
from telegram.ext import Application, ContextTypes, MessageHandler, filters
from telegram.request import HTTPXRequest

from bench import floor_mattermost, floor_slack
from bench.floor_answer import PLACEHOLDER, Answerer

FLOOR_PLATFORMS = ("telegram", "slack", "mattermost")
"""Platforms with floors of their own."""


def build(kind: str, url: str, token: str, username: str) -> Application:  # type: ignore[type-arg]
    answerer = Answerer(kind)
    mention = f"@{username}"

    async def answer(update: Update, _context: ContextTypes.DEFAULT_TYPE) -> None:
        message = update.effective_message
        if message is None or message.text is None:
            return
        if message.chat.type != "private" and mention not in message.text:
            return
        placeholder = await message.reply_text(PLACEHOLDER, do_quote=False)
        final = await answerer.answer(str(message.chat_id), message.text.replace(mention, "").strip())
        await placeholder.edit_text(final)

    application = (Application.builder().token(token).base_url(f"{url}/bot").base_file_url(f"{url}/file/bot")
                   .request(HTTPXRequest(connection_pool_size=16)).concurrent_updates(True).build())
    application.add_handler(MessageHandler(filters.TEXT, answer))
    return application


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--platform", choices=FLOOR_PLATFORMS, default="telegram")
    parser.add_argument("--kind", choices=("echo", "llm"), required=True)
    parser.add_argument("--url", required=True)
    parser.add_argument("--token", required=True)
    parser.add_argument("--app-token", default="", help="Slack: the app-level token (xapp-…)")
    parser.add_argument("--username", required=True)
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    if args.platform == "slack":
        asyncio.run(floor_slack.serve(Answerer(args.kind), args.url, args.token, args.app_token))
    elif args.platform == "mattermost":
        asyncio.run(floor_mattermost.serve(Answerer(args.kind), args.url, args.token))
    else:
        build(args.kind, args.url, args.token, args.username).run_polling(poll_interval=0.0, timeout=1,
                                                                          allowed_updates=None, stop_signals=None,
                                                                          close_loop=False)


if __name__ == "__main__":
    main()
