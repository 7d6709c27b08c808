"""Runs an agent assembled from a spec and a binding, the way the runtime does, without a chat around it."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic_ai import AgentRunResult, ModelMessage, ModelResponse, TextPart
from pydantic_ai.models import Model
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.tools import ToolDefinition

from adapters.base import ChannelInfo, ChatAddress, HistoryItem, Speaker
from capabilities import default_registry
from capabilities.conversation_search.corpus import ConversationCorpus, Found, ThreadWindow
from capabilities.memory_mem0.access import Mem0Access
from capabilities.registry import Registry
from capabilities.run import (
    ContextFile,
    ConversationState,
    KnowledgeScope,
    MemoryOwner,
    NoteStore,
    Outbox,
    RunFacts,
    SkillFolder,
    SpillStore,
)
from gateway.agents.assembly import AssembledAgent, assemble
from gateway.agents.bindings import AgentDefinition, Binding
from gateway.agents.models import ModelResolver
from gateway.config.schema import AgentSpec, BindingSpec
from gateway.config.secrets import SecretSource
from gateway.pipeline.runtime import TurnDeps

ROOM = ChatAddress(bot_id="helper", platform="telegram", channel_id="-100", thread_id=None, is_direct=False)
ALICE = Speaker(platform="telegram", platform_user_id="1001", display_name="Alice")


@dataclass
class FakeDirectory:
    """A platform directory that answers all four lookups from memory."""

    info: ChannelInfo = field(default_factory=lambda: ChannelInfo(channel_id="-100", name="Ops", purpose="Releases",
                                                                  topic="Q3 freeze", member_count=3))
    members: list[Speaker] = field(default_factory=lambda: [ALICE])
    channels: list[ChannelInfo] = field(default_factory=list)
    history: list[HistoryItem] = field(default_factory=list)
    supports: frozenset[Any] = frozenset({"get_channel_info", "list_channel_members", "search_channels",
                                          "read_channel_history"})
    asked: list[tuple[str, str]] = field(default_factory=list)
    """(lookup, channel id or query) for each call."""

    async def channel_info(self, channel_id: str) -> ChannelInfo:
        self.asked.append(("channel_info", channel_id))
        return self.info

    async def channel_members(self, channel_id: str, *, limit: int) -> list[Speaker]:
        self.asked.append(("channel_members", channel_id))
        return self.members[:limit]

    async def search_channels(self, query: str, *, limit: int) -> list[ChannelInfo]:
        self.asked.append(("search_channels", query))
        found = [c for c in self.channels if query.lower() in f"{c.name} {c.purpose or ''}".lower()]
        return found[:limit]

    async def channel_history(self, channel_id: str, *, limit: int) -> list[HistoryItem]:
        self.asked.append(("channel_history", channel_id))
        return self.history[-limit:]

    async def is_member(self, channel_id: str, user_id: str) -> bool:
        self.asked.append(("is_member", channel_id))
        return any(member.platform_user_id == user_id for member in self.members)


class NoConversations:
    """A person with no earlier conversations (`capabilities.conversation_search.corpus.ConversationCorpus`)."""

    async def search(self, query: str, *, limit: int) -> Found:
        return Found(hits=[])

    async def read(self, thread: int, *, start: int, count: int) -> ThreadWindow | None:
        return None


@dataclass
class MemoryState:
    """`conversation_state` for one conversation, kept in a dict."""

    rows: dict[str, dict[str, Any]] = field(default_factory=dict)

    async def load(self, capability: str) -> dict[str, Any] | None:
        return self.rows.get(capability)

    async def save(self, capability: str, data: dict[str, Any]) -> None:
        self.rows[capability] = data


@dataclass
class RunMemoryStore:
    """A run's spills, kept in a dict: what the runtime's durable `RunSpills` is to a run without a database."""

    payloads: dict[str, bytes] = field(default_factory=dict)

    async def write(self, key: str, data: bytes) -> str:
        self.payloads[key] = data
        return key

    async def read(self, handle: str) -> bytes:
        if handle not in self.payloads:
            raise FileNotFoundError(handle)
        return self.payloads[handle]

    async def discard(self) -> None:
        self.payloads.clear()


class MemoryOutbox:
    """An outbox that keeps what a run posts, in order: (name, data, mime type, caption)."""

    def __init__(self) -> None:
        self.files: list[tuple[str, bytes, str | None, str | None]] = []

    async def post_file(self, *, name: str, data: bytes, mime_type: str | None, caption: str | None = None) -> None:
        self.files.append((name, data, mime_type, caption))


def binding_with(capabilities: Iterable[Mapping[str, Any]] = (), *, binding: Mapping[str, Any] | None = None,
                 instructions: str = "") -> Binding:
    spec = AgentSpec.model_validate({"name": "assistant", "model": "scripted", "instructions": instructions,
                                     "capabilities": list(capabilities)})
    return Binding(bot_name="helper", agent=AgentDefinition(name="assistant", version=1, spec=spec),
                   spec=BindingSpec.model_validate(dict(binding or {})))


def assembled(binding: Binding, model: Model, *, registry: Registry | None = None, notes: NoteStore | None = None,
              owner: MemoryOwner | None = None, spills: SpillStore | None = None, directory: Any = None,
              state: ConversationState | None = None, resuming: bool = False,
              notice: Callable[[str], None] | None = None, address: ChatAddress = ROOM,
              facts: Mapping[str, Any] | None = None, conversations: ConversationCorpus | None = None,
              mem0: Mem0Access | None = None, secrets: Mapping[str, str] | None = None,
              outbox: Outbox | None = None) -> AssembledAgent:
    """Assembled as the runtime does; spills and posted files go to memory unless `spills`/`outbox` say where.
    `facts` are further `RunFacts` fields (the resources a spec binds: `knowledge`, `context_files`,
    `skill_folders`); `secrets` are what entries' `secret_id`s resolve from."""
    models = ModelResolver({}, SecretSource(environ={}), fixed={"scripted": model})
    run = run_facts(binding, address=address, owner=owner, notes=notes, spills=spills or RunMemoryStore(),
                    directory=directory, state=state, resuming=resuming, notice=notice, conversations=conversations,
                    mem0=mem0, outbox=outbox or MemoryOutbox(), **(facts or {}))
    return assemble(binding, registry=registry or default_registry(), models=models, run=run,
                    secrets=SecretSource(environ=dict(secrets or {})))


