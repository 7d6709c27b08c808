"""One way to say what a pydantic validation error means: the field, the value, what is allowed, the fix.

`gateway.yaml` (`gateway/config/schema.py`) and every capability's config (`capabilities/registry/__init__.py`) report
their errors through `describe_errors`, so a mistake reads the same wherever it is made.
"""

from __future__ import annotations

import difflib
import types
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Annotated, Any, Literal, TypeGuard, Union, get_args, get_origin

from pydantic import BaseModel, ValidationError

Loc = tuple[int | str, ...]

SECRET_FIELDS = frozenset({"token", "app_token", "signing_secret", "webhook_token", "api_key"})
"""Fields whose value is never repeated in a message, even when it is of the wrong type."""

DURATION_FORMS = "PT24H (ISO 8601), 1 day, 24:00:00, or a number of seconds such as 86400"

_NO_ECHO = frozenset({"missing", "value_error", "assertion_error", "extra_forbidden", "union_tag_invalid",
                      "union_tag_not_found", "literal_error"})
"""Error types whose message already says all there is (or has no value to show)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Problem:
    """One thing wrong with a config, at its place in the document."""

    loc: Loc
    """The path in the document, list items by index: `("bots", 0, "token")`."""
    message: str


def describe_errors(exc: ValidationError, schema: type[BaseModel]) -> list[Problem]:
    """Every error of `exc` (raised validating `schema`) at its document path, with a message that says the fix."""
    walked = [(error, _walk(schema, tuple(error["loc"]))) for error in exc.errors()]
    return [Problem(loc=walk.loc + _tag_field(error), message=_message(error, walk))
            for error, walk in walked if not _losing_branch(walk, [w for _, w in walked])]


def _tag_field(error: Any) -> Loc:
    """A wrong or missing `platform` is reported at the field itself, not at the bot."""
    if error["type"] in ("union_tag_invalid", "union_tag_not_found"):
        return (str(error["ctx"]["discriminator"]).strip("'"),)
    return ()


def loc_text(loc: Loc) -> str:
    """`("bots", 0, "token")` → `bots[0].token`; the empty path is the document itself."""
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "(top level)"


def did_you_mean(word: str, known: Sequence[str]) -> str:
    """`; did you mean 'x'? (known: …)`, or just the known names when none is close."""
    listed = f"known: {', '.join(known)}" if known else "this takes no settings"
    close = difflib.get_close_matches(word, known, n=1, cutoff=0.6)
    return f"; did you mean {close[0]!r}? ({listed})" if close else f"; {listed}"


@dataclass(frozen=True, slots=True, kw_only=True)
class _Walk:
    loc: Loc
    """The error's path without the union member tags pydantic adds."""
    parent: type[BaseModel] | None
    """The model the last part of the path was looked up in, when there is one."""
    branch: tuple[Loc, int | str] | None
    """The innermost union the path went through: the path before it and the member tag taken."""
    at_branch_root: bool
    """True when the error is about the union member as a whole (its type), not a field inside it."""


def _walk(schema: type[BaseModel], raw: Loc) -> _Walk:
    """Follow `raw` through `schema`'s annotations, dropping the parts that only name a union member."""
    loc: list[int | str] = []
    parent: type[BaseModel] | None = None
    branch: tuple[Loc, int | str] | None = None
    current: Any = schema
    for index, part in enumerate(raw):
        current = _unwrap(current)
        members = _union_members(current)
        if isinstance(part, str) and part.startswith("function-"):
            continue
        if members:
            chosen = _member(members, part)
            if chosen is not None or _is_tag_like(part):
                branch = (tuple(loc), part)
                current = chosen
                if index == len(raw) - 1:
                    return _Walk(loc=tuple(loc), parent=parent, branch=branch, at_branch_root=True)
                continue
        loc.append(part)
        current, parent = _step(current, part, parent)
    return _Walk(loc=tuple(loc), parent=parent, branch=branch, at_branch_root=False)


