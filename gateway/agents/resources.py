"""What gateway.yaml defines at the top level for agents to bind by name: collections, context files, skill folders.

An agent spec names what it uses (`agents[].collections`, `.context_files`, `.skill_folders`); the server
resolves those names before each run into `RunFacts`, so no capability, and no model, ever chooses a
collection, a file or a folder. Only collections that hold a document are handed on: `knowledge` is not
attached to a search that would always come back empty.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path

from capabilities.run import ContextFile, DocumentSearch, KnowledgeScope, RunFacts, SkillFolder
from capabilities.skills.build import skill_files
from gateway.agents.context_files import read_context_file
from gateway.agents.knowledge import FullTextRanker, KnowledgeSearch, KnowledgeStore
from gateway.config.schema import AgentSpec, ContextFileSpec, GatewayConfig
from storage.db import Database


@dataclass(frozen=True, slots=True, kw_only=True)
class BoundResources:
    """The deployment's definitions as they stand for one run, ready to bind into any agent of it."""

    searchable: frozenset[str] = frozenset()
    """The defined collections that hold at least one document."""
    search: DocumentSearch | None = None
    context_files: dict[str, ContextFile] = field(default_factory=dict)
    skill_folders: dict[str, SkillFolder] = field(default_factory=dict)

    def bind(self, spec: AgentSpec, run: RunFacts) -> RunFacts:
        """`run` with what `spec` names, and nothing else: an agent reaches only its own spec's resources."""
        collections = tuple(name for name in spec.collections if name in self.searchable)
        knowledge = KnowledgeScope(collections=collections, search=self.search) \
            if collections and self.search is not None else None
        files = tuple(self.context_files[n] for n in spec.context_files if n in self.context_files)
        folders = tuple(self.skill_folders[n] for n in spec.skill_folders if n in self.skill_folders)
        workspace = run.workspace
        if workspace is not None and folders and any(entry.id == "sandbox" for entry in spec.capabilities):
            # the skills as files in the workspace, a script beside the shell that may run it
            workspace = replace(workspace, skills=skill_files(folders))
        return replace(run, knowledge=knowledge, context_files=files, skill_folders=folders, workspace=workspace)


class Resources:
    """Resolves the config's definitions for each run: context files as they are on disk now, collections counted."""

    def __init__(self, config: GatewayConfig, db: Database) -> None:
        self._config = config
        self._store = KnowledgeStore(db)
        self._search = KnowledgeSearch((FullTextRanker(db),))
        self._files: dict[str, tuple[tuple[int, int], ContextFile]] = {}
        """Each context file read from a path, by name, with the (mtime, size) it had when read."""

    async def for_run(self) -> BoundResources:
        config = self._config
        bound = {name for agent in config.agents for name in agent.collections}
        searchable = await self._store.searchable(sorted(bound)) if bound else frozenset()
        named = {name for agent in config.agents for name in agent.context_files}
        return BoundResources(searchable=searchable, search=self._search,
                              context_files={spec.name: self._context_file(spec) for spec in config.context_files
                                             if spec.name in named},
                              skill_folders={spec.name: SkillFolder(name=spec.name, path=spec.path)
                                             for spec in config.skill_folders})

    def _context_file(self, spec: ContextFileSpec) -> ContextFile:
        """The file as it is now, read again only when its modification time or size changed: a turn costs a
        `stat` per file, not a read on the event loop."""
        if spec.path is None:
            return read_context_file(spec)
        try:
            found = Path(spec.path).stat()
        except OSError:
            return read_context_file(spec)  # raises the readable error
        signature = (found.st_mtime_ns, found.st_size)
        cached = self._files.get(spec.name)
        if cached is not None and cached[0] == signature:
            return cached[1]
        file = read_context_file(spec)
        self._files[spec.name] = (signature, file)
        return file
