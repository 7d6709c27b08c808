"""Builds the whole gateway in one place and runs it: HTTP server, transports, workers."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
import time
import uuid
from collections.abc import Awaitable, Callable, Coroutine, Generator
from contextlib import AsyncExitStack
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import partial
from typing import TYPE_CHECKING, Any

import uvicorn
from sqlalchemy import text
from starlette.applications import Starlette
from starlette.routing import Mount

from adapters.platforms import PlatformAdapter
from adapters.protocols import Closable, PostsFiles
from capabilities.registry import Registry
from capabilities.run import Deployment
from capabilities.run.url_guard import Resolver, system_resolver
from gateway.agents.bindings import BindingStore
from gateway.agents.mcp_servers import McpServers
from gateway.agents.mcp_servers import secret_values as mcp_secret_values
from gateway.agents.models import ModelResolver
from gateway.approvals.parking import ApprovalFlow
from gateway.approvals.question_store import DelegateQuestions
from gateway.approvals.questions import QuestionFlow
from gateway.approvals.store import Approvals
from gateway.checks.validation import check_appliable, deployment_registry
from gateway.config.errors import ConfigError
from gateway.config.schedules import hook_secret_problem
from gateway.config.schema import GatewayConfig, Settings, capability_secrets, reference_name, resolve_secret
from gateway.config.secrets import SecretSource
from gateway.people.commands import DirectCommands
from gateway.people.identities import Identities
from gateway.pipeline.conversations import Conversations
from gateway.pipeline.hooks import Hook, Hooks
from gateway.pipeline.inbox import Inbox
from gateway.pipeline.intake import Intake, TypingShown
from gateway.pipeline.metrics import Backlog, GatewayMetrics
from gateway.pipeline.operator_decisions import OperatorDecision
from gateway.pipeline.outbox import CLAIM
from gateway.pipeline.outbox_sweep import OutboxSweep
from gateway.pipeline.router import Router
from gateway.pipeline.runtime import Chats, Runtime
from gateway.pipeline.scheduler import LATE_AFTER, Scheduler
from gateway.pipeline.steps.commands import at_once_words, menu, words
from gateway.pipeline.turn_control import TurnControl
from gateway.pipeline.worker import RunningTurns, Worker
from gateway.server.errors import StartupError
from gateway.server.http import Readiness, ReadinessCheck, build_http_app
from gateway.server.logs import SecretRedactor
from gateway.server.platforms import AdapterContext, build_adapter
from gateway.server.supervisor import Supervisor
from gateway.server.tracing import build_tracing
from storage.cache import LocalCache
from storage.db import Database
from storage.reminders import Reminders
from storage.revision import is_current
from storage.tables import utcnow

if TYPE_CHECKING:
    from storage.redis_cache import FallbackCache

log = logging.getLogger(__name__)

INBOX_RETENTION = timedelta(days=30)
SOONEST = 1.0
"""Seconds between two runs of a sweep at least."""
"""Far beyond any platform's redelivery window (Slack retries for minutes, Telegram keeps updates a day)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Tuning:
    """Timings an operator rarely changes; tests shorten them."""

    worker_lease: timedelta = timedelta(seconds=10)
    """How long a crashed replica's turn waits before another retries it; running turns renew it every quarter."""
    worker_concurrency: int = 8
    idle_poll: float = 1.0
    shutdown_grace: float = 10.0
    poll_timeout: int = 30
    transport_first_delay: float = 5.0
    transport_lease_ttl: float = 8.0
    """How long the loss of the replica holding a bot's transport goes unnoticed; renewed every quarter."""
    expiry_interval: float = 30.0
    """Seconds between sweeps for approvals nobody decided in time."""
    first_sweep: float = SOONEST
    """Seconds from the start to the sweeps' first look (expired approvals, files left mid-upload, pruning)."""
    file_claim: timedelta = CLAIM
    """How long a file being posted stays claimed without a renewal: the wait before another replica posts a file
    whose upload died with its process; the outbox sweep looks this often at least."""
    resolver: Resolver = system_resolver
    """Where the names outbound fetches reach (`web_fetch`, MCP servers) are looked up; tests answer from a table."""
    schedule_tick: float = 5.0
    """Seconds between two looks for due schedules and reminders at most: a reminder set on another replica is
    seen this late; what this replica knows of is fired at its time."""
    firing_late_after: timedelta = LATE_AFTER
    """A firing found due longer ago than this was missed while no replica ran: delivered late, or skipped."""


