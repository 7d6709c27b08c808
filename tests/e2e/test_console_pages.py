"""The console's pages over a running gateway: a run shows up with its timeline, an approval decided in the browser
resumes the run (on a replica that did not park it) and edits the card in the chat, the builder draws every form
from the registry and refuses what `gateway check` refuses, knowledge is uploaded and removed."""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
from pydantic import BaseModel, Field
from sqlalchemy import update
from typer.testing import CliRunner

from capabilities.registry import CapabilityDef
from gateway.approvals.store import Approvals
from gateway.cli.main import app
from gateway.pipeline.inbox import Inbox
from gateway.pipeline.operator_decisions import OperatorDecision
from gateway.server.app import Gateway
from storage.db import Database
from storage.models import InboxRow, utcnow
from tests.conftest import REDIS
from tests.support.console import console_section, hashes, signed_in
from tests.support.fakes.telegram import FakeTelegram
from tests.support.gated_tools import deploy_registry
from tests.support.harness import TelegramBot, running_gateway
from tests.support.scripted import answers, calls_then_answers

DEPLOY_WEB: tuple[tuple[str, dict[str, object]], ...] = (("deploy_service", {"service": "web"}),)


@asynccontextmanager
async def console_client(gateway: Gateway, name: str = "lead") -> AsyncIterator[tuple[httpx.AsyncClient, str]]:
    async with httpx.AsyncClient(base_url=gateway.url) as client:
        yield client, await signed_in(client, name)


def texts(telegram: FakeTelegram, chat_id: int) -> list[str]:
    return [m["text"] for m in telegram.bot_messages(chat_id)]


async def test_a_run_shows_on_the_overview_and_the_runs_page_with_its_timeline(telegram: FakeTelegram,
                                                                                database_url: str) -> None:
    bot = TelegramBot().register(telegram)
    alice = telegram.add_user(1001, "Alice", username="alice")
    async with running_gateway(telegram, [bot], database_url=database_url, redis_url=None, model=answers("hello"),
                               top=console_section(), secrets=hashes()) as gateway:
        await telegram.user_says(bot.token, telegram.private_chat(alice), alice, "hi")
        await telegram.wait_for(lambda: texts(telegram, alice["id"])[-1:] == ["hello"])
        async with console_client(gateway, "ops") as (ops, _token):
            overview = (await ops.get("/console/live/overview")).text
            assert re.search(r'id="turns">1<', overview) and bot.name in overview
            runs = (await ops.get("/console/live/runs", params={"bot": bot.name})).text
            [run_id] = re.findall(r'data-run="(\d+)"', runs)
            assert "answered" in runs and "Alice" not in runs, "a person is hashed for an operator without transcripts"
            person = re.search(r"person=(\w+)", runs)
            assert person and run_id in (await ops.get("/console/live/runs", params={"person": person[1]})).text
            assert "No runs" in (await ops.get("/console/live/runs", params={"status": "failed"})).text
            detail = (await ops.get(f"/console/runs/{run_id}")).text
            moments = re.findall(r"<td><b>([^<]+)</b></td>", detail)
            assert [m for m in moments if m in ("accepted", "started", "model response", "answered")] == [
                "accepted", "started", "model response", "answered"], moments
            assert "first text shown" in moments
            assert "<pre>hello</pre>" not in detail, "the answer's words only for an operator with transcripts"
        async with console_client(gateway, "lead") as (lead, _token):
            assert "Alice (@alice)" in (await lead.get("/console/live/runs")).text
            assert "<pre>hello</pre>" in (await lead.get(f"/console/runs/{run_id}")).text


def deploying(telegram: FakeTelegram, bot: TelegramBot, database_url: str, executed: list[str], *,
              redis_url: str | None = None) -> Any:
    """A gateway whose agent asks to `deploy` web (a gated call, recorded in `executed` once run), with the console."""
    return running_gateway(telegram, [bot], database_url=database_url, redis_url=redis_url,
                           model=calls_then_answers(*DEPLOY_WEB), registry=deploy_registry(executed),
                           capabilities=[{"id": "deploy"}], top=console_section(), secrets=hashes())


async def posted_card(telegram: FakeTelegram, chat: dict[str, Any]) -> dict[str, Any]:
    """The approval card, once the bot has posted it in `chat`."""
    await telegram.wait_for(lambda: any(m.get("reply_markup") for m in telegram.bot_messages(chat["id"])))
    [card] = [m for m in telegram.bot_messages(chat["id"]) if m.get("reply_markup")]
    return card


