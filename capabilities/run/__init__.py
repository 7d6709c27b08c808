"""What a capability receives: its services once, when the gateway starts, and for each run its config and the
run's facts, typed.

At start the gateway hands each capability an enabled entry binds the `Deployment` (database, config, settings,
secrets, each bot's directory); the capability builds its own services from it (`CapabilityDef.bind`), and a
service it cannot have fails the start (`ServiceMissing`), never a turn. For each run the gateway decides the
facts here server-side (`gateway/pipeline/runtime.py`): who asked, where, whose memory, what the spec binds by
name; a builder never opens a database session of its own and never reads the run's deps for something the
gateway knew at assembly. A per-run object a capability needs (a spill store, a workspace) it builds from its
services and these facts, so an agent pays per turn only for what it binds.

The entry's `secret` is resolved at assembly from the variable its `secret_id` names (environment, then
secrets file); a running gateway has registered every such value with its log redactor. The run's `outbox`
takes the files a capability posts into the chat (`charts`, `image_generation`, the workspace's `output/`).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any, Generic, Literal, Protocol, TypeVar

from pydantic import BaseModel, SecretStr

from adapters.base import ChatAddress, Directory, Speaker
from capabilities.run.url_guard import Resolver, system_resolver

if TYPE_CHECKING:  # a capability's declaration reads this module; only its builder needs pydantic-ai, httpx
    from pydantic_ai.capabilities import AbstractCapability
    from pydantic_ai.usage import RequestUsage
    from sqlalchemy import Connection

C = TypeVar("C", bound=BaseModel)
T = TypeVar("T")
S = TypeVar("S")

OwnerKind = Literal["person", "identity", "room"]


class SecretLookup(Protocol):
    """Looks a secret's value up by its variable's name (environment, then secrets file); None when unset."""

    def get(self, name: str) -> str | None: ...


@dataclass(frozen=True, slots=True, kw_only=True)
class Deployment:
    """What a starting gateway hands every capability an enabled entry binds, once: the capability builds its own
    services from it (`CapabilityDef.bind`), so the core wires no capability by name.

    `config` and `settings` are the gateway's validated `GatewayConfig` and `Settings` (`gateway/config/schema.py`,
    a layer above this one): a capability reads the fields its docstring names there."""

    db: Any
    """The gateway's `storage.db.Database`."""
    config: Any
    settings: Any
    secrets: SecretLookup = field(repr=False)
    directories: Mapping[str, Directory] = field(default_factory=dict[str, Directory])
    """Each bot's channel lookups, by bot name."""
    resolver: Resolver = system_resolver
    """Where the names an outbound fetch reaches are looked up, before the URL guard checks their addresses."""
    redact: Callable[[str], None] = field(default=lambda _value: None, compare=False)
    """Registers a secret value with the log redactor: a capability that resolves a key of its own at start
    hands it here first."""


class SetupFault(Exception):
    """The deployment's own setup is wrong where a run meets it (a context file gone from its path): the operator
    must fix it; the chat hears it is a configuration problem, the log names what."""


class ServiceMissing(LookupError):
    """A capability an enabled entry binds needs a deployment service this gateway does not have: the start fails,
    naming the capability and the field (a turn never finds out)."""

    def __init__(self, capability: str, service: str, fix: str = "") -> None:
        super().__init__(f"capability {capability!r} needs {service}, which this deployment does not provide"
                         + (f"; {fix}" if fix else ""))
        self.capability = capability
        self.service = service


@dataclass(frozen=True, slots=True, kw_only=True)
class MemoryOwner:
    """The one store a run reads and writes: a person's, an unlinked identity's, or a room's."""

    kind: OwnerKind
    key: str
    """The person or identity id, or the room's `ChatAddress.room_key`."""

    @property
    def personal(self) -> bool:
        """Only the person it belongs to hears answers drawn from it."""
        return self.kind != "room"


@dataclass(frozen=True, slots=True, kw_only=True)
class NoteInfo:
    path: str
    size: int
    """Characters of content."""
    updated_at: datetime