def _step(current: Any, part: int | str, parent: type[BaseModel] | None) -> tuple[Any, type[BaseModel] | None]:
    if isinstance(current, type) and issubclass(current, BaseModel):
        field = current.model_fields.get(str(part))
        return (field.annotation if field else None), current
    origin, args = get_origin(current), get_args(current)
    if origin in (list, tuple, set, frozenset) and args:
        return args[0], parent
    if origin is dict and len(args) == 2:
        return args[1], parent
    return None, parent


def _unwrap(annotation: Any) -> Any:
    while get_origin(annotation) is Annotated:
        annotation = get_args(annotation)[0]
    members = [m for m in _union_members(annotation) if m is not type(None)]
    return members[0] if len(members) == 1 else annotation


def _union_members(annotation: Any) -> tuple[Any, ...]:
    if get_origin(annotation) in (Union, types.UnionType):
        return tuple(_unwrap(m) for m in get_args(annotation))
    return ()


def _member(members: tuple[object, ...], tag: int | str) -> Any:
    for member in members:
        if _is_model(member):
            if member.__name__ == tag or tag in _literal_tags(member):
                return member
        elif getattr(member, "__name__", None) == tag:
            return member
    return None


def _is_model(member: object) -> TypeGuard[type[BaseModel]]:
    return isinstance(member, type) and issubclass(member, BaseModel)


def _literal_tags(model: type[BaseModel]) -> tuple[Any, ...]:
    return tuple(value for field in model.model_fields.values() if get_origin(field.annotation) is Literal
                 for value in get_args(field.annotation))


def _is_tag_like(part: int | str) -> bool:
    return isinstance(part, str) and ("[" in part or part in ("str", "int", "float", "bool", "dict", "list"))


def _losing_branch(walk: _Walk, walks: list[_Walk]) -> bool:
    """A union reports every member it tried; the member that failed only on its type is not what was meant
    when another member of the same union got as far as its fields."""
    if walk.branch is None or not walk.at_branch_root:
        return False
    return any(other.branch is not None and other.branch[0] == walk.branch[0] and other.branch != walk.branch
               and not other.at_branch_root for other in walks)


def _message(error: Any, walk: _Walk) -> str:
    kind = error["type"]
    if kind == "union_tag_invalid":
        allowed = str(error["ctx"]["expected_tags"]).replace("'", "")
        return f"{error['ctx']['tag']!r} is not one of {allowed}"
    if kind == "union_tag_not_found":
        return "Field required"
    if kind == "literal_error":
        allowed = error["ctx"]["expected"].replace("'", "").replace(" or ", ", ")
        return f"{error['input']!r} is not one of {allowed}"
    if kind == "extra_forbidden":
        if walk.parent is None or not walk.loc:
            return "unknown setting"
        return "unknown setting" + did_you_mean(str(walk.loc[-1]), list(walk.parent.model_fields))
    if kind == "time_delta_parsing" or kind == "time_delta_type":
        return f"{error['input']!r} is not a duration; write {DURATION_FORMS}"
    if kind == "list_type":
        return (f"should be a list, not a single value; write [{error['input']}] or one '- item' line per entry"
                if isinstance(error["input"], str | int) else "should be a list, one '- item' line per entry")
    if kind in ("model_type", "dict_type", "model_attributes_type"):
        return f"should be a mapping of settings (name: value), not {_kind_of(error['input'])}"
    message = str(error["msg"]).removeprefix("Value error, ")
    if kind in _NO_ECHO or (walk.loc and walk.loc[-1] in SECRET_FIELDS):
        return message
    value = error["input"]
    return f"{message} (got {value if isinstance(value, timedelta) else repr(value)})"


def _kind_of(value: Any) -> str:
    if isinstance(value, list):
        return "a list"
    if isinstance(value, str):
        return f"the text {value!r}"
    return f"{value!r}"