def run_facts(binding: Binding, *, address: ChatAddress = ROOM, **facts: Any) -> RunFacts:
    """The facts a runtime would decide for a run of `binding` in `address`, spills in memory by default."""
    return RunFacts(address=address, agent_name=binding.agent.name, **{"spills": RunMemoryStore(), **facts})


def deps_for(binding: Binding, address: ChatAddress = ROOM) -> TurnDeps:
    return TurnDeps(address=address, speaker=ALICE, binding=binding)


async def run(agent: AssembledAgent, prompt: str, *, binding: Binding, history: list[ModelMessage] | None = None,
              address: ChatAddress = ROOM) -> AgentRunResult[Any]:
    return await agent.agent.run(prompt, deps=deps_for(binding, address), message_history=history)


def recording(reply: str = "ok") -> tuple[FunctionModel, list[AgentInfo]]:
    """A model that answers `reply` and records what it was offered on each request."""
    seen: list[AgentInfo] = []

    def answer(_messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        seen.append(info)
        return ModelResponse(parts=[TextPart(reply)])
    return FunctionModel(answer), seen


def tool_defs(seen: list[AgentInfo]) -> dict[str, ToolDefinition]:
    return {tool.name: tool for info in seen for tool in info.function_tools}


@dataclass(frozen=True, slots=True, kw_only=True)
class Case:
    """One capability under one config, as an agent spec (or, for `channel_tools`, a binding) grants it."""

    id: str
    capability: str
    config: Mapping[str, Any] = field(default_factory=dict)
    facts: Mapping[str, Any] = field(default_factory=dict)
    """The resources the spec binds for it, as `RunFacts` fields."""
    secret_id: str | None = None
    """Names one of `CASE_SECRETS`, for a capability that needs a key."""

    def binding(self) -> Binding:
        if self.capability == "channel_tools":
            return binding_with(binding={"channel_tools": dict(self.config)})
        return binding_with([{"id": self.capability, "config": dict(self.config), "secret_id": self.secret_id}])


@dataclass(frozen=True, slots=True)
class NoSearch:
    """A `DocumentSearch` that finds nothing: enough to attach `knowledge`."""

    async def search(self, collections: Any, query: str, *, limit: int) -> list[Any]:
        return []


SKILLS = Path(__file__).parent / "data" / "skills"
HANDBOOK = KnowledgeScope(collections=("handbook",), search=NoSearch())
GLOSSARY = ContextFile(name="glossary", description="Terms we use.", mode="link", format="markdown",
                       text="SLA: service level agreement.")
SPECIALIST = {"name": "researcher", "description": "Researches a topic and reports findings.",
              "instructions": "Research the topic; cite sources.", "model": "scripted"}
CASE_SECRETS = {"IMAGE_KEY": "sk-test-image-key", "MEM0_KEY": "test-key"}
ALL_LOOKUPS = ["get_channel_info", "list_channel_members", "search_channels", "read_channel_history"]

CASES = (
    Case(id="memory_files", capability="memory_files"),
    Case(id="planning-flat", capability="planning"),
    Case(id="planning-subtasks", capability="planning", config={"enable_subtasks": True}),
    Case(id="thinking", capability="thinking", config={"effort": "high"}),
    Case(id="system_reminders", capability="system_reminders", config={"reminders": [{"text": "Be brief."}]}),
    Case(id="clock", capability="clock"),
    Case(id="guardrails", capability="guardrails", config={"redact_secrets_in": True}),
    Case(id="compaction", capability="compaction", config={"strategy": "sliding_window"}),
    Case(id="tool_output_limits-spill", capability="tool_output_limits"),
    Case(id="tool_output_limits-truncate", capability="tool_output_limits", config={"action": "truncate"}),
    Case(id="channel_tools-all", capability="channel_tools", config={"tools": ALL_LOOKUPS}),
    Case(id="channel_tools-info", capability="channel_tools", config={"tools": ["get_channel_info"]}),
    Case(id="subagents-sync", capability="subagents", config={"inline": [SPECIALIST]}),
    Case(id="subagents-async", capability="subagents", config={"mode": "async", "inline": [SPECIALIST]}),
    Case(id="subagents-auto-delegate", capability="subagents", config={"inline": [{**SPECIALIST, "mode": "auto"}]}),
    Case(id="subagents-menu", capability="subagents",
         config={"inline": [SPECIALIST], "models": {"fast": {"model": "scripted", "description": "quick drafts"}}}),
    Case(id="subagents-dynamic", capability="subagents", config={"allow_dynamic": True}),
    Case(id="knowledge", capability="knowledge", facts={"knowledge": HANDBOOK}),
    Case(id="skills", capability="skills", facts={"skill_folders": (SkillFolder(name="team", path=str(SKILLS)),)}),
    Case(id="context-link", capability="context", facts={"context_files": (GLOSSARY,)}),
    Case(id="web_research-duckduckgo", capability="web_research"),
    Case(id="web_fetch-local", capability="web_fetch", config={"allowed_domains": ["example.com"]}),
    Case(id="conversation_search", capability="conversation_search"),
    Case(id="memory_mem0-cloud", capability="memory_mem0", secret_id="MEM0_KEY"),
    Case(id="tool_search", capability="tool_search", config={"strategy": "keywords"}),
    Case(id="charts", capability="charts"),
    Case(id="sandbox-state", capability="sandbox"),
    Case(id="sandbox-no-execute", capability="sandbox", config={"include_execute": False}),
    Case(id="browser_use", capability="browser_use"),
    Case(id="code_execution", capability="code_execution"),
    Case(id="image_generation", capability="image_generation", secret_id="IMAGE_KEY"),
)
"""Every registered capability, under the configs that change what it offers."""


async def offered_tool_defs(case: Case) -> dict[str, ToolDefinition]:
    """The tools a model is actually offered for `case`, through a real assembled run."""
    from capabilities.memory_files.store import MemoryNotes
    from storage.db import Database

    db = Database("sqlite+aiosqlite://")
    try:
        model, seen = recording()
        binding = case.binding()
        agent = assembled(binding, model, notes=MemoryNotes(db), directory=FakeDirectory(),
                          state=MemoryState(), facts=case.facts, conversations=NoConversations(),
                          mem0=Mem0Access(deployment="test"), secrets=CASE_SECRETS)
        await run(agent, "hi", binding=binding)
        return tool_defs(seen)
    finally:
        await db.close()
