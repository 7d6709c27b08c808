"""Runs an agent assembled from a spec and a binding, the way the runtime does, without a chat around it."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from pydantic_ai import AgentRunResult, ModelMessage, ModelResponse, TextPart
from pydantic_ai.models import Model
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.tools import ToolDefinition

from adapters.base import ChannelInfo, ChatAddress, HistoryItem, Speaker
from capabilities import default_registry
from capabilities.browser_use.services import BrowserServices
from capabilities.context.services import ContextServices
from capabilities.conversation_search.corpus import ConversationCorpus, Found, ThreadWindow
from capabilities.conversation_search.services import ConversationSearchServices
from capabilities.knowledge.services import KnowledgeServices
from capabilities.memory_files.services import MemoryFilesServices
from capabilities.memory_mem0.access import Mem0Access
from capabilities.memory_mem0.services import Mem0Services
from capabilities.registry import BoundRegistry, Registry
from capabilities.reminders.services import RemindersServices
from capabilities.run import (
    BuildContext,
    ContextFile,
    ConversationState,
    KnowledgeScope,
    MemoryOwner,
    NoteStore,
    Outbox,
    RunFacts,
    SkillFolder,
    SpecResources,
    SpillStore,
)
from capabilities.sandbox.services import SandboxServices
from capabilities.skills.services import SkillServices
from capabilities.tool_output_limits.services import SpillServices
from capabilities.web_fetch.services import WebFetchServices
from gateway.agents import assembly
from gateway.agents.assembly import AssembledAgent
from gateway.agents.bindings import AgentDefinition, Binding
from gateway.agents.models import ModelResolver
from gateway.config.schema import AgentSpec, BindingSpec
from gateway.config.secrets import SecretSource
from gateway.pipeline.runtime import TurnDeps
from storage.reminders import Reminders

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


STORES = ("notes", "spills", "conversations", "mem0", "knowledge", "knowledge_services", "context_files",
          "skill_folders", "workspace", "browser", "resolver")
"""What a test hands a run that the gateway binds per capability at start (`CapabilityDef.bind`)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class StoredFacts(RunFacts):
    """A run's facts with the stores a test gives its capabilities, which `assemble` binds as their services."""

    stores: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class FixedContextFiles:
    files: Mapping[str, ContextFile]

    def get(self, name: str) -> ContextFile | None:
        return self.files.get(name)


async def _all_searchable(collections: Any) -> frozenset[str]:
    return frozenset(collections)


def services_of(stores: Mapping[str, Any]) -> dict[str, Any]:
    """Each capability's services, as its `bind` would build them, from a test's stores."""
    resolver = stores.get("resolver")
    web = {} if resolver is None else {"resolver": resolver}
    folders = {folder.name: folder for folder in stores.get("skill_folders", ())}
    spills = stores.get("spills") or RunMemoryStore()
    services: dict[str, Any] = {
        "web_fetch": WebFetchServices(**web), "browser_use": BrowserServices(engine=stores.get("browser"), **web),
        "tool_output_limits": SpillServices(spills=lambda _run_id: spills),
        "context": ContextServices(files=FixedContextFiles({f.name: f for f in stores.get("context_files", ())})),
        "skills": SkillServices(folders=folders),
        "sandbox": SandboxServices(documents=None, skill_folders=folders),
    }
    if stores.get("notes") is not None:
        services["memory_files"] = MemoryFilesServices(notes=stores["notes"])
    # offering the tools reads nothing: a test that calls them hands its own store
    services["reminders"] = RemindersServices(reminders=stores.get("reminders") or Reminders(None))  # type: ignore[arg-type]
    if stores.get("mem0") is not None:
        services["memory_mem0"] = Mem0Services(access=stores["mem0"])
    if stores.get("conversations") is not None:
        services["conversation_search"] = ConversationSearchServices(corpus=lambda *_: stores["conversations"])
    if stores.get("knowledge") is not None:
        services["knowledge"] = KnowledgeServices(search=stores["knowledge"].search, searchable=_all_searchable)
    if stores.get("knowledge_services") is not None:
        services["knowledge"] = stores["knowledge_services"]
    return services


def naming(binding: Binding, resources: SpecResources) -> Binding:
    """`binding` with its agent's spec also naming `resources` (what a test hands the run by name)."""
    spec = binding.agent.spec
    named = {field: list(dict.fromkeys([*getattr(spec, field), *getattr(resources, field)]))
             for field in ("collections", "context_files", "skill_folders")}
    agent = replace(binding.agent, spec=spec.model_copy(update=named))
    return replace(binding, agent=agent)


def assemble(binding: Binding, *, registry: Registry | None = None, models: ModelResolver, run: RunFacts,
             secrets: SecretSource | None = None, ask_user: Callable[[str], Awaitable[str]] | None = None,
             **options: Any) -> AssembledAgent:
    """`gateway.agents.assembly.assemble` with the registry bound to the stores the test's `run_facts` carries."""
    stores = run.stores if isinstance(run, StoredFacts) else {}
    capabilities = BoundRegistry(registry or default_registry(), services_of(stores),
                                 secrets=secrets or SecretSource(environ={}))
    if ask_user is not None:
        capabilities.asking = ask_user  # the test's own person answers its delegates' questions
    return assembly.assemble(naming(binding, run.resources), capabilities=capabilities, models=models, run=run,
                             **options)



def context_for(capability: str, config: Any, run: RunFacts, **options: Any) -> Any:
    """A `BuildContext` for one entry, with the services its `bind` would give from the run's stores."""
    stores = run.stores if isinstance(run, StoredFacts) else {}
    return BuildContext(capability=capability, config=config, run=run, services=services_of(stores).get(capability),
                        **options)


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
    return assemble(binding, registry=registry, models=models, run=run,
                    secrets=SecretSource(environ=dict(secrets or {})))


def run_facts(binding: Binding, *, address: ChatAddress = ROOM, **facts: Any) -> RunFacts:
    """The facts a runtime would decide for a run of `binding` in `address`, with the stores the test gives its
    capabilities (spills in memory by default); a `workspace` is the run's own, as a lent one is."""
    stores = {name: facts.pop(name) for name in STORES if name in facts}
    resources = SpecResources(
        collections=tuple(stores["knowledge"].collections) if stores.get("knowledge") else
        tuple(facts.pop("collections", ())),
        context_files=tuple(f.name for f in stores.get("context_files", ())),
        skill_folders=tuple(f.name for f in stores.get("skill_folders", ())))
    kept = {"sandbox": stores["workspace"]} if stores.get("workspace") is not None else {}
    facts.setdefault("speaker", ALICE)
    facts.setdefault("run_id", 1)
    return StoredFacts(address=address, agent_name=binding.agent.name, stores=stores, resources=resources, kept=kept,
                       **facts)


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
    Case(id="ask_person", capability="ask_person"),
    Case(id="reminders", capability="reminders"),
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
