"""A YAML config file read with the place of every setting, so each problem names its file, line and column,
and its bot or agent by name (`bots['team-slack'].token`, not `bots[0].token`)."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from yaml.nodes import MappingNode, Node, SequenceNode

from capabilities.registry.config_errors import Loc, Problem

_PATH = re.compile(r"^(\(top level\)|[A-Za-z_][\w-]*(?:\.[\w${}-]+|\[\d+\])*): (.+)$", re.DOTALL)
_PART = re.compile(r"\.?([\w${}-]+)|\[(\d+)\]")


class SourceError(Exception):
    """The file cannot be read or is not YAML; the message says where and how to fix it."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ConfigSource:
    """The data of a config and where each of its settings starts."""

    data: Any
    path: Path | None = None
    marks: Mapping[Loc, tuple[int, int]] = field(default_factory=dict)
    """Document path → (line, column), both from 1: a mapping entry starts at its key."""
    repeated: tuple[Problem, ...] = ()
    """Keys given twice in one mapping: YAML keeps the last silently, so they are refused."""

    @classmethod
    def read(cls, path: Path) -> ConfigSource:
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            raise SourceError(f"{path}: no such file; write one with `gateway init -c {path}`, or copy "
                              "examples/gateway.yaml") from None
        except OSError as exc:
            raise SourceError(f"{path}: cannot read ({exc.strerror})") from None
        loader = yaml.SafeLoader(text)
        try:
            node = loader.get_single_node()
            data = loader.construct_document(node) if node is not None else None
        except yaml.MarkedYAMLError as exc:
            raise SourceError(_syntax_error(path, exc)) from None
        finally:
            loader.dispose()
        marks: dict[Loc, tuple[int, int]] = {}
        repeated: list[Problem] = []
        if node is not None:
            _record(node, (), marks, repeated)
        return cls(data=data, path=path, marks=marks, repeated=tuple(repeated))

    def position(self, loc: Loc) -> tuple[int, int]:
        """(line, column) of the setting at `loc`, or of the nearest enclosing one written in the file."""
        for end in range(len(loc), -1, -1):
            if loc[:end] in self.marks:
                return self.marks[loc[:end]]
        return (1, 1)

    def where(self, loc: Loc) -> str:
        """`gateway.yaml:12:5` for the setting at `loc`; empty for a config that is not from a file."""
        if self.path is None:
            return ""
        line, column = self.position(loc)
        return f"{self.path}:{line}:{column}"

    def named(self, loc: Loc) -> str:
        """The path as a reader names it: a list item with a `name` is written by that name."""
        out, data = "", self.data
        for part in loc:
            if isinstance(part, int):
                item = data[part] if isinstance(data, list) and part < len(data) else None
                name = item.get("name") if isinstance(item, dict) else None
                out += f"[{name!r}]" if isinstance(name, str) and name else f"[{part}]"
                data = item
            else:
                out += f".{part}" if out else part
                data = data.get(part) if isinstance(data, dict) else None
        return out or "(top level)"

    def line(self, problem: Problem, *, label: str = "") -> str:
        """One line: the place in the file, `label` (`warning: `), the named path, the message."""
        where = self.where(problem.loc)
        text = label + (f"{self.named(problem.loc)}: {problem.message}" if problem.loc else problem.message)
        return f"{where}: {text}" if where else text

    def lines(self, problems: Iterable[Problem], *, label: str = "") -> list[str]:
        """One line per problem, in the order of the file."""
        ordered = sorted(problems, key=lambda problem: self.position(problem.loc))
        return [self.line(problem, label=label) for problem in ordered]


def parse_problem(text: str) -> Problem:
    """A problem written as `agents[0].capabilities[1].id: message`, as the validators report them."""
    matched = _PATH.match(text)
    if matched is None:
        return Problem(loc=(), message=text)
    path, message = matched.groups()
    if path == "(top level)":
        return Problem(loc=(), message=message)
    loc = tuple(int(index) if index else name for name, index in _PART.findall(path))
    return Problem(loc=loc, message=message)


def _record(node: Node, loc: Loc, marks: dict[Loc, tuple[int, int]], repeated: list[Problem]) -> None:
    marks.setdefault(loc, (node.start_mark.line + 1, node.start_mark.column + 1))
    if isinstance(node, MappingNode):
        seen: set[Any] = set()
        for key, value in node.value:
            child = (*loc, key.value)
            if key.value in seen:
                repeated.append(Problem(loc=child, message=f"{key.value!r} is set twice in this mapping (line "
                                                           f"{marks[child][0]} and line {key.start_mark.line + 1}); "
                                                           "keep one"))
                continue
            seen.add(key.value)
            marks[child] = (key.start_mark.line + 1, key.start_mark.column + 1)
            _record(value, child, marks, repeated)
    elif isinstance(node, SequenceNode):
        for index, item in enumerate(node.value):
            _record(item, (*loc, index), marks, repeated)


def _syntax_error(path: Path, exc: yaml.MarkedYAMLError) -> str:
    mark = exc.problem_mark or exc.context_mark
    where = f"{path}:{mark.line + 1}:{mark.column + 1}" if mark else str(path)
    problem = (exc.problem or "").replace("\t", "\\t")
    return f"{where}: not valid YAML: {problem}; {_syntax_hint(exc)}"


def _syntax_hint(exc: yaml.MarkedYAMLError) -> str:
    opened = (f"line {exc.context_mark.line + 1}, column {exc.context_mark.column + 1}" if exc.context_mark
              else "above")
    problem, context = exc.problem or "", exc.context or ""
    if "'\\t'" in problem or "\t" in problem:
        return "indent with spaces, not tabs"
    if "flow mapping" in context:
        return f"the '{{' at {opened} is not closed with '}}'"
    if "flow sequence" in context:
        return f"the '[' at {opened} is not closed with ']'"
    if "quoted scalar" in context:
        return f"the quote at {opened} is not closed"
    if "mapping values are not allowed" in problem:
        return "indent this line like the keys beside it, or quote a value that contains ': '"
    if "<block end>" in problem or "block mapping" in context:
        return "this line is indented differently from the settings beside it; line it up with them"
    return "check the indentation, brackets and quotes on this line and the one before it"
