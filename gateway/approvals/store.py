"""Approval rows and parked runs: decided by compare-and-swap, resumed exactly once."""

from __future__ import annotations

import asyncio
import hashlib
import json
import secrets
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from sqlalchemy import ColumnElement, Connection, Row, and_, bindparam, exists, func, insert, or_, select, update

from adapters.base import ApprovalCard, CardOption, Speaker, Verb
from gateway.agents.bindings import is_listed
from gateway.config.schema import ApprovalPolicy
from storage.db import Database, insert_for
from storage.tables import APPROVAL_VOTES, APPROVALS, PARKED_RUNS, utcnow

Verdict = Literal["approved", "denied", "expired"]
Status = Literal["pending", "approved", "denied", "expired"]
STATUSES: tuple[Status, ...] = ("pending", "approved", "denied", "expired")
ARGUMENTS_SHOWN = 1500
OFFERED_BEFORE: tuple[CardOption, ...] = ("once", "deny")
"""What a card offered before cards had options: an approval parked then offers this."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Approval:
    id: str
    parked_run_id: int
    conversation_key: str
    tool_call_id: str
    tool_id: str
    tool_name: str
    args: dict[str, Any]
    args_hash: str
    requester_id: str
    requester_name: str
    policy: ApprovalPolicy
    status: Status
    decided_by: str | None
    decided_at: datetime | None
    expires_at: datetime
    card_message_id: str | None
    card_closed_at: datetime | None = None
    approved_by: tuple[str, ...] = ()
    """Who has approved so far (`vote`), in order; loaded by `get` and `decide`."""
    options: tuple[CardOption, ...] = OFFERED_BEFORE
    grant_until: datetime | None = None
    """Approved for this conversation: the same call runs there without a card until then."""
    reason: str | None = None
    reason_prompt_id: str | None = None
    reason_from: str | None = None
    reason_until: datetime | None = None

    @property
    def card(self) -> ApprovalCard:
        return ApprovalCard(approval_id=self.id, tool_name=self.tool_name, arguments=readable(self.args),
                            requester=self.requester_name, expires_at=self.expires_at,
                            needed=self.policy.required_approvals, approved_by=self.approved_by, options=self.options)

    def offers(self, verb: Verb) -> bool:
        """Whether this approval's card offers `verb`: a click the card never showed (a forged one) decides nothing."""
        return verb in {shown for shown, _label in self.card.buttons}


@dataclass(frozen=True, slots=True, kw_only=True)
class ParkedRun:
    id: int
    run_id: int
    conversation_id: int
    bot_name: str
    turn: dict[str, Any]
    state: str


@dataclass(frozen=True, slots=True, kw_only=True)
class NewCall:
    tool_call_id: str
    tool_id: str
    tool_name: str
    args: dict[str, Any]