@dataclass(frozen=True, slots=True, kw_only=True)
class ParkedDeploy:
    """Alice asked for `deploy web` in her DM on a bot whose approvals the console may decide; the card is posted."""

    executed: list[str]
    bot: TelegramBot
    chat: dict[str, Any]
    card: dict[str, Any]
    replica: Callable[[], Any]
    """Another replica of the same deployment (the first one has stopped)."""


async def parked_deploy(telegram: FakeTelegram, database_url: str) -> ParkedDeploy:
    executed: list[str] = []
    bot = TelegramBot(binding={"approvals": {"console": True}}).register(telegram)
    alice = telegram.add_user(1001, "Alice")
    chat = telegram.private_chat(alice)

    def replica() -> Any:
        return deploying(telegram, bot, database_url, executed)

    async with replica():
        await telegram.user_says(bot.token, chat, alice, "deploy web")
        card = await posted_card(telegram, chat)
    return ParkedDeploy(executed=executed, bot=bot, chat=chat, card=card, replica=replica)


async def test_an_approval_decided_in_the_console_resumes_the_run_on_another_replica_and_edits_the_card(
        telegram: FakeTelegram, database_url: str) -> None:
    parked = await parked_deploy(telegram, database_url)
    executed, chat, card, replica = parked.executed, parked.chat, parked.card, parked.replica
    async with replica() as other, console_client(other, "lead") as (lead, token):
        page = (await lead.get("/console/approvals")).text
        [approval_id] = re.findall(r'data-approval="([^"]+)"', page)
        assert "deploy_service" in page and "&#34;service&#34;: &#34;web&#34;" in page
        answer = await lead.post(f"/console/approvals/{approval_id}", data={"csrf": token, "verb": "approve"})
        assert answer.status_code == 303
        await telegram.wait_for(lambda: texts(telegram, chat["id"])[-1:] == ["done: deployed web"])
        told = (await lead.get(answer.headers["location"])).text
        assert "Approving deploy_service as lead (console)" in told
        assert "Nothing waits for a decision." in told and "<td>lead (console)</td>" in told
        again = await lead.post(f"/console/approvals/{approval_id}", data={"csrf": token, "verb": "deny"})
        assert "Already approved by lead (console)." in (await lead.get(again.headers["location"])).text
        assert "approve approval" in (await lead.get("/console/audit")).text
        [run_id] = re.findall(r'data-run="(\d+)"', (await lead.get("/console/live/runs")).text)
        async with asyncio.timeout(10):  # the run's end commits just after its answer shows
            while True:
                detail = (await lead.get(f"/console/runs/{run_id}")).text
                if "<b>answered</b>" in detail:
                    break
                await asyncio.sleep(0.05)
        assert re.search(r"<b>tool returned</b></td><td>deploy_service<", detail), "the resumed run's steps"
    assert executed == ["web"], "approved once, run once"
    [closed] = [m for m in telegram.bot_messages(chat["id"]) if m["message_id"] == card["message_id"]]
    assert closed["text"].startswith("Approved by lead (console)") and not closed.get("reply_markup")


async def test_the_console_decides_only_where_the_binding_lets_it(telegram: FakeTelegram, sqlite_url: str) -> None:
    executed: list[str] = []
    bot = TelegramBot().register(telegram)
    alice = telegram.add_user(1001, "Alice")
    chat = telegram.private_chat(alice)
    async with deploying(telegram, bot, sqlite_url, executed) as gateway, \
            console_client(gateway, "lead") as (lead, token):
        await telegram.user_says(bot.token, chat, alice, "deploy web")
        await posted_card(telegram, chat)
        page = (await lead.get("/console/approvals")).text
        [approval_id] = re.findall(r'data-approval="([^"]+)"', page)
        assert "Decided in the chat only" in page and 'value="approve"' not in page
        answer = await lead.post(f"/console/approvals/{approval_id}", data={"csrf": token, "verb": "approve"})
        assert "does not let the console decide" in (await lead.get(answer.headers["location"])).text
    assert executed == []


class GreeterConfig(BaseModel):
    """A capability the console has never heard of."""

    greeting: str = Field(default="hello", description="What it says first.")
    repeats: int = Field(default=1, ge=1, le=5, description="How often it says it.")
    loud: bool = False
    mood: str = Field(default="calm", json_schema_extra={"enum": ["calm", "cheerful"]})


