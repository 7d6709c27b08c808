"""A spill is an artefact of its run: it survives an approval park and a resume in another process, and
is deleted when the run ends (answered or failed), never when it parks."""

from __future__ import annotations

import re
from typing import Any

from pydantic_ai import FunctionToolset, ModelMessage, ModelRequest
from pydantic_ai.capabilities import Capability
from pydantic_ai.messages import ToolReturnPart
from pydantic_ai.models.function import FunctionModel
from sqlalchemy import select

from capabilities.registry import CapabilityDef, Registry, ToolInfo
from capabilities.run import BuildContext
from capabilities.tool_output_limits.spills import RunSpills
from storage.db import Database
from storage.models import ConversationStateRow
from tests.e2e.test_telegram_approvals import buttons, cards, texts
from tests.support.fakes.telegram import FakeTelegram
from tests.support.gated_tools import deploy_registry
from tests.support.harness import TelegramBot, running_gateway
from tests.support.scripted import stepped

LOG = "\n".join(f"line {n}: {'ok ' * 20}" for n in range(400))
"""About 26,000 characters: past the default threshold of 10,000."""
CAPABILITIES = [{"id": "logs"}, {"id": "deploy"}, {"id": "tool_output_limits"}]


def registry(executed: list[str]) -> Registry:
    def build(_context: BuildContext[Any]) -> Capability[Any]:
        toolset = FunctionToolset(id="logs")

        @toolset.tool_plain
        def fetch_log() -> str:
            """Fetch the build log."""
            return LOG
        return Capability(toolsets=[toolset])

    logs = CapabilityDef(id="logs", name="Logs", category="utility", description="Build logs.", build=build,
                         tools=(ToolInfo(id="fetch_log", summary="Fetch the build log."),))
    return deploy_registry(executed).with_extra(logs)


def fetch_deploy_then_read(*, fail_after_spill: bool = False) -> FunctionModel:
    """Fetches the log (spilled), deploys `web` (gated: the run parks), reads line 37 back through the
    spill's handle, and answers with what it read."""

    def step(messages: list[ModelMessage]) -> tuple[str, dict[str, object], str] | str:
        returned = [str(p.content) for m in messages if isinstance(m, ModelRequest) for p in m.parts
                    if isinstance(p, ToolReturnPart)]
        if not returned:
            return "fetch_log", {}, "call-1"
        if fail_after_spill:
            raise RuntimeError("the model fell over")
        if len(returned) == 1:
            return "deploy_service", {"service": "web"}, "call-2"
        if len(returned) == 2:
            handle = re.search(r"stored to handle '([^']+)'", returned[0])
            assert handle is not None, returned[0][:300]
            return "read_tool_result", {"handle": handle[1], "pattern": "line 37:"}, "call-3"
        return f"done: {returned[-1]}"

    return stepped(step)


async def spill_rows(database_url: str) -> list[str]:
    db = Database(database_url)
    try:
        async with db.session() as session:
            return list((await session.execute(select(ConversationStateRow.conversation_key).where(
                ConversationStateRow.conversation_key.like("run:%:tool_output")))).scalars())
    finally:
        await db.close()


async def test_a_spill_made_before_a_park_is_read_after_the_resume_in_another_process(
        telegram: FakeTelegram, database_url: str) -> None:
    alice = telegram.add_user(1001, "Alice")
    chat = telegram.private_chat(alice)
    executed: list[str] = []
    bot = TelegramBot().register(telegram)
    async with running_gateway(telegram, [bot], database_url=database_url, redis_url=None,
                               model=fetch_deploy_then_read(), registry=registry(executed),
                               capabilities=CAPABILITIES):
        await telegram.user_says(bot.token, chat, alice, "check the build and deploy web")
        await telegram.wait_for(lambda: len(cards(telegram, chat["id"])) == 1)
    card = cards(telegram, chat["id"])[0]
    assert len(await spill_rows(database_url)) == 1  # the park keeps the run's spill

    await telegram.user_clicks(bot.token, card, alice, buttons(card)["✅ Approve"])
    async with running_gateway(telegram, [bot], database_url=database_url, redis_url=None,
                               model=fetch_deploy_then_read(), registry=registry(executed),
                               capabilities=CAPABILITIES):
        await telegram.wait_for(lambda: texts(telegram, chat["id"])[-1].startswith("done:"))
    answer = texts(telegram, chat["id"])[-1]
    assert executed == ["web"]
    assert "1 matching line(s); showing 1" in answer and answer.endswith("\nline 37: " + ("ok " * 20).rstrip())
    assert await spill_rows(database_url) == []  # the answered run took its spill with it


async def test_a_failed_run_deletes_its_spills(telegram: FakeTelegram, database_url: str) -> None:
    alice = telegram.add_user(1001, "Alice")
    chat = telegram.private_chat(alice)
    bot = TelegramBot().register(telegram)
    async with running_gateway(telegram, [bot], database_url=database_url, redis_url=None,
                               model=fetch_deploy_then_read(fail_after_spill=True), registry=registry([]),
                               capabilities=CAPABILITIES):
        await telegram.user_says(bot.token, chat, alice, "check the build")
        await telegram.wait_for(lambda: texts(telegram, chat["id"])[-1:] and
                                texts(telegram, chat["id"])[-1].startswith("Sorry"))
    assert await spill_rows(database_url) == []


async def test_any_payload_reads_back_exactly_and_only_within_its_run(db: Database) -> None:
    spills, other = RunSpills(db, 1), RunSpills(db, 12)
    payloads = {"r/text.0": "plain ✓ text".encode(), "r/nul.0": b"a\x00b", "r/binary.0": b"\xff\xfe\x00",
                "r/" + "x" * 300: b"a long handle"}
    for handle, data in payloads.items():
        assert await spills.write(handle, data) == handle
    assert {h: await spills.read(h) for h in payloads} == payloads
    for reader, handle in ((other, "r/text.0"), (spills, "r/unknown.0")):
        try:
            await reader.read(handle)
        except FileNotFoundError:
            continue
        raise AssertionError(f"{handle} read outside its run")
    await other.write("r/text.0", b"the other run's")
    await spills.discard()
    assert await spills.handles() == [] and await other.read("r/text.0") == b"the other run's"
