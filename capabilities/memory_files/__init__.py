"""`memory_files`: notes an agent keeps across conversations, with `MEMORY.md` as their index.

Whose notes a run reaches is `RunFacts.owner`, decided by the server from who will hear the answer
(`gateway/pipeline/scope.py`) and bound into the tools at assembly; no tool takes an owner, so the model
cannot pick another store. The index is
injected into the instructions in one-to-one chats only, and left out whole when it is too long.
"""

from __future__ import annotations

from capabilities.registry import CapabilityDef, Deferred, ToolInfo

CAPABILITY = CapabilityDef(
    id="memory_files", name="Memory files", category="knowledge",
    description="Notes the agent keeps across conversations: a person's in one-to-one chats, the room's in groups.",
    tools=(ToolInfo(id="list_memory", summary="List the notes in memory."),
           ToolInfo(id="read_memory", summary="Read one note."),
           ToolInfo(id="write_memory", summary="Create or replace a note.", side_effecting=True),
           ToolInfo(id="edit_memory", summary="Replace one passage of a note.", side_effecting=True),
           ToolInfo(id="delete_memory", summary="Delete a note.", side_effecting=True)),
    build=Deferred("capabilities.memory_files.build:build"), bind=Deferred("capabilities.memory_files.services:bind"),
    personal_store=Deferred("capabilities.memory_files.personal:personal_store"))
