"""Approval gates and renames key on the stable tool id, so a renamed tool keeps its gate."""

from __future__ import annotations

from tests.e2e.test_telegram_approvals import buttons, cards, texts
from tests.support.capability_runs import assembled, binding_with, recording, run, tool_defs
from tests.support.fakes.telegram import FakeTelegram
from tests.support.gated_tools import deploy_registry
from tests.support.harness import TelegramBot, running_gateway
from tests.support.scripted import calls_then_answers

RENAMED = [{"id": "deploy", "tool_overrides": {"deploy_service": {"name": "ship_it",
                                                                  "description": "Ship a service to customers."}}}]


async def test_a_renamed_tool_keeps_its_approval_gate(telegram: FakeTelegram, sqlite_url: str) -> None:
    executed: list[str] = []
    bot = TelegramBot().register(telegram)
    alice = telegram.add_user(1001, "Alice")
    chat = telegram.private_chat(alice)
    async with running_gateway(telegram, [bot], database_url=sqlite_url, redis_url=None,
                               model=calls_then_answers(("ship_it", {"service": "web"})),
                               registry=deploy_registry(executed), capabilities=RENAMED):
        await telegram.user_says(bot.token, chat, alice, "ship web")
        await telegram.wait_for(lambda: len(cards(telegram, chat["id"])) == 1)
        [card] = cards(telegram, chat["id"])
        assert executed == [] and "ship_it" in card["text"]
        await telegram.user_clicks(bot.token, card, alice, buttons(card)["✅ Approve"])
        await telegram.wait_for(lambda: texts(telegram, chat["id"])[-1:] == ["done: deployed web"])
    assert executed == ["web"]


async def test_the_model_sees_the_binding_s_name_and_description() -> None:
    model, seen = recording()
    binding = binding_with(RENAMED)
    await run(assembled(binding, model, registry=deploy_registry([])), "hi", binding=binding)
    offered = tool_defs(seen)
    assert set(offered) == {"ship_it"} and offered["ship_it"].description == "Ship a service to customers."