async def test_a_capability_added_to_the_registry_gets_a_builder_form_from_its_schema(telegram: FakeTelegram,
                                                                                        sqlite_url: str) -> None:
    greeter = CapabilityDef(id="greeter", name="Greeter", category="utility", description="Greets.", tools=(),
                            config=GreeterConfig, build=lambda _context: None)
    bot = TelegramBot().register(telegram)
    async with running_gateway(telegram, [bot], database_url=sqlite_url, redis_url=None, model=answers("hi"),
                               registry=deploy_registry([]).with_extra(greeter), top=console_section(),
                               secrets=hashes()) as gateway, console_client(gateway, "ops") as (ops, token):
        served = (await ops.get("/api/v1/capabilities")).json()["capabilities"]
        page = (await ops.get("/console/builder", params={"agent": "assistant", "capability": "greeter"})).text
        for prop in served[-1]["config_schema"]["properties"]:
            assert f'name="config.{prop}"' in page
        assert "How often it says it." in page and "<option>cheerful</option>" in page
        answer = await ops.post("/console/builder", data={"csrf": token, "agent": "assistant", "capability": "greeter",
                                                          "config.repeats": "9", "config.loud": "true"})
        assert answer.status_code == 422
        assert "agents[&#39;assistant&#39;].capabilities[0].config.repeats: Input should be less than or equal to 5" \
            in answer.text
        answer = await ops.post("/console/builder", data={"csrf": token, "agent": "assistant", "capability": "greeter",
                                                          "config.repeats": "3", "config.mood": "cheerful",
                                                          "action": "apply"})
        assert answer.status_code == 200 and "gateway check</code> accepts it" in answer.text
        assert "repeats: 3" in answer.text and "mood: cheerful" in answer.text
        assert "Not applied: console.allow_changes is false" in answer.text, "no apply button, and no apply"


async def test_the_builder_refuses_a_wrong_value_as_gateway_check_does(telegram: FakeTelegram, sqlite_url: str,
                                                                        tmp_path: Path) -> None:
    bot = TelegramBot().register(telegram)
    async with running_gateway(telegram, [bot], database_url=sqlite_url, redis_url=None, model=answers("hi"),
                               top=console_section(), secrets=hashes()) as gateway, \
            console_client(gateway, "ops") as (ops, token):
        answer = await ops.post("/console/builder", data={"csrf": token, "agent": "assistant",
                                                          "capability": "web_research", "config.max_results": "0"})
        [shown] = re.findall(r"<pre>(agents.*?)</pre>", answer.text)
    config = tmp_path / "gateway.yaml"
    config.write_text(BUILT_YAML)
    checked = CliRunner().invoke(app, ["check", "-c", str(config)])
    assert checked.exit_code == 2
    said = shown.replace("&#39;", "'")
    assert said in checked.output, (said, checked.output)


BUILT_YAML = """\
agents:
  - name: assistant
    model: test
    capabilities:
      - id: web_research
        config: {max_results: 0}
bots: []
"""


async def test_knowledge_is_uploaded_listed_and_removed(telegram: FakeTelegram, sqlite_url: str) -> None:
    bot = TelegramBot().register(telegram)
    async with running_gateway(telegram, [bot], database_url=sqlite_url, redis_url=None, model=answers("hi"),
                               top={**console_section(), "collections": [{"name": "handbook"}]},
                               secrets=hashes()) as gateway, console_client(gateway, "ops") as (ops, token):
        answer = await ops.post("/console/knowledge/upload", data={"csrf": token, "collection": "handbook"},
                                files={"document": ("leave.md", b"# Leave\n\nTwenty days a year.", "text/markdown")})
        page = (await ops.get(answer.headers["location"])).text
        assert "Added leave.md to handbook: 1 chunk(s)." in page and "<td>Leave</td>" in page
        answer = await ops.post("/console/knowledge/upload", data={"csrf": token, "collection": "handbook"},
                                files={"document": ("tool.exe", b"MZ", "application/octet-stream")})
        assert "only Markdown, plain text and PDF" in (await ops.get(answer.headers["location"])).text
        answer = await ops.post("/console/knowledge/upload", data={"csrf": token, "collection": "handbook"},
                                files={"document": ("huge.txt", b"a" * (10 * 2**20 + 1), "text/plain")})
        assert "huge.txt is over 10 MB" in (await ops.get(answer.headers["location"])).text
        answer = await ops.post("/console/knowledge/remove", data={"csrf": token, "collection": "handbook",
                                                                   "source": "leave.md"})
        page = (await ops.get(answer.headers["location"])).text
        assert "Removed leave.md from handbook." in page and "No documents." in page
        audit = (await ops.get("/console/audit")).text
        assert "added a document" in audit and "removed a document" in audit


