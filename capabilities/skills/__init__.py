"""`skills`: written-down know-how the agent loads one skill at a time, from `pydantic-ai-skills` 1.x.

Skills come from the skill folders the agent spec binds (`RunFacts.skill_folders`), each a folder of
subfolders with a `SKILL.md` (YAML front matter `name` and `description`, then the instructions) and
resource files beside it. `run_skill_script` is never offered, and scripts are dropped from the skills, so
nothing the model reads points at a tool it does not have: running code has one path, the sandbox. The
library's tool texts are replaced where they describe its Python rather than what the model is handed
(`list_skills` answers JSON, not "a dictionary"). 1.x is pinned (`>=1.4,<2`): 2.x replaced `list_skills`
and `load_skill` with pydantic-ai's `load_capability`, and the drift test reports such a change.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from capabilities.registry import CapabilityDef, Deferred, ToolInfo

if TYPE_CHECKING:
    from capabilities.run import SkillFolder


class SkillProblem(ValueError):
    """A skill folder that cannot be used: what is wrong, and how to fix it."""


load_skills: Deferred[Callable[[Sequence[SkillFolder]], list[Any]]] = Deferred("capabilities.skills.build:load_skills")
"""The skills of some folders, read by pydantic-ai-skills (`build.py`), which loads when the first folder is read:
`gateway check` of a config without skill folders does not import it. Raises `SkillProblem`."""

CAPABILITY = CapabilityDef(
    id="skills", name="Skills", category="knowledge",
    description="Written-down procedures the agent loads one at a time when a task calls for one.",
    tools=(ToolInfo(id="list_skills", summary="Lists the skills that can be loaded."),
           ToolInfo(id="load_skill", summary="Loads one skill's instructions."),
           ToolInfo(id="read_skill_resource", summary="Reads a supplementary file of a loaded skill.")),
    scopes=frozenset({"knowledge:read"}), build=Deferred("capabilities.skills.build:build"),
    bind=Deferred("capabilities.skills.services:bind"))
