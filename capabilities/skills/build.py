"""The tools and builder of `skills`, imported with its first build; its declaration (config, tools,
scopes) is `capabilities/skills/__init__.py`."""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic_ai import ModelRetry, RunContext
from pydantic_ai.capabilities import Capability
from pydantic_ai.toolsets import WrapperToolset
from pydantic_ai.toolsets.abstract import ToolsetTool
from pydantic_ai_skills import Skill, SkillsToolset
from pydantic_ai_skills.directory import discover_skills

from capabilities.registry import NoConfig
from capabilities.run import BuildContext, SkillFolder
from capabilities.run.tool_replies import RETRY_BUDGET, ToolText, described, retry_or_text
from capabilities.skills import SkillProblem
from capabilities.skills.services import SkillServices

NEVER_OFFERED = frozenset({"run_skill_script"})
"""Remote code execution without a sandbox: excluded by construction, not merely left undescribed."""
INSTRUCTIONS = """\
You have skills: written-down procedures of this organization, each for one kind of task.

<available_skills>
{skills_list}
</available_skills>

When a task falls within a skill's domain, call load_skill with its exact name first and follow its
instructions; read a resource it lists with read_skill_resource only after loading the skill, by the exact
name it gives. Load only the skills the task needs."""
TEXTS = {
    "list_skills": ToolText(
        summary="List the skills you can load, each with what it is for. The same list is in your instructions; "
                "use this to check it again.",
        returns="A JSON object mapping each skill's exact name to its one-line description; `{}` when no skill "
                "is available."),
    "load_skill": ToolText(
        summary="Load one skill's full instructions. Call it before doing a task the skill covers, and before "
                "reading any of its resources.",
        returns="The skill as XML: its name, description, the resources it offers (`<resource name=…>`) and its "
                "instructions (`<instructions>`). An unknown name gets a message listing the skills that exist.",
        args={"skill_name": "The skill's exact name as listed, e.g. `refunds`."}),
    "read_skill_resource": ToolText(
        summary="Read one supplementary file of a skill (a template, a reference table) that the skill's "
                "instructions point to. Load the skill first.",
        returns="The resource's text. An unknown skill or resource name gets a message listing the names that "
                "exist.",
        args={"skill_name": "The skill's exact name, as for load_skill.",
              "resource_name": "The resource's exact name as load_skill listed it, e.g. `TEMPLATE.md`.",
              "args": "Leave it out: file resources take no arguments."}),
}


def load_skills(folders: Sequence[SkillFolder]) -> list[Skill]:
    """The skills of `folders`, without scripts, each under a `skill://NAME` address rather than a server path.
    Raises `SkillProblem` for a missing folder, a folder without skills, a skill without name or description,
    or one name in two places."""
    skills: dict[str, Skill] = {}
    for folder in folders:
        path = Path(folder.path)
        if not path.is_dir():
            raise SkillProblem(f"{folder.path!r} is not a folder; create it, or correct the path")
        try:
            with warnings.catch_warnings():  # its metadata warnings: what matters is refused below, by name
                warnings.simplefilter("ignore", UserWarning)
                found = discover_skills(path, validate=True)
        except ValueError as exc:
            raise SkillProblem(f"{_shown(str(exc), path)}; give every SKILL.md front matter with a name and "
                               "a description") from None
        if not found:
            raise SkillProblem(f"{folder.path!r} holds no skill; put each skill in a subfolder with a SKILL.md")
        for skill in found:
            if not skill.description.strip():
                raise SkillProblem(f"skill {skill.name!r} has no description; add `description:` to its SKILL.md "
                                   "front matter (one line on when to use it)")
            if skill.name in skills:
                raise SkillProblem(f"skill {skill.name!r} is defined twice; give each skill a name of its own")
            skills[skill.name] = dataclasses.replace(skill, scripts=[], uri=f"skill://{skill.name}")
    return list(skills.values())


def skill_files(folders: Sequence[SkillFolder]) -> dict[str, dict[str, bytes]]:
    """Every skill of `folders` as files, by skill name: relative path → content (`SKILL.md`, its resources and
    its scripts), for a `sandbox` workspace's `skills/<name>/`. A folder `load_skills` refuses is left out here:
    the `skills` capability says what is wrong with it; symbolic links are never followed out of a skill."""
    placed: dict[str, dict[str, bytes]] = {}
    for folder in folders:
        path = Path(folder.path)
        if not path.is_dir():
            continue
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", UserWarning)
                found = discover_skills(path, validate=True)
        except ValueError:
            continue
        for skill in found:
            root = Path(skill.uri or "")
            placed.setdefault(skill.name, {
                file.relative_to(root).as_posix(): file.read_bytes() for file in sorted(root.rglob("*"))
                if file.is_file() and not file.is_symlink()})
    return placed


def _shown(message: str, root: Path) -> str:
    """The library's message with the folder's absolute path shortened to the configured one."""
    return message.replace(str(root.expanduser().resolve()), str(root))


@dataclass
class RetriesAsText(WrapperToolset[Any]):
    """The library raises a retry for an unknown name on every attempt; the last one answers with the text, so a
    mistaken name never ends the run (`capabilities/run/tool_replies.py`)."""

    async def call_tool(self, name: str, tool_args: dict[str, Any], ctx: RunContext[Any],
                        tool: ToolsetTool[Any]) -> Any:
        try:
            return await super().call_tool(name, tool_args, ctx, tool)
        except ModelRetry as retry:
            return retry_or_text(ctx, retry.message)


def build(context: BuildContext[NoConfig]) -> Capability[Any] | None:
    folders = context.bound(SkillServices).named(context.run.resources.skill_folders)
    if not folders:
        return None
    skills = load_skills(folders)
    library = SkillsToolset(skills=skills, exclude_tools=set(NEVER_OFFERED), instruction_template=INSTRUCTIONS,
                            max_retries=RETRY_BUDGET, id="skills")
    return Capability(toolsets=[RetriesAsText(described(library, TEXTS))])
