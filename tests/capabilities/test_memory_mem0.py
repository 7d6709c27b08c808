"""`memory_mem0` against loopback mem0 servers of both dialects, over real TLS: the owner rule as `user_id`, where
the key may travel, and what the model is told when mem0 is down or refuses the key."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Mapping
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from pydantic import SecretStr
from pydantic_ai import ModelRequest
from pydantic_ai.messages import ToolReturnPart

from adapters.base import ChatAddress, Inbound, Speaker
from capabilities import default_registry
from capabilities.memory_files.personal import PersonalNotes
from capabilities.memory_files.store import MemoryNotes
from capabilities.memory_mem0 import NO_STORE, Mem0Config
from capabilities.memory_mem0.access import CLOUD_URL, Mem0Access, Mem0Refused, endpoint
from capabilities.memory_mem0.forget import Mem0Binding, Mem0Forgetting
from capabilities.run import MemoryOwner
from gateway.checks.report import check_file
from gateway.config.schema import CapabilityEntry, Settings
from gateway.config.secrets import SecretSource
from gateway.people.commands import DirectCommands
from gateway.people.identities import Identities
from gateway.pipeline.conversations import Conversations
from storage.db import Database
from tests.support.capability_runs import ROOM, assembled, binding_with, run
from tests.support.fakes.mem0 import FakeMem0, self_signed
from tests.support.scripted import calls_then_answers

KEY = "m0-sk-very-secret-4711"
DM = ChatAddress(bot_id="helper", platform="telegram", channel_id="1001", is_direct=True)
ALICE = MemoryOwner(kind="person", key="7")


@pytest.fixture
def certificate(tmp_path: Path) -> tuple[Path, Path]:
    return self_signed(tmp_path)


@pytest_asyncio.fixture(params=["cloud", "self_hosted"])
async def mem0(request: pytest.FixtureRequest, certificate: tuple[Path, Path]) -> AsyncIterator[FakeMem0]:
    async with FakeMem0(dialect=request.param, key=KEY, cert_file=certificate[0], key_file=certificate[1]) as fake:
        yield fake


def access(fake: FakeMem0, *, hosts: frozenset[str] = frozenset({"127.0.0.1"})) -> Mem0Access:
    return Mem0Access(deployment="acme", allowed_hosts=hosts, ca_file=fake.cert_file)


async def call(fake: FakeMem0, *calls: tuple[str, dict[str, Any]], owner: MemoryOwner | None = ALICE,
               address: ChatAddress = DM, mem0: Mem0Access | None = None, key: str = KEY,
               config: Mapping[str, Any] | None = None) -> list[str]:
    """What the model receives from each call, through a real assembled agent."""
    entry = {"id": "memory_mem0", "secret_id": "MEM0_KEY", "approval": "never",
             "config": {"base_url": fake.url, "dialect": fake.dialect, **(config or {})}}
    binding = binding_with([entry])
    results: list[str] = []

    def answer(returned: list[str]) -> str:
        results.extend(returned)
        return "ok"

    agent = assembled(binding, calls_then_answers(*calls, answer=answer), owner=owner, address=address,
                      mem0=mem0 or access(fake), secrets={"MEM0_KEY": key})
    await run(agent, "go", binding=binding, address=address)
    return results


async def test_remember_then_recall_under_the_persons_user_id(mem0: FakeMem0) -> None:
    remembered, recalled = await call(mem0, ("remember", {"text": "Alice prefers green tea."}),
                                      ("recall", {"query": "what tea does alice like"}))
    assert remembered == "remembered: Alice prefers green tea."
    assert recalled == "- Alice prefers green tea."
    assert mem0.memories == {"acme:assistant:person:7": ["Alice prefers green tea."]}


async def test_each_dialect_gets_its_own_routes_and_key_header(mem0: FakeMem0) -> None:
    await call(mem0, ("remember", {"text": "x y"}), ("recall", {"query": "x"}))
    routes = [(r.method, r.path) for r in mem0.received]
    if mem0.dialect == "cloud":
        assert routes == [("POST", "/v1/memories/"), ("POST", "/v2/memories/search/")]
        assert mem0.received[1].body["filters"] == {"user_id": "acme:assistant:person:7"}
        assert all(r.headers["Authorization"] == f"Token {KEY}" for r in mem0.received)
    else:
        assert routes == [("POST", "/memories"), ("POST", "/search")]
        assert mem0.received[1].body["user_id"] == "acme:assistant:person:7"
        assert all(r.headers["X-API-Key"] == KEY and "Authorization" not in r.headers for r in mem0.received)


async def test_in_a_group_the_room_owns_the_memories(mem0: FakeMem0) -> None:
    room = MemoryOwner(kind="room", key=ROOM.room_key)
    await call(mem0, ("remember", {"text": "The team ships on Fridays."}), owner=room, address=ROOM)
    assert list(mem0.memories) == ["acme:assistant:room:telegram:helper:-100"]


async def test_two_owners_never_see_each_others_memories(mem0: FakeMem0) -> None:
    await call(mem0, ("remember", {"text": "Alice salary is private."}))
    [recalled] = await call(mem0, ("recall", {"query": "salary"}), owner=MemoryOwner(kind="person", key="8"))
    assert recalled == "Nothing remembered about that."


async def test_without_an_owner_nothing_is_sent(mem0: FakeMem0) -> None:
    results = await call(mem0, ("remember", {"text": "x"}), ("recall", {"query": "x"}), owner=None)
    assert results == [NO_STORE, NO_STORE] and mem0.received == []


@pytest.mark.parametrize("hosts, reason", [(frozenset(), "MEM0_ALLOWED_HOSTS is empty"),
                                           (frozenset({"mem0.internal"}), "not listed in MEM0_ALLOWED_HOSTS")],
                         ids=["empty-allowlist", "unlisted-host"])
async def test_a_self_hosted_server_outside_the_allowlist_never_gets_the_key(
        mem0: FakeMem0, hosts: frozenset[str], reason: str) -> None:
    [answer] = await call(mem0, ("remember", {"text": "x"}), mem0=access(mem0, hosts=hosts))
    assert reason in answer and "do not try again" in answer
    assert mem0.received == []


def test_the_cloud_needs_no_allowlist_and_an_http_url_is_refused() -> None:
    assert endpoint(None, Mem0Access(deployment="acme")) == CLOUD_URL
    listed = Mem0Access(deployment="acme", allowed_hosts=frozenset({"127.0.0.1"}))
    with pytest.raises(Mem0Refused, match="not an https URL"):
        endpoint("http://127.0.0.1:9", listed)
    with pytest.raises(Mem0Refused, match="carries credentials") as refused:
        endpoint("https://admin:hunter2@127.0.0.1:9", listed)
    assert "hunter2" not in str(refused.value)


def test_gateway_check_refuses_http_and_a_missing_key_naming_the_field() -> None:
    registry = default_registry()
    http = CapabilityEntry(id="memory_mem0", secret_id="MEM0_KEY", config={"base_url": "http://mem0.internal"})
    [problem] = registry.validate_entry(http, path="agents[0].capabilities[0]")
    assert problem.startswith("agents[0].capabilities[0].config.base_url: ") and "https" in problem
    leaky = CapabilityEntry(id="memory_mem0", secret_id="MEM0_KEY", config={"base_url": "https://u:hunter2@mem0.io"})
    [credentials] = registry.validate_entry(leaky, path="agents[0].capabilities[0]")
    assert "carries credentials" in credentials and "hunter2" not in credentials
    [keyless] = registry.validate_entry(CapabilityEntry(id="memory_mem0"), path="agents[0].capabilities[0]")
    assert keyless.startswith("agents[0].capabilities[0].secret_id: ") and "needs a key" in keyless


async def test_a_redirect_is_not_followed_so_the_key_goes_nowhere_else(
        mem0: FakeMem0, certificate: tuple[Path, Path]) -> None:
    async with FakeMem0(dialect=mem0.dialect, key=KEY, cert_file=certificate[0], key_file=certificate[1]) as elsewhere:
        mem0.redirect_to = f"{elsewhere.url}/steal"
        [answer] = await call(mem0, ("remember", {"text": "x"}))
        assert "redirect" in answer and elsewhere.received == []


async def test_an_outage_is_a_retry_prompt_never_an_empty_result(mem0: FakeMem0) -> None:
    mem0.status = 503
    entry = {"id": "memory_mem0", "secret_id": "MEM0_KEY",
             "config": {"base_url": mem0.url, "dialect": mem0.dialect}}
    binding = binding_with([entry])
    agent = assembled(binding, calls_then_answers(("recall", {"query": "tea"})), owner=ALICE, address=DM,
                      mem0=access(mem0), secrets={"MEM0_KEY": KEY})
    result = await run(agent, "go", binding=binding, address=DM)
    [returned] = [part for message in result.all_messages() if isinstance(message, ModelRequest)
                  for part in message.parts if isinstance(part, ToolReturnPart)]
    assert returned.outcome == "retried"
    assert "did not answer" in str(returned.content) and "HTTP 503" in str(returned.content)


async def test_a_rejected_key_is_said_and_the_key_is_in_no_log_line_or_text(
        mem0: FakeMem0, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    [rejected] = await call(mem0, ("remember", {"text": "x"}), key="wrong-" + KEY)
    mem0.status = 500
    [down] = await call(mem0, ("recall", {"query": "x"}))
    assert "rejected the key" in rejected and "did not answer" in down
    assert KEY not in rejected + down
    assert KEY not in caplog.text and "mem0" in caplog.text


async def test_an_unreachable_server_is_said_without_the_key(mem0: FakeMem0, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    url = mem0.url
    await mem0.__aexit__()
    [answer] = await call(mem0, ("recall", {"query": "x"}), config={"base_url": url})
    assert "cannot reach mem0 at 127.0.0.1" in answer
    assert KEY not in answer and KEY not in caplog.text


CHECKED = """\
agents:
  - name: helper
    model: test
    capabilities:
      - id: memory_mem0
        secret_id: MEM0_KEY
        config: {base_url: "https://mem0.internal"}
