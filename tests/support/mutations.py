"""Hypothesis strategies over real payloads: any field, at any depth, replaced by any JSON value, or by a value of
another JSON type than the one the platform sends there (type confusion)."""

from __future__ import annotations

import asyncio
import copy
import json
from collections.abc import Awaitable
from typing import Any, TypeVar

from hypothesis import strategies as st

T = TypeVar("T")

JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20)
    | st.sampled_from([2**63, 10**40, -(10**30)])  # past what timestamps and ids hold
    | st.sampled_from(["", "@helper", "<@U1>", "D1", "C1", "1.1", "approval:approve", "ap:1", "message", "posted"]),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12)


def _slots(node: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every path into a JSON value, through fields that carry JSON text too."""
    found = [path]
    if isinstance(node, str) and node[:1] in ("{", "["):
        try:
            node = json.loads(node)
        except ValueError:
            return found
    children = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else []
    for key, child in children:
        found.extend(_slots(child, (*path, key)))
    return found


def _replaced(node: Any, path: tuple[Any, ...], value: Any) -> Any:
    if not path:
        return value
    if isinstance(node, str):  # a field that carries JSON text: replaced inside, sent as text again
        return json.dumps(_replaced(json.loads(node), path, value))
    node = copy.copy(node)
    node[path[0]] = _replaced(node[path[0]], path[1:], value)
    return node


@st.composite
def mutated(draw: st.DrawFn, seeds: list[Any]) -> Any:
    """A seed with one to three fields, anywhere in it, replaced by any JSON value."""
    payload: Any = draw(st.sampled_from(seeds))
    for _ in range(draw(st.integers(1, 3))):
        path = draw(st.sampled_from(_slots(payload)))
        payload = _replaced(payload, path, draw(JSON_VALUES))
    return payload


KINDS = {"null": st.none(), "bool": st.booleans(), "number": st.integers() | st.floats(),
         "string": st.text(max_size=20), "list": st.lists(JSON_VALUES, max_size=3),
         "object": st.dictionaries(st.text(max_size=8), JSON_VALUES, max_size=3)}


def _kind(value: Any) -> str:
    if value is None or isinstance(value, bool):
        return "null" if value is None else "bool"
    if isinstance(value, int | float):
        return "number"
    return "string" if isinstance(value, str) else "list" if isinstance(value, list) else "object"


def _at(node: Any, path: tuple[Any, ...]) -> Any:
    for key in path:
        node = json.loads(node) if isinstance(node, str) else node
        node = node[key]
    return node


@st.composite
def confused(draw: st.DrawFn, seeds: list[Any]) -> Any:
    """A seed with one to three fields given a value of another JSON type (a list or a number where a string
    goes, null where an object goes). Half the picks are among the fields of the outer two levels, the transport's
    own envelope (an envelope id, an event type, an update id), which would be few among all fields."""
    payload: Any = draw(st.sampled_from(seeds))
    for _ in range(draw(st.integers(1, 3))):
        slots = _slots(payload)[1:] or [()]
        shallow = [path for path in slots if len(path) <= 2]
        path = draw(st.sampled_from(shallow) | st.sampled_from(slots))
        kind = _kind(_at(payload, path))
        payload = _replaced(payload, path, draw(st.one_of(*(s for k, s in KINDS.items() if k != kind))))
    return payload


def any_change(seeds: list[Any]) -> st.SearchStrategy[Any]:
    """Any value anywhere, or type confusion."""
    return mutated(seeds) | confused(seeds)


def in_loop(loop: asyncio.AbstractEventLoop, work: Awaitable[T]) -> T:
    """Run `work` on the test's event loop (where the gateway and the fake run) from Hypothesis's thread."""
    return asyncio.run_coroutine_threadsafe(work, loop).result(timeout=120)  # type: ignore[arg-type]
