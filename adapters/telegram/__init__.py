"""Telegram over python-telegram-bot: long polling and webhooks, private chats, groups and forum topics."""
