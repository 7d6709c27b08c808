"""What `skills` (and `sandbox`, which lays skills out as files) binds when the gateway starts: the config's skill
folders (`skill_folders:`), by name."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from capabilities.run import Deployment, SkillFolder


@dataclass(frozen=True, slots=True, kw_only=True)
class SkillServices:
    folders: Mapping[str, SkillFolder]

    def named(self, names: Sequence[str]) -> tuple[SkillFolder, ...]:
        """The folders of these names the config defines, in the order named."""
        return tuple(self.folders[name] for name in names if name in self.folders)


def bind(deployment: Deployment) -> SkillServices:
    return SkillServices(folders={spec.name: SkillFolder(name=spec.name, path=spec.path)
                                  for spec in deployment.config.skill_folders})