class Gateway:
    """One gateway process. `async with Gateway(...)` starts everything and stops it cleanly."""

    def __init__(self, config: GatewayConfig, settings: Settings, *, secrets: SecretSource,
                 models: ModelResolver | None = None, registry: Registry | None = None, tuning: Tuning = Tuning(),
                 migrate: bool = True) -> None:
        self.registry = registry or deployment_registry(settings)
        check_appliable(config, self.registry)
        self.config = self.registry.stored(config)
        self.settings = settings
        self._secrets = secrets
        self._models = models or ModelResolver(config.models, secrets, deadlines=config.model_deadlines)
        self._tuning = tuning
        self._migrate = migrate
        self._stack = AsyncExitStack()
        self._tasks: list[asyncio.Task[None]] = []
        self._essential: list[asyncio.Task[None]] = []
        self.adapters: dict[str, PlatformAdapter] = {}
        self.port: int | None = None
        self.worker: Worker | None = None
        self.db: Database | None = None
        """The gateway's database once started (tests count its transactions on `db.engine`)."""
        self.redactor = SecretRedactor()
        self.console: Mount | None = None
        """The console's routes once started, where `console.enabled` (tests walk them)."""
        self.replica_id = f"{socket.gethostname()}-{uuid.uuid4().hex[:8]}"
        """This process among the replicas: the owner of its transport leases, its row in the console's list."""
        self.metrics = GatewayMetrics({bot.name: bot.platform for bot in config.bots},
                                      agents={bot.name: bot.agent for bot in config.bots})
        """This gateway's own series (tests run several gateways in one process)."""

    async def __aenter__(self) -> Gateway:
        try:
            await self.start()
        except BaseException:
            await self.abort()
            raise
        return self

    async def __aexit__(self, *_: object) -> None:
        await self.stop()

    @property
    def url(self) -> str:
        return f"http://{self.config.server.host}:{self.port}"

    def _hooks(self) -> list[Hook]:
        """Each webhook of the config with its secret, which no log line may then carry."""
        hooks = []
        for index, spec in enumerate(self.config.hooks):
            secret = resolve_secret(spec.secret, self._secrets, field=f"hooks[{index}].secret")
            self.redactor.add(secret.get_secret_value())
            if (problem := hook_secret_problem(secret.get_secret_value())) is not None:
                raise ConfigError(f"hooks[{index}].secret: {reference_name(spec.secret)} {problem}")
            hooks.append(Hook(spec=spec, secret=secret))
        return hooks

    async def start(self) -> None:
        """Build the whole object graph here, in order (long on purpose: the wiring is read in one place)."""
        self.redactor.install()
        self._stack.callback(self.redactor.uninstall)
        for _field, variable in capability_secrets(self.config):  # the keys runs hand to capabilities
            if value := self._secrets.get(variable):
                self.redactor.add(value)
        tracing = build_tracing(self.settings)
        self._stack.push_async_callback(tracing.shutdown)
        db = self.db = Database(self.settings.database_url)
        self._stack.push_async_callback(db.close)
        if not self._migrate:
            await db.create_all()
        elif not await is_current(db):
            await _upgrade(db)
        cache = _cache(self.settings.redis_url)
        self._stack.push_async_callback(cache.close)
        if self.settings.redis_url is None:
            log.info("REDIS_URL is not set: rate limits and leases live in this process; run one replica only")
        bindings = BindingStore(db)
        await bindings.apply(self.config)
        context = AdapterContext(secrets=self._secrets, redactor=self.redactor, bindings=bindings,
                                 public_url=self.config.server.public_url, poll_timeout=self._tuning.poll_timeout,
                                 api_trouble=self.metrics.api_trouble)
        for index, bot in enumerate(self.config.bots):
            self.adapters[bot.name] = await build_adapter(index, bot, context)
        inbox = Inbox(db)
        directories = {name: adapter.directory for name, adapter in self.adapters.items()}
        files = {name: adapter for name, adapter in self.adapters.items() if isinstance(adapter, PostsFiles)}
        for value in mcp_secret_values(self.config.mcp_servers, self._secrets):
            self.redactor.add(value)
        deployment = Deployment(db=db, config=self.config, settings=self.settings, secrets=self._secrets,
                                directories=directories, resolver=self._tuning.resolver, redact=self.redactor.add)
        capabilities = self.registry.bind(deployment, self.registry.used_by(self.config))
        personal = self.registry.personal_stores(deployment)  # a store resolving a key registers it for redaction here
        turns = RunningTurns()
        control = TurnControl(db=db, adapters=self.adapters, bindings=bindings, turns=turns, commands=words())
        runtime = Runtime(models=self._models, db=db, capabilities=capabilities,
                          instrumentation=tracing.instrumentation,
                          mcp=McpServers.of(self.config.mcp_servers, self._secrets, resolver=self._tuning.resolver),
                          chats=Chats(directories=directories, files=files, file_claim=self._tuning.file_claim,
                                      control=control))
        conversations = Conversations(db)
        questions = QuestionFlow(DelegateQuestions(db), asked=capabilities.asked)
        approvals = Approvals(db)
        flow = ApprovalFlow(approvals=approvals, runtime=runtime, adapters=self.adapters, waits=[questions],
                            metrics=self.metrics)
        typing = TypingShown()
        router = Router(adapters=self.adapters, bindings=bindings, conversations=conversations,
                        runtime=runtime, cache=cache, inbox=inbox, approval_flow=flow, questions=questions,
                        commands=DirectCommands(identities=Identities(db, stores=personal), stores=personal,
                                                reminders=Reminders(db)),
                        db=db, capabilities=capabilities, metrics=self.metrics, typing=typing, control=control)
        tuning = self._tuning
        self.worker = Worker(inbox, router.handle, give_up=router.give_up, concurrency=tuning.worker_concurrency,
                             lease=tuning.worker_lease, idle_poll=tuning.idle_poll, tracer=tracing.tracer,
                             prepare=router.prepare, turns=turns)
        intake = Intake(inbox, self.adapters, on_accepted=self.worker.wake, answered_in=conversations.answered_in,
                        metrics=self.metrics, waits=self.worker.busy, typing=typing, at_once=at_once_words())

        def signed_in() -> dict[str, bool]:
            return {name: adapter.identity is not None for name, adapter in self.adapters.items()}

        async def readiness() -> Readiness:
            """The database decides, and whether any bot is signed in; Redis not answering degrades this replica
            (the in-process fallback serves) without taking it out. Each bot is reported by whether it is connected."""
            checks = {"database": await _answers(_database_ok(db))}
            degraded: dict[str, str] = {}
            if self.settings.redis_url is not None:
                checks["cache"] = await _answers(cache.ping())
                if not checks["cache"]:
                    degraded["redis"] = REDIS_DOWN
            answer = Readiness(checks=checks, degraded=degraded, bots=signed_in())
            self.metrics.degraded({"redis": "redis" in degraded})
            return answer

        async def scrape() -> bytes:
            await readiness()  # `gateway_degraded` as of this scrape
            return self.metrics.render(await _backlog(inbox, approvals), signed_in())

        console = self.console = await self._console(
            db=db, cache=cache, readiness=readiness, bindings=bindings, approvals=approvals, inbox=inbox,
            worker=self.worker) if self.config.console.enabled else None
        hooks = Hooks(self._hooks(), adapters=self.adapters, inbox=inbox, metrics=self.metrics,
                      on_accepted=self.worker.wake)
        http = build_http_app(intake=intake, adapters=self.adapters, readiness=readiness, registry=self.registry,
                              metrics=scrape, console=console, hooks=hooks)
        await self._serve_http(http)
        self._essential.append(self._spawn(self.worker.run()))
        first = tuning.first_sweep
        self._spawn(_every(tuning.expiry_interval, flow.expire_due, "expiring approvals", first=first,
                           until_due=partial(_seconds_until, approvals.next_expiry), changed=approvals.added),
                    name="sweep: approvals")
        self._spawn(_every(3600, lambda: inbox.prune(older_than=INBOX_RETENTION), "pruning the inbox", first=first),
                    name="sweep: inbox")
        if self.config.schedules or capabilities.fires_later:  # elsewhere nothing can fall due: no tick, no query
            scheduler = Scheduler(db=db, adapters=self.adapters, schedules=self.config.schedules,
                                  metrics=self.metrics, on_fired=self.worker.wake, late_after=tuning.firing_late_after)
            await scheduler.start()
            self._spawn(_every(tuning.schedule_tick, scheduler.fire_due, "firing schedules and reminders",
                               until_due=scheduler.seconds_until_due), name="sweep: schedules")
        outbox = OutboxSweep(db, files, claim=tuning.file_claim)
        self._spawn(_every(tuning.file_claim.total_seconds(), outbox.deliver_expired, "posting files left mid-upload",
                           first=first, until_due=partial(_seconds_until, outbox.next_expiry)), name="sweep: outbox")
        self._spawn(_every(3600, outbox.prune, "pruning the outbox", first=first), name="sweep: outbox rows")
        owner = self.replica_id
        for adapter in self.adapters.values():
            supervisor = Supervisor(adapter, intake.for_bot(adapter.bot_id), owner=owner,
                                    cache=cache if self.settings.redis_url is not None else None,
                                    lease_ttl=tuning.transport_lease_ttl, first_delay=tuning.transport_first_delay,
                                    metrics=self.metrics, menu=menu())
            self._spawn(supervisor.run())
        for adapter in self.adapters.values():
            if isinstance(adapter, Closable):
                self._stack.push_async_callback(adapter.close)

    async def _console(self, *, db: Database, cache: LocalCache | FallbackCache, readiness: ReadinessCheck,
                       bindings: BindingStore, approvals: Approvals, inbox: Inbox, worker: Worker) -> Mount:
        """The operator console, with this replica's heartbeat for its replica list. Operators whose password hash
        is not set stop the start (`Operators.of`): nobody signs in with a hash that is not there."""
        from gateway.server.console.app import ConsoleParts, build_console
        from gateway.server.console.operators import Operators
        from gateway.server.console.replicas import BEAT, Replicas

        operators = Operators.of(self.config.console, self._secrets.get)
        replicas = Replicas(db, replica_id=self.replica_id, holding=self.metrics.holding)
        await replicas.beat()  # listed from the first page on, not after the first interval
        self._spawn(_every(BEAT, replicas.beat, "writing this replica's heartbeat", until_due=replicas.due,
                           changed=self.metrics.holding_changed), name="sweep: replica heartbeat")

        async def queue(decision: OperatorDecision, bot_name: str, conversation_key: str) -> bool:
            """A console decision into the inbox of the card's conversation, as a click goes; this replica's worker
            is woken (another's claims it at its next poll)."""
            accepted = await inbox.accept(logical_id=decision.logical_id, bot_name=bot_name,
                                          conversation_key=conversation_key, payload=decision.payload())
            worker.wake()
            return accepted

        return build_console(ConsoleParts(
            config=self.config, db=db, cache=cache, operators=operators, registry=self.registry,
            describe=self.registry.describe, readiness=readiness, backlog=inbox.backlog, approvals=approvals,
            queue=queue, bindings=bindings, replicas=replicas))

    async def stop(self) -> None:
        """Finish running turns within the grace period; queued messages stay in the inbox."""
        if self.worker is not None:
            await self.worker.drain(self._tuning.shutdown_grace)
        await self.abort()

    async def abort(self) -> None:
        """Stop at once, as a crash would: leases are left to expire and be retried elsewhere."""
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self._tasks.clear()
        self._essential.clear()
        await self._stack.aclose()

    async def wait(self) -> None:
        """Block until a component stops on its own (which only happens on a fatal error)."""
        await asyncio.wait(self._essential, return_when=asyncio.FIRST_COMPLETED)

    async def _serve_http(self, app: Starlette) -> None:
        server_spec = self.config.server
        try:
            sock = socket.create_server((server_spec.host, server_spec.port), reuse_port=False)
        except OSError as exc:
            raise StartupError(f"server: cannot listen on {server_spec.host}:{server_spec.port}: "
                               f"{(exc.strerror or str(exc)).lower()} — stop the process using it, or set "
                               "server.port (or server.host) in gateway.yaml") from exc
        self.port = sock.getsockname()[1]
        server = _EmbeddedServer(uvicorn.Config(app, log_config=None, access_log=False, lifespan="off", ws="none"))
        self._essential.append(self._spawn(server.serve(sockets=[sock]), name="server: http"))
        self._stack.push_async_callback(_close_listeners, server, sock)
        log.info("HTTP server listening on %s", self.url)

    def _spawn(self, work: Coroutine[Any, Any, None], *, name: str | None = None) -> asyncio.Task[None]:
        """`name`: what the task is, for a profile or a test telling sweeps from turns."""
        task = asyncio.create_task(work, name=name)
        self._tasks.append(task)
        return task