class Approvals:
    def __init__(self, db: Database) -> None:
        self._db = db
        self.added = asyncio.Event()
        """Set when this process parks a run: its approvals' expiry may now fall due sooner than the sweep looked."""

    async def park(self, *, run_id: int, conversation_id: int, conversation_key: str, bot_name: str,
                   turn: Mapping[str, Any], state: str, calls: Sequence[NewCall], requester: Speaker,
                   policy: ApprovalPolicy, options: Sequence[CardOption] = OFFERED_BEFORE,
                   standing: bool = False) -> tuple[int, list[Approval]]:
        """Store the parked run and one approval per gated call, in one transaction; returns the parked run's id and
        the approvals. Each is pending, but with `standing` (the binding offers approval for the conversation) a
        call someone approved for this conversation, with the same tool and arguments, is stored approved already,
        naming who approved it so."""
        now = utcnow()
        expires_at = now + policy.expires_after

        def work(connection: Connection) -> tuple[int, list[Approval]]:
            parked_id: int = connection.execute(insert(PARKED_RUNS).values(
                run_id=run_id, conversation_id=conversation_id, bot_name=bot_name, turn=dict(turn), state=state,
                status="parked").returning(PARKED_RUNS.c.id)).scalar_one()
            granted = _granted(connection, conversation_key, calls) if standing else {}
            values: list[dict[str, Any]] = []
            for call in calls:
                digest = args_hash(call.args)
                grant = granted.get((call.tool_id, digest))
                values.append(dict(
                    id=secrets.token_urlsafe(12), parked_run_id=parked_id, conversation_key=conversation_key,
                    tool_call_id=call.tool_call_id, tool_id=call.tool_id, tool_name=call.tool_name, args=call.args,
                    args_hash=digest, requester_id=requester.platform_user_id, requester_name=named(requester),
                    policy=policy.model_dump(mode="json"), options=list(options), expires_at=expires_at,
                    status="pending" if grant is None else "approved",
                    decided_by=None if grant is None else f"{grant}, for this conversation",
                    decided_at=None if grant is None else now))
            if not values:
                return parked_id, []
            rows = connection.execute(insert(APPROVALS).returning(APPROVALS, sort_by_parameter_order=True), values)
            return parked_id, [_approval(row) for row in rows]
        parked = await self._db.run(work)
        self.added.set()
        return parked

    async def attach_card(self, approval_id: str, conversation_key: str, message_id: str) -> None:
        """The message that shows this approval's card. A message shows one card: an earlier approval whose card
        it was (a retried turn's, whose placeholder took the new card) no longer has one."""
        def work(connection: Connection) -> None:
            connection.execute(update(APPROVALS).where(APPROVALS.c.conversation_key == conversation_key,
                                                       APPROVALS.c.card_message_id == message_id)
                               .values(card_message_id=None))
            connection.execute(update(APPROVALS).where(APPROVALS.c.id == approval_id)
                               .values(card_message_id=message_id))
        await self._db.run(work)

    async def mark_card_closed(self, approval_id: str) -> None:
        await self._set_card_closed(approval_id, utcnow())

    async def reopen_card(self, approval_id: str) -> None:
        """Its card still offers buttons (the edit that closes it failed): the next click closes it."""
        await self._set_card_closed(approval_id, None)

    async def _set_card_closed(self, approval_id: str, at: datetime | None) -> None:
        def work(connection: Connection) -> None:
            connection.execute(update(APPROVALS).where(APPROVALS.c.id == approval_id).values(card_closed_at=at))
        await self._db.run(work, single=True)

    async def get(self, approval_id: str) -> Approval | None:
        def work(connection: Connection) -> Approval | None:
            row = connection.execute(select(APPROVALS).where(APPROVALS.c.id == approval_id)).first()
            return _approval(row, _voters(connection, approval_id)) if row is not None else None
        return await self._db.run(work)

    async def vote(self, approval_id: str, voter: Speaker) -> tuple[str, ...]:
        """Record one approver's yes (once per person); returns every distinct approver so far, in order."""
        def work(connection: Connection) -> tuple[str, ...]:
            upsert = insert_for(connection.dialect.name)
            connection.execute(upsert(APPROVAL_VOTES).values(
                approval_id=approval_id, voter_id=voter.platform_user_id, voter_name=named(voter),
                created_at=utcnow()).on_conflict_do_nothing(index_elements=["approval_id", "voter_id"]))
            return _voters(connection, approval_id)
        return await self._db.run(work)

    async def decide(self, approval_id: str, verdict: Verdict, decided_by: str | None, *,
                     grant_until: datetime | None = None, reason: str | None = None,
                     closing: bool = True) -> Approval | None:
        """Compare-and-swap from pending; returns the decided approval, or None when it was already decided.
        `grant_until`: approved for the conversation until then (the swap itself records it, so only the decision
        that wins makes one); `reason`: a denier's words. `closing`: the winner closes the card, so the swap marks
        it closed and a losing click does not edit it too (`reopen_card` when the winner's edit fails)."""
        def work(connection: Connection) -> Approval | None:
            now = utcnow()
            still_open = APPROVALS.c.expires_at > now if verdict != "expired" else APPROVALS.c.expires_at <= now
            standing = {"scope": "conversation", "grant_until": grant_until} if grant_until is not None else {}
            closed = {"card_closed_at": now} if closing else {}
            row = connection.execute(
                update(APPROVALS).where(APPROVALS.c.id == approval_id, APPROVALS.c.status == "pending", still_open)
                .values(status=verdict, decided_by=decided_by, decided_at=now, reason=reason, **standing, **closed)
                .returning(APPROVALS)).one_or_none()
            return _approval(row, _voters(connection, approval_id)) if row is not None else None
        return await self._db.run(work)

    async def pending_in(self, conversation_key: str) -> list[Approval]:
        """The conversation's approvals still pending and not yet past their expiry, oldest first."""
        def work(connection: Connection) -> list[Approval]:
            rows = connection.execute(select(APPROVALS).where(
                APPROVALS.c.conversation_key == conversation_key, APPROVALS.c.status == "pending",
                APPROVALS.c.expires_at > utcnow()).order_by(APPROVALS.c.parked_run_id, APPROVALS.c.id))
            return [_approval(row) for row in rows]
        return await self._db.run(work, single=True)

    async def await_reason(self, approval_id: str, *, prompt_id: str, person_id: str, until: datetime) -> None:
        """The prompt whose reply, by `person_id` before `until`, gives the reason for denying this pending call."""
        def work(connection: Connection) -> None:
            connection.execute(update(APPROVALS).where(APPROVALS.c.id == approval_id, APPROVALS.c.status == "pending")
                               .values(reason_prompt_id=prompt_id, reason_from=person_id, reason_until=until))
        await self._db.run(work, single=True)

    async def prompted(self, conversation_key: str, prompt_id: str) -> Approval | None:
        """The approval whose reason the bot's prompt `prompt_id` in this conversation asks for, decided or not."""
        def work(connection: Connection) -> Approval | None:
            row = connection.execute(select(APPROVALS).where(
                APPROVALS.c.conversation_key == conversation_key,
                APPROVALS.c.reason_prompt_id == prompt_id).limit(1)).one_or_none()
            return _approval(row, _voters(connection, row.id)) if row is not None else None
        return await self._db.run(work)

    async def by_status(self) -> dict[str, int]:
        """How many approvals are in each status (pending, approved, denied, expired)."""
        def work(connection: Connection) -> dict[str, int]:
            rows = connection.execute(select(APPROVALS.c.status, func.count()).group_by(APPROVALS.c.status))
            return {status: int(count) for status, count in rows.all()}
        return await self._db.run(work, single=True)

    async def next_expiry(self) -> datetime | None:
        """When the earliest pending approval expires; None when nothing is pending."""
        def work(connection: Connection) -> datetime | None:
            return connection.scalar(select(func.min(APPROVALS.c.expires_at)).where(APPROVALS.c.status == "pending"))
        return await self._db.run(work, single=True)

    async def due_for_expiry(self, *, limit: int = 50) -> list[str]:
        def work(connection: Connection) -> list[str]:
            rows = connection.execute(select(APPROVALS.c.id).where(
                APPROVALS.c.status == "pending", APPROVALS.c.expires_at <= utcnow()).limit(limit))
            return list(rows.scalars())
        return await self._db.run(work, single=True)

    async def claim_resume(self, parked_run_id: int, *, reclaim: bool = False,
                           unless: Sequence[ColumnElement[bool]] = ()) -> ParkedRun | None:
        """Exactly one caller wins, and only once no approval of the run is pending and none of `unless` holds (what
        else it waits on: `Wait.still_open`), all in one statement.

        `reclaim` also takes a run left `resuming` by a worker that crashed mid-resume (its click is retried).
        """
        states = ("parked", "resuming") if reclaim else ("parked",)

        def work(connection: Connection) -> ParkedRun | None:
            pending = exists().where(APPROVALS.c.parked_run_id == parked_run_id, APPROVALS.c.status == "pending")
            row = connection.execute(
                update(PARKED_RUNS).where(and_(PARKED_RUNS.c.id == parked_run_id, PARKED_RUNS.c.status.in_(states),
                                               ~pending, *(~condition for condition in unless)))
                .values(status="resuming").returning(PARKED_RUNS)).one_or_none()
            return _parked(row) if row is not None else None
        return await self._db.run(work)

    async def parked(self, parked_run_id: int) -> ParkedRun:
        def work(connection: Connection) -> ParkedRun:
            row = connection.execute(select(PARKED_RUNS).where(PARKED_RUNS.c.id == parked_run_id)).first()
            if row is None:
                raise LookupError(f"no parked run {parked_run_id}")
            return _parked(row)
        return await self._db.run(work, single=True)

    async def of_run(self, parked_run_id: int) -> list[Approval]:
        def work(connection: Connection) -> list[Approval]:
            rows = connection.execute(select(APPROVALS).where(APPROVALS.c.parked_run_id == parked_run_id))
            return [_approval(row) for row in rows]
        return await self._db.run(work, single=True)

    async def commit(self, writes: Callable[[Connection], None]) -> None:
        """A resume's last writes (`mark_resumed` among them), by themselves: where no inbox item's completion
        commits them (the expiry sweep's resumes)."""
        await self._db.run(writes)

    async def recent(self, *, limit: int = 50) -> list[Approval]:
        """Pending first, then the latest decisions: the audit view."""
        def work(connection: Connection) -> list[Approval]:
            rows = connection.execute(select(APPROVALS).order_by(
                (APPROVALS.c.status != "pending"), APPROVALS.c.created_at.desc()).limit(limit))
            return [_approval(row) for row in rows]
        return await self._db.run(work, single=True)


