"""The ORM classes, mapped onto the Core tables of `storage/tables.py`: for the tests, which read and write whole
rows, and Alembic's schema comparison. The product builds its statements on the tables themselves and never
imports this module (`tests/process/test_serving_imports_process.py`)."""

from __future__ import annotations

from datetime import datetime
from decimal import Decimal
from typing import Any

from sqlalchemy.orm import DeclarativeBase, Mapped

from storage.tables import (
    AGENT_VERSIONS,
    AGENTS,
    APPROVAL_VOTES,
    APPROVALS,
    BINDINGS,
    BOTS,
    CONSOLE_AUDIT,
    CONSOLE_SESSIONS,
    CONVERSATION_STATE,
    CONVERSATIONS,
    DELEGATE_QUESTIONS,
    FORMER_PERSONS,
    IDENTITIES,
    INBOX,
    KNOWLEDGE_CHUNKS,
    KNOWLEDGE_DOCUMENTS,
    LINK_CODES,
    MEMORY_NOTES,
    MESSAGES,
    OUTBOX_FILES,
    PARKED_RUNS,
    PERSONS,
    REMINDERS,
    REPLICAS,
    RUN_FEEDBACK,
    RUNS,
    SANDBOX_WORKSPACES,
    SCHEDULE_MARKS,
    Id,
    UTCDateTime,
    metadata,
    utcnow,
)

__all__ = ["Id", "UTCDateTime", "utcnow"]
"""Re-exported: the migrations name the column types here."""


class Base(DeclarativeBase):
    metadata = metadata


class AgentRow(Base):
    __table__ = AGENTS
    id: Mapped[int]
    name: Mapped[str]
    version: Mapped[int]
    spec: Mapped[dict[str, Any]]
    updated_at: Mapped[datetime]


class AgentVersionRow(Base):
    __table__ = AGENT_VERSIONS
    id: Mapped[int]
    agent_name: Mapped[str]
    version: Mapped[int]
    spec: Mapped[dict[str, Any]]
    pins: Mapped[dict[str, Any]]
    created_at: Mapped[datetime]


class BotRow(Base):
    __table__ = BOTS
    id: Mapped[int]
    name: Mapped[str]
    platform: Mapped[str]
    settings: Mapped[dict[str, Any]]
    webhook_secret: Mapped[str | None]
    updated_at: Mapped[datetime]


class BindingRow(Base):
    __table__ = BINDINGS
    id: Mapped[int]
    bot_name: Mapped[str]
    agent_name: Mapped[str]
    spec: Mapped[dict[str, Any]]
    updated_at: Mapped[datetime]


class PersonRow(Base):
    __table__ = PERSONS
    id: Mapped[int]
    display_name: Mapped[str]
    created_at: Mapped[datetime]


class FormerPersonRow(Base):
    __table__ = FORMER_PERSONS
    id: Mapped[int]
    person_id: Mapped[int]
    merged_at: Mapped[datetime]


class IdentityRow(Base):
    __table__ = IDENTITIES
    id: Mapped[int]
    platform: Mapped[str]
    workspace: Mapped[str]
    platform_user_id: Mapped[str]
    handle: Mapped[str | None]
    display_name: Mapped[str]
    is_bot: Mapped[bool]
    person_id: Mapped[int | None]
    failed_link_attempts: Mapped[int]
    link_locked_until: Mapped[datetime | None]
    updated_at: Mapped[datetime]


class ConversationRow(Base):
    __table__ = CONVERSATIONS
    id: Mapped[int]
    key: Mapped[str]
    bot_name: Mapped[str]
    platform: Mapped[str]
    channel_id: Mapped[str]
    thread_id: Mapped[str | None]
    is_direct: Mapped[bool]
    created_at: Mapped[datetime]
    history_from: Mapped[int | None]


class MessageRow(Base):
    __table__ = MESSAGES
    id: Mapped[int]
    conversation_id: Mapped[int]
    role: Mapped[str]
    identity_id: Mapped[int | None]
    speaker_name: Mapped[str]
    text: Mapped[str]
    platform_message_id: Mapped[str | None]
    run_id: Mapped[int | None]
    created_at: Mapped[datetime]