class _EmbeddedServer(uvicorn.Server):
    """Leaves signal handling to `gateway serve`, which shuts the whole process down in order."""

    @contextlib.contextmanager
    def capture_signals(self) -> Generator[None, None, None]:
        yield

    async def main_loop(self) -> None:
        """uvicorn wakes ten times a second to see whether it should exit and once a second to refresh its `Date`
        header; this server is stopped by cancelling its task, so it wakes once a second, for the header."""
        while True:
            if await self.on_tick(0):  # tick 0 refreshes the header
                return
            await asyncio.sleep(1.0)


async def _close_listeners(server: uvicorn.Server, sock: socket.socket) -> None:
    """Close uvicorn's listener through asyncio, not just the raw socket.

    A cancelled `serve()` leaves its asyncio server open; closing only the socket would leave the file
    descriptor registered with the event loop, and the next socket given that number never reads.
    """
    for listener in server.servers:
        listener.close()
        await listener.wait_closed()
    sock.close()


def _cache(redis_url: str | None) -> LocalCache | FallbackCache:
    """Redis's client (~7 MB) loads only for a gateway that has a `REDIS_URL`."""
    if redis_url is None:
        return LocalCache()
    from storage.redis_cache import build_redis_cache
    return build_redis_cache(redis_url)


async def _upgrade(db: Database) -> None:
    """Alembic loads only when there is a migration to run."""
    from storage.migrate import upgrade
    await upgrade(db)


