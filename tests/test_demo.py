"""`gateway demo` runs a DM and a group mention through the real pipeline and prints both sides."""

from __future__ import annotations

from gateway.cli.demo import run_demo


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
