"""The Telegram floor: python-telegram-bot long polling, `concurrent_updates`, a placeholder "…" then one edit.

Each private message or @mention of the bot is answered; polls last 1 s, like the gateway's bench runner.
"""

from __future__ import annotations

import argparse

from telegram import Update
from telegram.ext import Application, ContextTypes, MessageHandler, filters
from telegram.request import HTTPXRequest

from bench.floor_answer import PLACEHOLDER, Answerer


def build(answerer: Answerer, url: str, token: str, username: str) -> Application:  # type: ignore[type-arg]
    mention = f"@{username}"

    async def answer(update: Update, _context: ContextTypes.DEFAULT_TYPE) -> None:
        message = update.effective_message
        if message is None or message.text is None:
            return
        if message.chat.type != "private" and mention not in message.text:
            return
        placeholder = await message.reply_text(PLACEHOLDER, do_quote=False)
        text = message.text.replace(mention, "").strip()
        final = await answerer.answer(str(message.chat_id), str(message.message_id), text)
        await placeholder.edit_text(final)

    application = (Application.builder().token(token).base_url(f"{url}/bot").base_file_url(f"{url}/file/bot")
                   .request(HTTPXRequest(connection_pool_size=16)).concurrent_updates(True).build())
    application.add_handler(MessageHandler(filters.TEXT, answer))
    return application


def run(answerer: Answerer, args: argparse.Namespace) -> None:
    build(answerer, args.url, args.token, args.username).run_polling(
        poll_interval=0.0, timeout=1, allowed_updates=None, stop_signals=None, close_loop=False)
