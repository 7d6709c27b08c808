"""The floors: the smallest bots on the gateway's own libraries, for `bench.ratio` to compare against.

    python -m bench.floor_bots --kind echo|llm --url http://127.0.0.1:PORT --token TOKEN --username NAME

`echo`: python-telegram-bot long polling; each private message or @mention gets a placeholder "…", then an edit
to `answer <tag>`. `llm`: the same, with one streamed pydantic-ai run (`run_stream`, the bench's scripted model)
between the two, the history of each chat kept in memory and cut to the gateway's default window (50 turns).
No database, no durability: what the libraries cost by themselves.
"""

from __future__ import annotations

import argparse
import logging

from pydantic_ai import Agent, ModelMessage
from telegram import Update
from telegram.ext import Application, ContextTypes, MessageHandler, filters
from telegram.request import HTTPXRequest

from bench.models import instant_model

FLOOR_PLATFORMS = ("telegram",)
"""Platforms with floors of their own; `bench.ratio` runs the Telegram floors for the others."""
HISTORY_TURNS = 50
"""`agents[].history_turns`' default: the window the gateway sends the model."""
PLACEHOLDER = "…"


def build(kind: str, url: str, token: str, username: str) -> Application:  # type: ignore[type-arg]
    agent = Agent(instant_model(), instructions="Answer briefly.")
    histories: dict[int, list[ModelMessage]] = {}
    mention = f"@{username}"

    async def answer(update: Update, _context: ContextTypes.DEFAULT_TYPE) -> None:
        message = update.effective_message
        if message is None or message.text is None:
            return
        if message.chat.type != "private" and mention not in message.text:
            return
        placeholder = await message.reply_text(PLACEHOLDER, do_quote=False)
        text = message.text.replace(mention, "").strip()
        if kind == "echo":
            final = f"answer {text.split()[-1]}"
        else:
            history = histories.get(message.chat_id, [])
            async with agent.run_stream(text, message_history=history) as run:
                final = await run.get_output()
            histories[message.chat_id] = run.all_messages()[-2 * HISTORY_TURNS:]
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
    parser.add_argument("--username", required=True)
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    build(args.kind, args.url, args.token, args.username).run_polling(poll_interval=0.0, timeout=1,
                                                                      allowed_updates=None, stop_signals=None,
                                                                      close_loop=False)


if __name__ == "__main__":
    main()