bots:
  - name: tg
    platform: telegram
    token: ${TG_TOKEN}
    agent: helper
"""


@pytest.mark.parametrize("hosts, allowed", [(frozenset(), False), (frozenset({"mem0.internal"}), True)],
                         ids=["empty-allowlist", "listed"])
def test_gateway_check_says_when_this_machine_would_refuse_the_self_hosted_host(
        tmp_path: Path, hosts: frozenset[str], allowed: bool) -> None:
    path = tmp_path / "gateway.yaml"
    path.write_text(CHECKED)
    secrets = SecretSource(environ={"TG_TOKEN": "1:a", "MEM0_KEY": "k"})
    report = check_file(path, registry=default_registry(), secrets=secrets,
                        settings=Settings(GATEWAY_DEPLOYMENT="acme", MEM0_ALLOWED_HOSTS=",".join(sorted(hosts))))
    lines = report.lines(report.unset)
    assert report.errors == ()
    assert lines == [] if allowed else (
        len(lines) == 1 and "agents['helper'].capabilities[0].config.base_url: " in lines[0]
        and "MEM0_ALLOWED_HOSTS is empty" in lines[0])


async def test_forget_yes_says_whose_mem0_could_not_be_reached(mem0: FakeMem0, sqlite_url: str) -> None:
    db = Database(sqlite_url)
    await db.create_all()
    try:
        speaker = Speaker(platform="telegram", platform_user_id="1001", display_name="Alice")
        identity = await Conversations(db).identity(speaker)
        mem0.status = 503
        binding = Mem0Binding(agent="alpha", config=Mem0Config(base_url=mem0.url, dialect=mem0.dialect),
                              key=SecretStr(KEY))
        commands = DirectCommands(identities=Identities(db),
                                  stores=[PersonalNotes(MemoryNotes(db)), Mem0Forgetting([binding], access(mem0))])
        answer = await commands.answer(Inbound(address=DM, speaker=speaker, text="forget yes", message_id="1",
                                               addressed="direct"), identity)
    finally:
        await db.close()
    assert "memory service (mem0) of agent(s) alpha could not be reached" in answer and KEY not in answer
    assert [r.query["user_id"] for r in mem0.received] == [f"acme:alpha:identity:{identity}"]


async def test_forget_yes_reaches_what_mem0_kept_under_a_person_a_link_merged_away(mem0: FakeMem0,
                                                                                   sqlite_url: str) -> None:
    db = Database(sqlite_url)
    await db.create_all()
    try:
        ids = [await Conversations(db).identity(Speaker(platform="slack", workspace="T1", platform_user_id=f"U{n}",
                                                         display_name="Alice")) for n in range(4)]
        kept, merged = await Identities(db).link(ids[0], ids[1]), await Identities(db).link(ids[2], ids[3])
        binding = Mem0Binding(agent="alpha", config=Mem0Config(base_url=mem0.url, dialect=mem0.dialect),
                              key=SecretStr(KEY))
        forgetting = Mem0Forgetting([binding], access(mem0))
        commands = DirectCommands(identities=Identities(db, stores=[forgetting]), stores=[forgetting])
        assert await Identities(db, stores=[forgetting]).link(ids[1], ids[2]) == kept
        speaker = Speaker(platform="slack", workspace="T1", platform_user_id="U3", display_name="Alice")
        answer = await commands.answer(Inbound(address=DM, speaker=speaker, text="forget yes", message_id="1",
                                               addressed="direct"), ids[3])
    finally:
        await db.close()
    assert answer.startswith("Done:")
    deleted = [r.query["user_id"] for r in mem0.received if r.method == "DELETE"]
    assert f"acme:alpha:person:{kept}" in deleted and f"acme:alpha:person:{merged}" in deleted