_MARK_RESUMED = (update(PARKED_RUNS).where(PARKED_RUNS.c.id == bindparam("parked_run_id"))
                 .values(status="resumed", resumed_at=bindparam("now")))


def mark_resumed(connection: Connection, parked_run_id: int) -> None:
    """The parked run went on, in the caller's transaction (its resume's end)."""
    connection.execute(_MARK_RESUMED, {"parked_run_id": parked_run_id, "now": utcnow()})


def args_hash(args: Mapping[str, Any]) -> str:
    return hashlib.sha256(json.dumps(args, sort_keys=True, default=str).encode()).hexdigest()


def readable(args: Mapping[str, Any]) -> str:
    text = json.dumps(args, indent=2, ensure_ascii=False, default=str)
    return text if len(text) <= ARGUMENTS_SHOWN else text[:ARGUMENTS_SHOWN - 1] + "…"


def named(speaker: Speaker) -> str:
    """How a person is named on cards and in click answers, alike on every platform: "Alice Smith (@alice)";
    "@alice" where the platform knows only the handle; "Alice Smith" where there is no handle."""
    if not speaker.handle:
        return speaker.display_name
    if speaker.display_name in ("", speaker.handle):
        return f"@{speaker.handle}"
    return f"{speaker.display_name} (@{speaker.handle})"


