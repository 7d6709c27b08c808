"""Allowlists and approver lists name people by user id or @handle, without regard to case; `gateway check`
refuses an entry that is neither on the bot's platform."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from adapters.base import Speaker
from gateway.agents.bindings import is_listed
from gateway.checks.bots import entry_problem


@dataclass(frozen=True, slots=True, kw_only=True)
class Case:
    id: str
    user_id: str
    handle: str | None
    entries: tuple[str, ...]
    listed: bool


CASES = [
    Case(id="slack-id-as-written", user_id="U0123ABCD", handle=None, entries=("U0123ABCD",), listed=True),
    Case(id="id-other-case", user_id="U0123ABCD", handle=None, entries=("u0123abcd",), listed=True),
    Case(id="handle", user_id="42", handle="Alice", entries=("@alice",), listed=True),
    Case(id="handle-without-at-is-not-a-handle", user_id="42", handle="alice", entries=("alice",), listed=False),
    Case(id="someone-else", user_id="43", handle="mallory", entries=("42", "@alice"), listed=False),
]


@pytest.mark.parametrize("case", [pytest.param(c, id=c.id) for c in CASES])
def test_lists_name_people_by_id_or_handle(case: Case) -> None:
    speaker = Speaker(platform="slack", platform_user_id=case.user_id, handle=case.handle, display_name="X")
    assert is_listed(speaker, case.entries) is case.listed


@pytest.mark.parametrize(("platform", "entry", "matchable"), [
    ("telegram", "12345678", True), ("telegram", "@alice", True), ("telegram", "alice", False),
    ("slack", "U0123ABCD", True), ("slack", "w0123abcd", True), ("slack", "alice", False),
    ("mattermost", "8xq1ta3mk7bdbqtquh1cqj7w5r", True), ("mattermost", "@alice", True), ("mattermost", "alice", False),
])
def test_check_refuses_an_entry_that_cannot_be_an_id_on_the_bots_platform(platform: str, entry: str,
                                                                          matchable: bool) -> None:
    problem = entry_problem(platform, entry)
    assert (problem is None) is matchable
    if not matchable:
        assert f"write '@{entry}' for the person's username" in (problem or "")