class NoteStore(Protocol):
    """One agent's memory notes in one owner's store (`capabilities/memory_files/store.py`)."""

    async def list(self, agent_name: str, owner: MemoryOwner) -> list[NoteInfo]: ...

    async def read(self, agent_name: str, owner: MemoryOwner, path: str) -> str | None: ...

    async def write(self, agent_name: str, owner: MemoryOwner, path: str, content: str) -> bool:
        """Create or replace a note; True when it was created."""
        ...

    async def change(self, agent_name: str, owner: MemoryOwner, path: str,
                     edit: Callable[[str], str]) -> str | None:
        """Apply `edit` under a lock; None when there is no such note. `edit` may raise to change nothing."""
        ...

    async def delete(self, agent_name: str, owner: MemoryOwner, path: str) -> bool: ...


@dataclass(frozen=True, slots=True, kw_only=True)
class Held:
    """What one capability keeps about some owners, as `forget` tells the person before it deletes anything."""

    count: int = 0
    """What this gateway counted of it."""
    counted: str = ""
    """`count` as the answer names it ("2 note(s)"); empty: this capability counts nothing."""
    uncounted: str = ""
    """A sentence on what may be kept where this gateway cannot count it (a memory service); empty: nothing."""

    @property
    def anything(self) -> bool:
        return self.count > 0 or bool(self.uncounted)


@dataclass(frozen=True, slots=True, kw_only=True)
class Deleted:
    """What one capability deleted of some owners, and what it could not reach."""

    counted: str = ""
    """What was deleted, counted ("2 note(s)"); empty: this capability counts nothing."""
    unreached: str = ""
    """Where deleting failed, as the person reads it ("the memory service (mem0) of agent(s) alpha"); empty: all
    was deleted."""
    problems: tuple[str, ...] = ()
    """Each failure for the operator, with why ("mem0 memories of agent alpha not deleted (HTTP 503)")."""


class PersonalStore(Protocol):
    """What one capability keeps about people beyond a run (`CapabilityDef.personal_store`): what `forget` counts and
    deletes, and what linking two accounts moves into one store. Every owner is personal (`MemoryOwner.personal`)."""

    async def held(self, owners: Sequence[MemoryOwner]) -> Held: ...

    async def delete(self, owners: Sequence[MemoryOwner]) -> Deleted:
        """Delete everything these owners have here, for every agent."""
        ...

    async def clear(self, agent_name: str) -> Deleted:
        """Delete everything one agent keeps here, for every owner (`gateway memory clear`)."""
        ...

    def move(self, connection: Connection, source: MemoryOwner, target: MemoryOwner) -> None:
        """Give `source`'s rows to `target` in the caller's transaction (two accounts linked into one person); a
        capability storing nothing in this database moves nothing."""
        ...


class SpillStore(Protocol):
    """Oversized tool returns of one run, kept whole (the harness's `OverflowStore`, plus `discard`)."""

    async def write(self, key: str, data: bytes) -> str:
        """Keeps `data` and returns the handle the model reads it back by."""
        ...

    async def read(self, handle: str) -> bytes:
        """The data behind `handle`; raises `FileNotFoundError` for a handle that is not stored."""
        ...

    async def discard(self) -> None:
        """Deletes everything this run spilled."""
        ...


class ConversationState(Protocol):
    """One JSON object per capability, kept with the conversation between its turns."""

    async def load(self, capability: str) -> dict[str, Any] | None: ...

    async def save(self, capability: str, data: dict[str, Any]) -> None: ...


class FileRefused(Exception):
    """The chat cannot take a file (larger than the platform takes, or a chat that takes no files). The message
    says why in words fit for the model and for people; nothing was stored."""