def refusal(approval: Approval, clicker: Speaker) -> str | None:
    """Why this person may not decide this call, or None when they may."""
    policy = approval.policy
    if policy.who == "room":
        return None
    if policy.who == "requester":
        if clicker.platform_user_id == approval.requester_id:
            return None
        return f"Only {approval.requester_name}, who asked, can decide this."
    if is_listed(clicker, policy.approvers):
        return None
    return "You are not one of the approvers for this bot."


def console_refusal(approval: Approval | None) -> str | None:
    """Why a console operator may not decide this call, or None when they may: only where the binding says so
    (`approvals.console`), and only one-approver calls (a two-person rule is the approvers' own, in the chat)."""
    if approval is None:
        return "There is no such approval."
    if not approval.policy.console:
        return "This bot's binding does not let the console decide (binding.approvals.console)."
    if approval.policy.required_approvals > 1:
        return "A two-person rule is decided in the chat, by the approvers."
    return None


def _granted(connection: Connection, conversation_key: str,
             calls: Sequence[NewCall]) -> dict[tuple[str, str], str]:
    """(tool id, arguments' hash) → who approved it for this conversation, for each call such an approval, still in
    force, covers."""
    wanted = [and_(APPROVALS.c.tool_id == tool_id, APPROVALS.c.args_hash == digest)
              for tool_id, digest in {(call.tool_id, args_hash(call.args)) for call in calls}]
    if not wanted:
        return {}
    rows = connection.execute(
        select(APPROVALS.c.tool_id, APPROVALS.c.args_hash, APPROVALS.c.decided_by)
        .where(APPROVALS.c.conversation_key == conversation_key, APPROVALS.c.scope == "conversation",
               APPROVALS.c.status == "approved", APPROVALS.c.grant_until > utcnow(),
               or_(*wanted))
        .order_by(APPROVALS.c.decided_at))
    return {(tool_id, digest): decided_by or "someone" for tool_id, digest, decided_by in rows.all()}


def _parked(row: Row[Any]) -> ParkedRun:
    return ParkedRun(id=row.id, run_id=row.run_id, conversation_id=row.conversation_id, bot_name=row.bot_name,
                     turn=row.turn, state=row.state)


def _voters(connection: Connection, approval_id: str) -> tuple[str, ...]:
    rows = connection.execute(select(APPROVAL_VOTES.c.voter_name).where(APPROVAL_VOTES.c.approval_id == approval_id)
                              .order_by(APPROVAL_VOTES.c.id))
    return tuple(rows.scalars())


def _approval(row: Row[Any], approved_by: tuple[str, ...] = ()) -> Approval:
    return Approval(id=row.id, parked_run_id=row.parked_run_id, conversation_key=row.conversation_key,
                    tool_call_id=row.tool_call_id, tool_id=row.tool_id, tool_name=row.tool_name, args=row.args,
                    args_hash=row.args_hash, requester_id=row.requester_id, requester_name=row.requester_name,
                    policy=ApprovalPolicy.model_validate(row.policy), status=_status(row.status),
                    decided_by=row.decided_by, decided_at=row.decided_at, expires_at=row.expires_at,
                    card_message_id=row.card_message_id, card_closed_at=row.card_closed_at, approved_by=approved_by,
                    options=_options(row.options), grant_until=row.grant_until, reason=row.reason,
                    reason_prompt_id=row.reason_prompt_id, reason_from=row.reason_from, reason_until=row.reason_until)


def _options(stored: list[Any] | None) -> tuple[CardOption, ...]:
    """The stored options as literals, in their order; a row from before options offers what cards did then."""
    if stored is None:
        return OFFERED_BEFORE
    known: tuple[CardOption, ...] = ("once", "conversation", "deny")
    return tuple(option for option in known if option in stored)


def _status(value: str) -> Status:
    """A stored status as its literal; the column holds only what `Approvals` writes, so anything else is corrupt."""
    for status in STATUSES:
        if value == status:
            return status
    raise ValueError(f"unknown approval status {value!r}")