async def _every(interval: float, job: Callable[[], Awaitable[object]], what: str, *, first: float = SOONEST,
                 until_due: Callable[[], Awaitable[float | None]] | None = None,
                 changed: asyncio.Event | None = None) -> None:
    """Run `job` every `interval` seconds, or as soon as `until_due` says work has fallen due (an approval's
    expiry takes effect at its time, not at the next sweep). `until_due` is asked again when `changed` is set (this
    process added work); work another replica added is its own sweep's, and this one's after `interval` at most.
    `first`: seconds before the first look."""
    pause = first
    while True:
        await asyncio.sleep(pause)  # then SOONEST: a due item the job cannot close is retried, never in a busy loop
        pause = SOONEST
        await _until_due(interval - SOONEST, until_due, changed or asyncio.Event())
        try:
            await job()
        except Exception:  # a failed sweep is retried at the next interval
            log.exception("%s failed", what)


async def _until_due(interval: float, until_due: Callable[[], Awaitable[float | None]] | None,
                     changed: asyncio.Event) -> None:
    """Sleep `interval`, or until `until_due` says work falls due; asked again whenever `changed` is set."""
    deadline = time.monotonic() + interval
    while (left := deadline - time.monotonic()) > 0:
        changed.clear()  # before asking: work added while the answer is on its way sets it again
        due = await _quietly(until_due) if until_due is not None else None
        if due is not None and due <= 0:
            return
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(min(left, due) if due is not None else left):
                await changed.wait()


async def _quietly(until_due: Callable[[], Awaitable[float | None]]) -> float | None:
    try:
        return await until_due()
    except Exception:  # the job itself reports what is down; until then the plain interval holds
        return None


async def _seconds_until(when: Callable[[], Awaitable[datetime | None]]) -> float | None:
    moment = await when()
    return None if moment is None else (moment - utcnow()).total_seconds()


REDIS_DOWN = ("Redis does not answer: rate limits, notices and transport leases are this replica's own until it does "
              "(README: When Redis or PostgreSQL is down)")
READINESS_TIMEOUT = 2.0
"""Seconds one readiness check may take; a dependency that does not answer by then counts as down."""


async def _answers(check: Awaitable[bool]) -> bool:
    try:
        async with asyncio.timeout(READINESS_TIMEOUT):
            return await check
    except Exception:  # readiness reports the failure; the reason is in the dependency's own log lines
        return False


async def _backlog(inbox: Inbox, approvals: Approvals) -> Backlog:
    depth, oldest = await inbox.backlog()
    return Backlog(inbox_depth=depth, oldest_age=oldest, approvals=await approvals.by_status())


async def _database_ok(db: Database) -> bool:
    await db.run(lambda connection: connection.execute(text("SELECT 1")), single=True)
    return True