class Outbox(Protocol):
    """Files a run posts into the chat, delivered once across parks, resumes and crashes (DESIGN §11).

    `post_file` stores the file durably with the run's turn and returns; the gateway posts it into the
    conversation's thread when the run answers, parks for a person, or fails, each stored file exactly once:
    a resume on another replica finds it posted, and a turn retried after a worker died between store and post
    posts the file the dead attempt stored (the same name and bytes stored again are the same file). A worker that
    died mid-upload leaves the file to any replica once its claim runs out: never lost, at most posted twice where
    the platform had taken the first upload. Tell the model a file is on its way once `post_file` returned."""

    async def post_file(self, *, name: str, data: bytes, mime_type: str | None, caption: str | None = None) -> None:
        """Store `data` as `name` for the chat, shown with `caption` (Markdown); `mime_type` None: guessed from
        the name.

        Raises:
            FileRefused: the chat cannot take it (the message says why; tell the model as text).
        """
        ...


class RunDeps(Protocol):
    """What capabilities read of a run's deps (`ctx.deps`, the gateway's `TurnDeps`) while the run goes on.

    Only what changes during a run lives here; what the gateway knew at assembly reaches a builder
    through `RunFacts`.
    """

    @property
    def background(self) -> bool:
        """True inside a background delegation: a gated tool there is refused, since nobody can be asked."""
        ...

    def for_background(self) -> RunDeps:
        """These deps for a background delegation started from this run."""
        ...

    def clone_for_subagent(self, max_depth: int = 0) -> RunDeps:
        """A delegate's deps: the same server-side facts (subagents-pydantic-ai calls this)."""
        ...


@dataclass(frozen=True, slots=True, kw_only=True)
class BuiltDelegate:
    """A delegate agent built for one run: its own capabilities and approval gates, on this run's budget."""

    agent: Any
    """A pydantic-ai `Agent` whose output is `str | DeferredToolRequests`."""
    stable_id: Callable[[str], str]
    """The stable tool id behind a name the delegate's model sees (approval cards name the real call)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class DelegationFacts:
    """What the gateway decided about one agent's delegation in one run: plain data, read by `subagents`."""

    parent_model: str
    """The delegating agent's own model (profile name or model string): what an agent file inherits."""
    model_names: frozenset[str]
    """The model profiles this deployment configures: all a model-written specialist may name."""
    depth_left: int | None = None
    """Levels of delegation the tree above leaves this agent; `None` for the agent a chat admitted."""
    ask_user: Callable[[str], Awaitable[str]] | None = field(default=None, compare=False)
    """Puts a synchronous delegate's question to the person holding the run; `None`: nobody to ask."""
    pinned: tuple[str, ...] = ()
    """The other agents of this gateway the delegating agent names in its spec's top-level `subagents`."""
    specialists: dict[str, dict[str, Any]] = field(default_factory=dict[str, dict[str, Any]], compare=False)
    """The specialists the model wrote with `create_agent` in this run, by name (name, description,
    instructions, model, mode): carried across an approval park and registered again on resume.

    The one mutable part of these facts, and shared on purpose: for the agent a chat admitted it is the
    run's own dict (`AssembledAgent.specialists`), which `create_agent` adds to and a resume drops a
    specialist from when it no longer passes, so that what a park carries is what the model kept. A
    delegate's own delegation gets a fresh one that nothing carries."""


class DelegateBuilder(Protocol):
    """How `subagents` gets its delegates from the gateway: built through the same assembly as the agent a
    chat admitted, on the deployment's models, with their approval gates, counted into the run's usage."""

    def resolve_model(self, name: str) -> Any:
        """A pydantic-ai model for a profile name or model string, as the agent's own model resolves."""
        ...

    def agent_description(self, name: str) -> str | None:
        """The description of another agent of this gateway, or None when there is no such agent."""
        ...

    def build_agent(self, name: str, *, depth_left: int, share: Sequence[str],
                    extra: Sequence[AbstractCapability[Any]]) -> BuiltDelegate:
        """Another agent of this gateway, from its own spec (its capabilities, its gates) plus `share`."""
        ...

    def build_specialist(self, *, name: str, instructions: str, model: str, model_settings: Any = None,
                         share: Sequence[str], extra: Sequence[AbstractCapability[Any]]) -> BuiltDelegate:
        """A specialist with `instructions` on the model profile or string `model`, plus `share`."""
        ...

    def charge(self, usage: Any) -> None:
        """Adds one delegate model response's usage to the run's accounting."""
        ...


