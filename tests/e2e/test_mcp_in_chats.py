"""MCP tools in a chat: a gated one parks with an approval card and runs after the click; a server that is down
leaves the turn answered."""

from __future__ import annotations

from typing import Any

from tests.support.fakes.telegram import FakeTelegram
from tests.support.harness import TelegramBot, ask, free_port, running_gateway
from tests.support.mcp_fakes.http_server import TOKEN, http_mcp_server
from tests.support.scripted import answers, calls_then_answers

AGENT = {"mcp_servers": ["issues"]}
KEY = {"ISSUES_MCP_TOKEN": TOKEN}


def tracker(url: str) -> dict[str, Any]:
    return {"name": "issues", "url": url, "headers": {"Authorization": "Bearer ${ISSUES_MCP_TOKEN}"}}


def cards(telegram: FakeTelegram, chat_id: int) -> list[dict[str, Any]]:
    return [m for m in telegram.bot_messages(chat_id) if m.get("reply_markup")]


def buttons(card: dict[str, Any]) -> dict[str, str]:
    return {b["text"]: b["callback_data"] for row in card["reply_markup"]["inline_keyboard"] for b in row}


async def test_a_gated_mcp_tool_parks_with_a_card_and_runs_after_the_click(telegram: FakeTelegram,
                                                                           database_url: str) -> None:
    alice = telegram.add_user(1001, "Alice")
    chat = telegram.private_chat(alice)
    bot = TelegramBot().register(telegram)
    model = calls_then_answers(("issues_create_issue", {"project": "web", "title": "login fails"}))
    async with http_mcp_server() as url, running_gateway(
            telegram, [bot], database_url=database_url, redis_url=None, model=model, agent=AGENT,
            top={"mcp_servers": [tracker(url)]}, secrets=KEY):
        await telegram.user_says(bot.token, chat, alice, "file a bug about the login")
        await telegram.wait_for(lambda: len(cards(telegram, chat["id"])) == 1)
        [card] = cards(telegram, chat["id"])
        assert "issues_create_issue" in card["text"] and '"project": "web"' in card["text"]
        await telegram.user_clicks(bot.token, card, alice, buttons(card)["✅ Approve"])
        await telegram.wait_for(lambda: telegram.bot_messages(chat["id"])[-1]["text"].startswith("done:"))
    assert telegram.bot_messages(chat["id"])[-1]["text"] == "done: created web#3 login fails"


async def test_a_server_that_is_down_leaves_the_turn_answered(telegram: FakeTelegram, sqlite_url: str) -> None:
    alice = telegram.add_user(1001, "Alice")
    chat = telegram.private_chat(alice)
    bot = TelegramBot().register(telegram)
    down = {"name": "issues", "url": f"http://127.0.0.1:{free_port()}/mcp", "timeout": 5}
    async with running_gateway(telegram, [bot], database_url=sqlite_url, redis_url=None,
                               model=answers("answered without the tracker"), agent=AGENT,
                               top={"mcp_servers": [down]}):
        assert await ask(telegram, bot, chat, alice, "any open issues?") == "answered without the tracker"
