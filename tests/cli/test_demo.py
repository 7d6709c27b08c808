"""`gateway demo` runs a DM, an approval and a group mention through the real pipeline on each platform."""

from __future__ import annotations

from pathlib import Path

import pytest

from gateway.cli.demo import run_demo
from tests.support.cli_process import run_gateway


async def test_demo_shows_both_conversations() -> None:
    lines: list[str] = []
    await run_demo(lines.append)
    output = "\n".join(lines)
    assert "Alice: Hi! What can you do?" in output
    assert "Your first message was: Hi! What can you do?" in output, "the second DM turn sees the first"
    assert "You said: [Alice] can you summarize our plan?" in output
    assert "Approved by Alice (@alice) at" in output
    assert "Done — the tool said: website restarted" in output, "the approved run continues in the chat"
    assert "Stored in SQLite: 2 conversations, 8 turns, 4 runs." in output
    figures = shown_metrics(output)
    assert set(EVERY_SERIES) <= set(figures), set(EVERY_SERIES) - set(figures)
    assert figures["gateway_model_requests_total"] == 5, "the approved run's continuation is counted"
    assert figures["gateway_messages_answered_total"] == 4, "and its answer"
    assert (figures["gateway_turns_total"], figures["gateway_approvals"]) == (4, 1)


EVERY_SERIES = (
    "gateway_messages_received_total", "gateway_messages_acked_total", "gateway_messages_answered_total",
    "gateway_messages_refused_total", "gateway_turns_total", "gateway_turn_first_post_seconds_count",
    "gateway_turn_final_text_seconds_count", "gateway_model_requests_total", "gateway_model_tokens_total",
    "gateway_transport_connected", "gateway_bot_signed_in", "gateway_transport_lease_changes_total",
    "gateway_inbox_depth", "gateway_inbox_oldest_age_seconds", "gateway_approvals",
    "gateway_platform_api_trouble_total")
"""What the operations section names, as the demo's scrape of its own `/metrics` shows them."""


def shown_metrics(output: str) -> dict[str, float]:
    """The figures of the demo's `GET /metrics` block, by series name."""
    block = output.split("/metrics before the gateway stopped", 1)[1].split("\n\n", 1)[0]
    pairs = [figure.split() for line in block.splitlines()[1:] for figure in line.split(" · ")]
    return {name: float(value) for name, value in pairs}


@pytest.mark.parametrize("platform", ["slack", "mattermost"])
async def test_the_same_conversation_runs_on_every_platform(platform: str) -> None:
    lines: list[str] = []
    await run_demo(lines.append, [platform])  # type: ignore[list-item]
    output = "\n".join(lines)
    assert f"Local {platform.title()} server at http://127.0.0.1:" in output
    assert "Your first message was: _Hi! What can you do?_" in output, "the second DM turn sees the first"
    assert "can you summarize our plan?_" in output, "the group mention is answered"
    assert "Lunch at noon, anyone?" in output and output.count("Lunch at noon") == 1, "and nothing else there"
    assert "Approved** by" in output or "Approved* by" in output
    assert "Done — the tool said: _website restarted" in output, "the approved run continues in the chat"
    assert "Stored in SQLite: 2 conversations, 8 turns, 4 runs." in output


async def test_an_unknown_demo_platform_is_named(tmp_path: Path) -> None:
    finished = await run_gateway("demo", "--platform", "irc", cwd=tmp_path)
    assert finished.returncode == 2
    assert finished.stderr_lines == ["--platform: 'irc' is not one of telegram, slack, mattermost, all"]


async def test_demo_all_runs_the_conversation_on_each_platform_in_turn(tmp_path: Path) -> None:
    finished = await run_gateway("demo", "--platform", "all", cwd=tmp_path, timeout=120)
    assert finished.returncode == 0, finished.stderr
    assert finished.stderr == ""
    servers = [line.split(" server at http://127.0.0.1:")[0] for line in finished.stdout_lines if " server at " in line]
    assert servers == ["Local Telegram", "Local Slack", "Local Mattermost"]
    assert finished.stdout.count("Stored in SQLite: 2 conversations, 8 turns, 4 runs.") == 3
    assert not (tmp_path / "gateway.db").exists(), "the demo keeps its database in a temporary directory"