@dataclass(frozen=True, slots=True, kw_only=True)
class Delegates:
    """What `subagents` needs from the gateway for one delegating agent: the facts of its delegation, and
    the builder of its delegates."""

    facts: DelegationFacts
    builder: DelegateBuilder


@dataclass(frozen=True, slots=True, kw_only=True)
class Passage:
    """One chunk of a document that matched a knowledge search, as the search ranks it."""

    collection: str
    document: str
    """The document's title (its first Markdown heading, else its file name)."""
    source: str
    """Where the document came from when it was added (its path), for the answer to name."""
    chunk: int
    """The chunk's place in its document, from 1."""
    chunks: int
    """How many chunks the document was cut into."""
    text: str
    """The passage, with the words that matched in `**bold**`."""


class DocumentSearch(Protocol):
    """Searches the chunks of the given collections (`capabilities/knowledge/store.py`): one seam for every ranker."""

    async def search(self, collections: Sequence[str], query: str, *, limit: int) -> list[Passage]:
        """The best `limit` passages for `query`, best first; raises `storage.fulltext.QueryProblem` for a query
        that can match nothing, `SearchUnavailable` when the store behind it cannot answer."""
        ...


class SearchUnavailable(Exception):
    """The store behind a search did not answer (an outage, a timeout): worth one more try, never "nothing found"."""


@dataclass(frozen=True, slots=True, kw_only=True)
class KnowledgeScope:
    """What one run may search: the collections its agent spec binds, decided by the server, and the search."""

    collections: tuple[str, ...]
    search: DocumentSearch


@dataclass(frozen=True, slots=True, kw_only=True)
class ContextFile:
    """A standing context file an agent spec binds by name, its text read for the run."""

    name: str
    description: str
    mode: Literal["inject", "link"]
    """`inject`: placed in the instructions; `link`: reached through `read_context`."""
    format: str
    """What the text is written in (`markdown`, `text`, `yaml`, …), for the model to read it right."""
    text: str


@dataclass(frozen=True, slots=True, kw_only=True)
class SkillFolder:
    """A folder of `SKILL.md` skills an agent spec binds by name."""

    name: str
    path: str


class MissingStore(LookupError):
    """A capability needs a store this run was not wired with: a bug in the gateway's wiring, not in the spec."""

    def __init__(self, capability: str, store: str) -> None:
        super().__init__(f"capability {capability!r} needs the run's {store}, and this run was assembled "
                         f"without one; wire it into RunFacts.{store} where the run is assembled")
        self.capability = capability
        self.store = store


@dataclass(frozen=True, slots=True, kw_only=True)
class SpecResources:
    """What an agent spec binds by name from the config's top level (`agents[].collections`, `.context_files`,
    `.skill_folders`): the server decides them, no model ever chooses a collection, a file or a folder."""

    collections: tuple[str, ...] = ()
    context_files: tuple[str, ...] = ()
    skill_folders: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class Upload:
    """A file the person attached to the message that admitted the run, downloaded."""

    name: str
    data: bytes