async def test_with_allow_changes_the_builder_applies_a_new_agent_version(telegram: FakeTelegram,
                                                                          sqlite_url: str) -> None:
    bot = TelegramBot().register(telegram)
    async with running_gateway(telegram, [bot], database_url=sqlite_url, redis_url=None, model=answers("hi"),
                               capabilities=[{"id": "clock"}], top=console_section(allow_changes=True),
                               secrets=hashes()) as gateway, console_client(gateway, "ops") as (ops, token):
        form = (await ops.get("/console/builder", params={"agent": "assistant", "capability": "clock"})).text
        assert 'name="config.timezone"' in form
        answer = await ops.post("/console/builder", data={"csrf": token, "agent": "assistant", "capability": "clock",
                                                          "config.timezone": "Europe/Paris", "action": "apply"})
        assert "Applied: assistant is now at version 2." in answer.text
        agents = (await ops.get("/console/agents")).text
        assert re.search(r"v2 <span class=\"ok\">\(current\)", agents) and "v1" in agents
        assert "Europe/Paris" in (await ops.get("/console/audit")).text
        refused = await ops.post("/console/builder", data={"csrf": token, "agent": "assistant",
                                                           "capability": "web_research", "action": "apply"})
        assert "did not bind &#39;web_research&#39; at start" in refused.text


@pytest.mark.parametrize("database_url", ["postgresql"], indirect=True)
async def test_the_console_of_a_standby_replica_decides_and_that_replica_resumes_the_run(telegram: FakeTelegram,
                                                                                         database_url: str) -> None:
    """Two replicas on one PostgreSQL and Redis: the one polling Telegram parks the run; the other, which holds no
    transport, serves the console, decides, resumes the run and edits the card through its own adapter."""
    executed: list[str] = []
    bot = TelegramBot(binding={"approvals": {"console": True}}).register(telegram)
    alice = telegram.add_user(1001, "Alice")
    chat = telegram.private_chat(alice)

    def replica() -> Any:
        return deploying(telegram, bot, database_url, executed, redis_url=REDIS)

    async with AsyncExitStack() as stack:
        poller: Gateway = await stack.enter_async_context(replica())
        await telegram.wait_for(lambda: poller.metrics.holding() == [bot.name])
        standby: Gateway = await stack.enter_async_context(replica())
        await telegram.user_says(bot.token, chat, alice, "deploy web")
        card = await posted_card(telegram, chat)
        lead, token = await stack.enter_async_context(console_client(standby, "lead"))
        held = rf"<td>{bot.name}</td>.*?<td>{poller.replica_id}</td></tr>"
        async with asyncio.timeout(10):  # the poller's heartbeat follows its taking the transport within a second
            while not re.search(held, overview := (await lead.get("/console/live/overview")).text, re.DOTALL):
                pass
        assert standby.replica_id in overview and standby.metrics.holding() == []
        [approval_id] = re.findall(r'data-approval="([^"]+)"', (await lead.get("/console/approvals")).text)
        await lead.post(f"/console/approvals/{approval_id}", data={"csrf": token, "verb": "approve"})
        await telegram.wait_for(lambda: texts(telegram, chat["id"])[-1:] == ["done: deployed web"])
    assert executed == ["web"]
    [closed] = [m for m in telegram.bot_messages(chat["id"]) if m["message_id"] == card["message_id"]]
    assert closed["text"].startswith("Approved by lead (console)") and not closed.get("reply_markup")


async def test_a_console_decision_cut_short_by_a_crash_is_finished_by_its_retry(telegram: FakeTelegram,
                                                                                database_url: str) -> None:
    """The decision's first attempt won the compare-and-swap, then its process died before the card or the resume:
    the item's lapsed lease brings it back, and the retry closes the card and resumes the run, once."""
    parked = await parked_deploy(telegram, database_url)
    executed, bot, chat, card, replica = parked.executed, parked.bot, parked.chat, parked.card, parked.replica
    db = Database(database_url)
    try:
        [pending] = [a for a in await Approvals(db).recent() if a.status == "pending"]
        decision = OperatorDecision(approval_id=pending.id, verb="approve", operator="lead")
        assert await Approvals(db).decide(pending.id, "approved", decision.decided_by) is not None
        assert await Inbox(db).accept(logical_id=decision.logical_id, bot_name=bot.name,
                                      conversation_key=pending.conversation_key, payload=decision.payload())
        async with db.session() as session:  # its worker died holding it: the lease lapsed
            await session.execute(update(InboxRow).where(InboxRow.logical_id == decision.logical_id).values(
                status="running", attempts=1, lease_owner="dead", lease_until=utcnow() - timedelta(seconds=1)))
    finally:
        await db.close()
    async with replica():
        await telegram.wait_for(lambda: texts(telegram, chat["id"])[-1:] == ["done: deployed web"])
    assert executed == ["web"]
    [closed] = [m for m in telegram.bot_messages(chat["id"]) if m["message_id"] == card["message_id"]]
    assert closed["text"].startswith("Approved by lead (console)") and not closed.get("reply_markup")