class RunRow(Base):
    __table__ = RUNS
    id: Mapped[int]
    conversation_id: Mapped[int]
    inbox_id: Mapped[int | None]
    bot_name: Mapped[str]
    agent_name: Mapped[str]
    agent_version: Mapped[int]
    model: Mapped[str]
    identity_id: Mapped[int | None]
    status: Mapped[str]
    requests: Mapped[int]
    input_tokens: Mapped[int]
    output_tokens: Mapped[int]
    cost_usd: Mapped[Decimal | None]
    error: Mapped[str | None]
    started_at: Mapped[datetime]
    finished_at: Mapped[datetime | None]
    first_shown_at: Mapped[datetime | None]
    steps: Mapped[list[Any] | None]


class RunFeedbackRow(Base):
    __table__ = RUN_FEEDBACK
    id: Mapped[int]
    run_id: Mapped[int]
    voter_id: Mapped[str]
    voter_name: Mapped[str]
    rating: Mapped[str]
    rated_at: Mapped[datetime]


class InboxRow(Base):
    __table__ = INBOX
    id: Mapped[int]
    logical_id: Mapped[str]
    bot_name: Mapped[str]
    conversation_key: Mapped[str]
    payload: Mapped[dict[str, Any]]
    status: Mapped[str]
    attempts: Mapped[int]
    failures: Mapped[int]
    lease_owner: Mapped[str | None]
    lease_until: Mapped[datetime | None]
    reply_message_id: Mapped[str | None]
    error: Mapped[str | None]
    created_at: Mapped[datetime]
    finished_at: Mapped[datetime | None]
    stop_requested_by: Mapped[str | None]
    taken_by: Mapped[int | None]


class ScheduleMarkRow(Base):
    __table__ = SCHEDULE_MARKS
    name: Mapped[str]
    cron: Mapped[str]
    timezone: Mapped[str]
    next_fire_at: Mapped[datetime]


class ReminderRow(Base):
    __table__ = REMINDERS
    id: Mapped[int]
    bot_name: Mapped[str]
    conversation_key: Mapped[str]
    address: Mapped[dict[str, Any]]
    speaker: Mapped[dict[str, Any]]
    owner_key: Mapped[str]
    mode: Mapped[str]
    text: Mapped[str]
    recurrence: Mapped[str | None]
    timezone: Mapped[str]
    next_fire_at: Mapped[datetime | None]
    status: Mapped[str]
    fired: Mapped[int]
    created_at: Mapped[datetime]


class ParkedRunRow(Base):
    __table__ = PARKED_RUNS
    id: Mapped[int]
    run_id: Mapped[int]
    conversation_id: Mapped[int]
    bot_name: Mapped[str]
    turn: Mapped[dict[str, Any]]
    state: Mapped[str]
    status: Mapped[str]
    created_at: Mapped[datetime]
    resumed_at: Mapped[datetime | None]


class ApprovalRow(Base):
    __table__ = APPROVALS
    id: Mapped[str]
    parked_run_id: Mapped[int]
    conversation_key: Mapped[str]
    tool_call_id: Mapped[str]
    tool_id: Mapped[str]
    tool_name: Mapped[str]
    args: Mapped[dict[str, Any]]
    args_hash: Mapped[str]
    requester_id: Mapped[str]
    requester_name: Mapped[str]
    policy: Mapped[dict[str, Any]]
    status: Mapped[str]
    decided_by: Mapped[str | None]
    decided_at: Mapped[datetime | None]
    expires_at: Mapped[datetime]
    card_message_id: Mapped[str | None]
    card_closed_at: Mapped[datetime | None]
    options: Mapped[list[Any] | None]
    scope: Mapped[str | None]
    grant_until: Mapped[datetime | None]
    reason: Mapped[str | None]
    reason_prompt_id: Mapped[str | None]
    reason_from: Mapped[str | None]
    reason_until: Mapped[datetime | None]
    created_at: Mapped[datetime]


