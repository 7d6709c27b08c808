"""What `gateway check` refuses about the resources agents bind by name: collections, context files, skill folders.

Unknown names are refused with the schema's cross-references (`gateway/config/schema.reference_problems`);
here, what only the files can tell: a context file that cannot be read or is too long for its mode, a skill
folder without usable skills, and names bound where no capability would use them.
"""

from __future__ import annotations

from capabilities.context import INJECT_LIMIT, LINK_LIMIT
from capabilities.context.files import UnreadableContextFile, read_context_file
from capabilities.run import SkillFolder
from capabilities.skills import SkillProblem, load_skills
from gateway.config.schema import AgentSpec, GatewayConfig

USED_BY = {"collections": "knowledge", "context_files": "context", "skill_folders": "skills"}
"""Each top-level section, and the capability that uses what an agent names from it."""


def resource_problems(config: GatewayConfig) -> list[str]:
    """Every problem of the definitions and of each agent's bindings, each naming its field and the fix."""
    problems = _context_file_problems(config)
    folders = {spec.name: SkillFolder(name=spec.name, path=spec.path) for spec in config.skill_folders}
    broken = set()
    for i, spec in enumerate(config.skill_folders):
        try:
            load_skills([folders[spec.name]])
        except SkillProblem as problem:
            broken.add(spec.name)
            problems.append(f"skill_folders[{i}].path: {problem}")
    for i, agent in enumerate(config.agents):
        problems += unused_bindings(agent, f"agents[{i}]")
        named = [folders[name] for name in agent.skill_folders if name in folders and name not in broken]
        try:
            if named:
                load_skills(named)
        except SkillProblem as problem:
            problems.append(f"agents[{i}].skill_folders: {problem}")
    return problems


def unused_bindings(agent: AgentSpec, path: str) -> list[str]:
    """Names bound where the capability that would use them is not bound (or is disabled)."""
    enabled = {entry.id for entry in agent.capabilities if entry.enabled}
    return [f"{path}.{section}: names {', '.join(getattr(agent, section))} but the agent does not bind "
            f"{capability!r}; add it to capabilities, or remove the list"
            for section, capability in USED_BY.items() if getattr(agent, section) and capability not in enabled]


def _context_file_problems(config: GatewayConfig) -> list[str]:
    problems = []
    for i, spec in enumerate(config.context_files):
        field = f"context_files[{i}].{'text' if spec.text is not None else 'path'}"
        try:
            file = read_context_file(spec)
        except UnreadableContextFile as exc:
            problems.append(f"{field}: {exc}; correct the path")
            continue
        if spec.mode == "inject" and len(file.text) > INJECT_LIMIT:
            problems.append(f"{field}: {len(file.text):,} characters; an inject file may hold at most "
                            f"{INJECT_LIMIT:,}, since every run pays for it. Shorten it, or set mode: link")
        elif len(file.text) > LINK_LIMIT:
            problems.append(f"{field}: {len(file.text):,} characters; a link file may hold at most {LINK_LIMIT:,}. "
                            "Put a document this long into a knowledge collection, to be searched")
    return problems
