"""Taking charge of a running turn: stop it from any replica, and hand it the messages sent while it runs.

A stop is written on the running turn's inbox item, so it holds on every replica and without Redis; the replica
running the turn reads it with its heartbeat (`Worker`, every half second) and cancels the model request there
(`TurnSignal.asking`). A message sent mid-turn under `while_busy: steer` is taken by the running turn at its next
model request: marked done as taken by that turn's item, in one transaction with its words stored in the
conversation, so it is answered once, in that turn's reply. None of this runs for a turn nobody stops or steers.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from sqlalchemy import Connection, bindparam, or_, select, update

from adapters.base import Inbound, MalformedPayload, Speaker
from adapters.protocols import Parser
from gateway.agents.bindings import Binding, BindingStore, UnknownBot, is_listed
from gateway.pipeline.conversations import start_turn
from gateway.pipeline.inbox import INBOX
from gateway.pipeline.intake import command_word
from gateway.pipeline.worker import RunningTurns
from storage.db import Database
from storage.tables import utcnow

log = logging.getLogger(__name__)

NOTHING_RUNNING = "Nothing is running here to stop."
STOPPING = "Stopping the answer."
NOT_YOURS = "Only the person who asked, or this bot's approvers, can stop this answer."

StopVerdict = Literal["stopping", "nothing", "refused"]


@dataclass(frozen=True, slots=True, kw_only=True)
class StopAnswer:
    verdict: StopVerdict
    text: str
    """What the person who asked to stop is told."""


def is_command(text: str, commands: frozenset[str]) -> bool:
    """A word the gateway answers itself (the command step's rule: the first word, with or without a leading `/`):
    never handed to a running turn as a steered message."""
    return command_word(text)[0] in commands


def may_stop(binding: Binding, asked: Inbound, stopper: Speaker) -> bool:
    """The person who asked; in a group also whoever may decide its approvals (`approvals.who`: the listed
    approvers, or anyone in the room)."""
    if stopper.platform_user_id == asked.speaker.platform_user_id and stopper.platform == asked.speaker.platform:
        return True
    if asked.address.is_direct:
        return False
    policy = binding.spec.approvals
    return policy.who == "room" or is_listed(stopper, policy.approvers)


def steerable(binding: Binding, inbound: Inbound, commands: frozenset[str]) -> bool:
    """A message a running turn may take: one its own turn would hand to the model (the allowlist admits its
    speaker, it is no command, it carries no files to fetch)."""
    spec = binding.spec
    if spec.access == "allowlist" and not is_listed(inbound.speaker, spec.allow):
        return False
    return not inbound.attachments and not is_command(inbound.text, commands)


def named(speaker: Speaker) -> str:
    """"Alice Smith (@alice)", as cards name people."""
    if not speaker.handle or speaker.display_name in ("", speaker.handle):
        return f"@{speaker.handle}" if speaker.handle else speaker.display_name
    return f"{speaker.display_name} (@{speaker.handle})"


class TurnControl:
    """The seam the `stop` command and the Stop button call, and what a running turn takes messages through."""

    def __init__(self, *, db: Database, adapters: Mapping[str, Parser], bindings: BindingStore,
                 turns: RunningTurns, commands: frozenset[str]) -> None:
        """`commands`: the words the command step answers, which a running turn never takes."""
        self._db = db
        self._commands = commands
        self._adapters = adapters
        self._bindings = bindings
        self.turns = turns
        """The signals of the turns this process runs (`Worker`'s, the runtime's)."""

    async def stop(self, conversation_key: str, requested_by: Speaker) -> StopAnswer:
        """Ask the conversation's running turn to stop, wherever it runs; who may is checked against the person who
        asked it and the binding's approvers. A stop asked twice is one stop."""
        def work(connection: Connection) -> tuple[StopVerdict, int | None]:
            row = connection.execute(_RUNNING, {"key": conversation_key, "now": utcnow()}).first()
            if row is None:
                return "nothing", None
            asked = self._inbound(row.bot_name, row.payload)
            binding = self._binding(connection, row.bot_name)
            if asked is None or binding is None:
                return "nothing", None
            if not may_stop(binding, asked, requested_by):
                return "refused", None
            connection.execute(_REQUEST_STOP, {"item": row.id, "by": named(requested_by)})
            return "stopping", int(row.id)
        verdict, item_id = await self._db.run(work)
        if item_id is not None:
            signal = self.turns.get(item_id)
            if signal is not None:  # it runs here: no need to wait for the heartbeat
                signal.stop(named(requested_by))
            log.info("a stop was asked for inbox item %d", item_id)
        text = {"stopping": STOPPING, "nothing": NOTHING_RUNNING, "refused": NOT_YOURS}[verdict]
        return StopAnswer(verdict=verdict, text=text)

    async def take_waiting(self, item_id: int, *, owner: str, binding: Binding, known: set[int],
                           again_only: bool = False) -> list[Inbound]:
        """The messages of the running item's conversation sent after it, in order, up to the first it may not take
        (`steerable`): each marked done as taken by `item_id` and its words stored in the conversation, in one
        transaction, while `owner` still holds the running item's lease. A retried turn takes again what its
        earlier attempt took (`again_only`: that and nothing new); `known`: what this attempt took already (the new
        ones are added to it)."""
        def work(connection: Connection) -> list[tuple[int, Inbound]]:
            running = connection.execute(_HOLDING, {"item": item_id, "owner": owner}).first()
            if running is None:
                return []
            taken: list[tuple[int, Inbound]] = []
            for row in connection.execute(_WAITING, {"key": running.conversation_key, "item": item_id}).all():
                inbound = self._inbound(row.bot_name, row.payload)
                if inbound is None or not steerable(binding, inbound, self._commands) \
                        or (again_only and row.status == "pending"):
                    break
                if row.id in known:
                    continue
                if row.status == "pending":
                    connection.execute(_TAKE, {"taken": row.id, "item": item_id, "now": utcnow()})
                start_turn(connection, inbound, retried=True, limit=0, name_speakers=False)
                taken.append((int(row.id), inbound))
            return taken
        taken = await self._db.run(work)
        known.update(taken_id for taken_id, _inbound in taken)
        if taken:
            log.info("inbox item %d took %d message(s) sent while it ran", item_id, len(taken))
        return [inbound for _taken_id, inbound in taken]

    async def interrupts(self, item_id: int, *, binding: Binding) -> bool:
        """Whether a message waiting behind the running item may interrupt it (`while_busy: interrupt`): one its own
        turn would answer (`steerable`)."""
        def work(connection: Connection) -> bool:
            key = connection.execute(select(INBOX.c.conversation_key).where(INBOX.c.id == item_id)).scalar()
            if key is None:
                return False
            row = connection.execute(_WAITING, {"key": key, "item": item_id}).first()
            inbound = None if row is None or row.status != "pending" else self._inbound(row.bot_name, row.payload)
            return inbound is not None and steerable(binding, inbound, self._commands)
        return await self._db.run(work)

    def _inbound(self, bot_name: str, payload: Mapping[str, object]) -> Inbound | None:
        adapter = self._adapters.get(bot_name)
        try:
            event = adapter.parse(payload) if adapter is not None else None
        except MalformedPayload:
            return None
        return event if isinstance(event, Inbound) else None

    def _binding(self, connection: Connection, bot_name: str) -> Binding | None:
        try:
            return self._bindings.read(connection, bot_name)
        except UnknownBot:
            return None


_RUNNING = (select(INBOX.c.id, INBOX.c.bot_name, INBOX.c.payload)
            .where(INBOX.c.conversation_key == bindparam("key"), INBOX.c.status == "running",
                   INBOX.c.lease_until > bindparam("now"))
            .order_by(INBOX.c.id).limit(1))
_REQUEST_STOP = (update(INBOX).where(INBOX.c.id == bindparam("item"), INBOX.c.status == "running",
                                     INBOX.c.stop_requested_by.is_(None))
                 .values(stop_requested_by=bindparam("by")))
_HOLDING = (select(INBOX.c.conversation_key)
            .where(INBOX.c.id == bindparam("item"), INBOX.c.lease_owner == bindparam("owner"),
                   INBOX.c.status == "running")
            .with_for_update())
_WAITING = (select(INBOX.c.id, INBOX.c.bot_name, INBOX.c.payload, INBOX.c.status)
            .where(INBOX.c.conversation_key == bindparam("key"), INBOX.c.id > bindparam("item"),
                   or_(INBOX.c.status == "pending", INBOX.c.taken_by == bindparam("item")))
            .order_by(INBOX.c.id))
_TAKE = (update(INBOX).where(INBOX.c.id == bindparam("taken"), INBOX.c.status == "pending")
         .values(status="done", taken_by=bindparam("item"), lease_owner=None, lease_until=None,
                 finished_at=bindparam("now")))
