"""The plan belongs to the conversation: it survives an approval park and the next turn, unless it is finished."""

from __future__ import annotations

from typing import Any

from pydantic_ai import ModelMessage, ModelRequest, UserPromptPart
from pydantic_ai.models.function import AgentInfo

from storage.conversation_state import StoredConversationState
from storage.db import Database
from tests.e2e.test_telegram_approvals import buttons, cards, texts
from tests.support.capability_runs import MemoryState, assembled, binding_with, run
from tests.support.fakes.telegram import FakeTelegram
from tests.support.gated_tools import deploy_registry
from tests.support.harness import TelegramBot, running_gateway
from tests.support.scripted import calls_then_answers, scripted

PLAN = {"items": [{"content": "Deploy web", "status": "in_progress"}, {"content": "Tell the team"}]}
DONE = {"items": [{"content": "Deploy web", "status": "completed"}, {"content": "Tell the team",
                                                                       "status": "cancelled"}]}


def last(returned: list[str]) -> str:
    return returned[-1]


async def test_the_plan_survives_an_approval_park(telegram: FakeTelegram, database_url: str) -> None:
    executed: list[str] = []
    bot = TelegramBot().register(telegram)
    alice = telegram.add_user(1001, "Alice")
    chat = telegram.private_chat(alice)
    model = calls_then_answers(("write_plan", PLAN), ("deploy_service", {"service": "web"}), ("read_plan", {}),
                               answer=last)
    async with running_gateway(telegram, [bot], database_url=database_url, redis_url=None, model=model,
                               registry=deploy_registry(executed), capabilities=[{"id": "deploy"}, {"id": "planning"}]):
        await telegram.user_says(bot.token, chat, alice, "deploy web, then tell the team")
        await telegram.wait_for(lambda: len(cards(telegram, chat["id"])) == 1)
        [card] = cards(telegram, chat["id"])
        await telegram.user_clicks(bot.token, card, alice, buttons(card)["✅ Approve"])
        await telegram.wait_for(lambda: texts(telegram, chat["id"])[-1].startswith("Current plan:"))
    assert executed == ["web"]
    answer = texts(telegram, chat["id"])[-1]
    assert "Deploy web" in answer and "Tell the team" in answer and "1 in progress, 1 pending" in answer


def plan_binding(**config: Any) -> Any:
    return binding_with([{"id": "planning", "config": config}])


async def two_turns(first: dict[str, Any], state: Any, *, resuming: bool = False, **config: Any) -> str:
    """Writes `first` as the plan in one run, then reads the plan in the next run of the same conversation."""
    binding = plan_binding(**config)
    await run(assembled(binding, calls_then_answers(("write_plan", first), answer=last), state=state),
              "plan it", binding=binding)
    later = assembled(binding, calls_then_answers(("read_plan", {}), answer=last), state=state, resuming=resuming)
    return str((await run(later, "what is left?", binding=binding)).output)


async def test_an_unfinished_plan_is_carried_into_the_next_turn() -> None:
    answer = await two_turns(PLAN, MemoryState())
    assert "[" in answer and "Tell the team" in answer


async def test_a_finished_plan_is_not_carried_into_the_next_turn_but_its_row_stays() -> None:
    state = MemoryState()
    answer = await two_turns(DONE, state)
    assert answer == "No plan yet. Use write_plan to create one."
    assert [item["status"] for item in state.rows["planning"]["items"]] == ["completed", "cancelled"]


async def test_a_plan_with_a_blocked_step_is_carried() -> None:
    blocked = {"items": [{"id": "a", "content": "Get sign-off", "status": "completed"},
                         {"id": "b", "content": "Fix the build", "status": "cancelled"},
                         {"id": "c", "content": "Ship", "status": "blocked", "depends_on": ["d"]},
                         {"id": "d", "content": "Wait for legal"}]}
    answer = await two_turns(blocked, MemoryState(), enable_subtasks=True)
    assert "Ship" in answer and "Wait for legal" in answer


async def test_a_continuation_after_an_approval_gets_even_a_finished_plan() -> None:
    answer = await two_turns(DONE, MemoryState(), resuming=True)
    assert "Deploy web" in answer


async def test_a_turn_that_opened_empty_over_a_finished_plan_writes_nothing() -> None:
    class Counting(MemoryState):
        saves = 0

        async def save(self, capability: str, data: dict[str, Any]) -> None:
            self.saves += 1
            await super().save(capability, data)

    state = Counting()
    await two_turns(DONE, state)
    assert state.saves == 1


async def test_the_plan_is_played_back_at_the_end_of_each_request_not_in_the_instructions() -> None:
    state = MemoryState()
    binding = plan_binding()
    await run(assembled(binding, calls_then_answers(("write_plan", PLAN), answer=last), state=state),
              "plan it", binding=binding)
    seen: list[tuple[str | None, str]] = []

    def remember(messages: list[ModelMessage], info: AgentInfo) -> str:
        request = messages[-1]
        assert isinstance(request, ModelRequest)
        tail = request.parts[-1]
        seen.append((info.instructions, str(tail.content) if isinstance(tail, UserPromptPart) else ""))
        return "ok"

    await run(assembled(binding, scripted(remember), state=state), "go on", binding=binding)
    [(instructions, tail)] = seen
    assert "Tell the team" in tail and "<plan-reminder>" in tail
    assert "Tell the team" not in (instructions or "")


async def test_the_plan_is_stored_with_the_conversation(db: Database) -> None:
    binding = plan_binding()
    first = StoredConversationState(db, "telegram:helper:-100:-")
    await run(assembled(binding, calls_then_answers(("write_plan", PLAN), answer=last), state=first),
              "plan it", binding=binding)
    await run(assembled(binding, calls_then_answers(("update_task_status", {"task_id": "x", "status": "completed"}),
                                                    answer=last), state=first), "next", binding=binding)
    other = StoredConversationState(db, "telegram:helper:-200:-")
    stored = await StoredConversationState(db, "telegram:helper:-100:-").load("planning")
    assert stored is not None and [i["content"] for i in stored["items"]] == ["Deploy web", "Tell the team"]
    assert await other.load("planning") is None