class ApprovalVoteRow(Base):
    __table__ = APPROVAL_VOTES
    id: Mapped[int]
    approval_id: Mapped[str]
    voter_id: Mapped[str]
    voter_name: Mapped[str]
    created_at: Mapped[datetime]


class DelegateQuestionRow(Base):
    __table__ = DELEGATE_QUESTIONS
    id: Mapped[int]
    parked_run_id: Mapped[int]
    conversation_key: Mapped[str]
    tool_call_id: Mapped[str]
    specialist: Mapped[str]
    question: Mapped[str]
    requester_id: Mapped[str]
    requester_name: Mapped[str]
    status: Mapped[str]
    choices: Mapped[list[Any] | None]
    answer: Mapped[str | None]
    answer_message_id: Mapped[str | None]
    answered_by: Mapped[str | None]
    answered_at: Mapped[datetime | None]
    expires_at: Mapped[datetime]
    message_id: Mapped[str | None]
    created_at: Mapped[datetime]


class LinkCodeRow(Base):
    __table__ = LINK_CODES
    id: Mapped[int]
    identity_id: Mapped[int]
    code_hash: Mapped[str]
    expires_at: Mapped[datetime]
    used_at: Mapped[datetime | None]
    retired_at: Mapped[datetime | None]
    created_at: Mapped[datetime]


class MemoryNoteRow(Base):
    __table__ = MEMORY_NOTES
    id: Mapped[int]
    agent_name: Mapped[str]
    owner_kind: Mapped[str]
    owner_key: Mapped[str]
    path: Mapped[str]
    content: Mapped[str]
    created_at: Mapped[datetime]
    updated_at: Mapped[datetime]


class ConversationStateRow(Base):
    __table__ = CONVERSATION_STATE
    id: Mapped[int]
    conversation_key: Mapped[str]
    capability: Mapped[str]
    data: Mapped[dict[str, Any]]
    updated_at: Mapped[datetime]


class KnowledgeDocumentRow(Base):
    __table__ = KNOWLEDGE_DOCUMENTS
    id: Mapped[int]
    collection: Mapped[str]
    source: Mapped[str]
    title: Mapped[str]
    chunks: Mapped[int]
    characters: Mapped[int]
    added_at: Mapped[datetime]


class KnowledgeChunkRow(Base):
    __table__ = KNOWLEDGE_CHUNKS
    id: Mapped[int]
    document_id: Mapped[int]
    collection: Mapped[str]
    position: Mapped[int]
    text: Mapped[str]


class OutboxFileRow(Base):
    __table__ = OUTBOX_FILES
    id: Mapped[int]
    turn_key: Mapped[str]
    run_id: Mapped[int | None]
    digest: Mapped[str]
    name: Mapped[str]
    mime_type: Mapped[str]
    caption: Mapped[str | None]
    data: Mapped[bytes]
    size: Mapped[int]
    status: Mapped[str]
    claimed_until: Mapped[datetime | None]
    posted_id: Mapped[str | None]
    error: Mapped[str | None]
    created_at: Mapped[datetime]
    posted_at: Mapped[datetime | None]


class SandboxWorkspaceRow(Base):
    __table__ = SANDBOX_WORKSPACES
    id: Mapped[int]
    workspace_key: Mapped[str]
    label: Mapped[str]
    files: Mapped[dict[str, Any]]
    directories: Mapped[list[Any]]
    size: Mapped[int]
    updated_at: Mapped[datetime]


class ConsoleSessionRow(Base):
    __table__ = CONSOLE_SESSIONS
    id: Mapped[int]
    token_hash: Mapped[str]
    operator: Mapped[str]
    csrf_token: Mapped[str]
    created_at: Mapped[datetime]
    expires_at: Mapped[datetime]
    ended_at: Mapped[datetime | None]


class ConsoleAuditRow(Base):
    __table__ = CONSOLE_AUDIT
    id: Mapped[int]
    operator: Mapped[str]
    action: Mapped[str]
    detail: Mapped[str]
    at: Mapped[datetime]


class ReplicaRow(Base):
    __table__ = REPLICAS
    id: Mapped[str]
    started_at: Mapped[datetime]
    seen_at: Mapped[datetime]
    holding: Mapped[list[Any]]