@dataclass(frozen=True, slots=True, kw_only=True)
class RunFacts:
    """What the server decided for one run: the same for every capability entry of it. Per-run facts only; what
    a capability needs of the deployment it binds once, at start (`CapabilityDef.bind`, `BuildContext.bound`)."""

    address: ChatAddress
    """The room of the message that admitted the run (`address.is_direct`: a one-to-one chat)."""
    agent_name: str
    """The agent the chat admitted: memory notes are kept per agent, delegates reach the same ones."""
    owner: MemoryOwner | None = None
    """Whose memory this run reaches (`gateway/pipeline/scope.py`); None: nobody's, as in a one-to-one chat of a
    bot with personal memory switched off."""
    speaker: Speaker | None = None
    """Who sent the message that admitted the run; None for a run outside any chat."""
    user_key: str | None = None
    """The speaker as one person across platforms (`person:<id>` when linked, else `identity:<id>`)."""
    run_id: int | None = None
    """The run's row; None for a run the gateway keeps no row of (one assembled outside a chat)."""
    directory: Directory | None = None
    """The bot's own channel lookups on its platform."""
    state: ConversationState | None = None
    """This conversation's capability state between turns; None for a delegate, whose state lasts its run."""
    notice: Callable[[str], None] | None = field(default=None, compare=False)
    """Puts a short status line into the live reply (a summary being written); "" clears it. None: no chat."""
    resuming: bool = False
    """True when the run continues one that was parked for an approval."""
    delegates: Delegates | None = None
    """How `subagents` builds this agent's delegates; None where nothing can be delegated to (a specialist)."""
    outbox: Outbox | None = None
    """Where a run's files go to be posted into the chat (`gateway/pipeline/outbox.py`); None where there is no
    chat to post into (a run outside any conversation)."""
    resources: SpecResources = SpecResources()
    """What the spec of the agent being built binds by name (a pinned delegate: its own spec's)."""
    uploads: tuple[Upload, ...] = ()
    """The admitting message's attachments, downloaded (a resumed run has none: they came with the turn that
    parked)."""
    mcp_servers: tuple[str, ...] = ()
    """The MCP servers this run reached, by name (each prefixes its tools): empty when the agent binds none or
    none answered. `tool_search` has nothing to find without them."""
    lent: frozenset[str] | None = None
    """None for the agent a chat admitted; for a delegate, the capability ids its delegating agent lent it, which
    then work on the delegating agent's own per-run state (one workspace for both)."""
    kept: dict[str, Any] = field(default_factory=dict[str, Any], compare=False)
    """What a capability keeps for the run's length, by capability id (a workspace's open state), made by its
    builder on first use; a delegate holds only what its delegating agent lent it, the same objects."""
    sandbox_scope: str | None = None
    """The bot binding's `sandbox_scope`, which overrides a spec's `session_scope` in that bot's chats."""
    charge: Callable[[RequestUsage], None] | None = field(default=None, compare=False)
    """Books what a capability spends on a model of its own (an image model) on the run's usage, with its
    delegates' spend; None: a run assembled without a ledger, where it goes to the calling agent's usage."""

    def lent_by_parent(self, capability: str) -> bool:
        """The run is a delegate's that its delegating agent lent `capability` to (so it shares that one's state)."""
        return self.lent is not None and capability in self.lent


@dataclass(frozen=True, slots=True, kw_only=True)
class BuildContext(Generic[C]):
    """What a builder receives for one capability entry of one run: its own validated config, the entry's
    secret, the run's facts, and the services its capability bound at start. What a capability cannot work
    without is read through `bound` and the properties, which raise rather than let it go missing quietly."""

    capability: str
    """The capability id of the entry being built (what `MissingStore` and `ServiceMissing` name)."""
    config: C
    run: RunFacts
    secret: SecretStr | None = None
    """The value of the secret the entry's `secret_id` names, resolved for this run; None when it names none."""
    services: Any = None
    """What the capability's `bind` built from the deployment when the gateway started; None: it binds nothing."""

    def bound(self, kind: type[S]) -> S:
        """The capability's services, as `bind` built them; raises `ServiceMissing` when this run has none."""
        if not isinstance(self.services, kind):
            raise ServiceMissing(self.capability, kind.__name__, "bind it when the gateway starts (Registry.bind)")
        return self.services

    @property
    def directory(self) -> Directory:
        return self._required("directory", self.run.directory)

    @property
    def outbox(self) -> Outbox:
        return self._required("outbox", self.run.outbox)

    @property
    def run_id(self) -> int:
        return self._required("run_id", self.run.run_id)

    @property
    def speaker(self) -> Speaker:
        return self._required("speaker", self.run.speaker)

    def _required(self, store: str, value: T | None) -> T:
        if value is None:
            raise MissingStore(self.capability, store)
        return value
