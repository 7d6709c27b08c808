"""Every `typing.Protocol` of the product has at most six members: a seam is a small protocol plus data.

Members are what a protocol's class body declares (annotated attributes, methods, properties) together with
the members of the product's protocols it is composed of. The source is read with `ast`, so nothing is imported.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PRODUCT = ("gateway", "adapters", "capabilities", "storage", "local_platforms")
MAX_MEMBERS = 6
LIBRARY_SURFACES = {
    "SlackWebApi": "the slice of slack-sdk's `AsyncWebClient` the Slack adapter calls, typed for the strict check: a "
                   "library's surface as it is, not a seam of ours",
}
"""Protocols that mirror a third-party client for the type checker, by name, with the reason."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ProtocolClass:
    module: str
    name: str
    path: str
    line: int
    own: frozenset[str]
    bases: tuple[tuple[str, str], ...]
    """Every base other than `Protocol` itself, as (module, name) where the class's module imports it from."""

    @property
    def where(self) -> str:
        return f"{self.path}:{self.line}"


def _module_name(root: Path, path: Path) -> str:
    parts = path.relative_to(root).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imported(tree: ast.Module, module: str, package: str) -> dict[str, tuple[str, str]]:
    """Local name → (module, name) for the names a module imports with `from ... import`."""
    names: dict[str, tuple[str, str]] = {}
    for node in tree.body:
        if isinstance(node, ast.ImportFrom):
            source = node.module or ""
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                source = ".".join([*base, source] if source else base)
            for alias in node.names:
                names[alias.asname or alias.name] = (source, alias.name)
    return names


def _base_name(base: ast.expr) -> str | None:
    """`Protocol`, `typing.Protocol`, `Protocol[T]` → "Protocol"; `X`, `mod.X`, `X[T]` → "X"."""
    if isinstance(base, ast.Subscript):
        base = base.value
    if isinstance(base, ast.Name):
        return base.id
    if isinstance(base, ast.Attribute):
        return base.attr
    return None


def _members(body: list[ast.stmt]) -> frozenset[str]:
    names: set[str] = set()
    for statement in body:
        if isinstance(statement, ast.AnnAssign) and isinstance(statement.target, ast.Name):
            names.add(statement.target.id)
        elif isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef):
            names.add(statement.name)  # a property's getter and setter are one member
    return frozenset(names)


def protocols(root: Path, packages: tuple[str, ...] = PRODUCT) -> Iterator[ProtocolClass]:
    """Every class under `packages` that lists `Protocol` (or `Protocol[...]`) among its bases."""
    for package in packages:
        for path in sorted((root / package).rglob("*.py")):
            tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
            module = _module_name(root, path)
            package = module if path.name == "__init__.py" else module.rpartition(".")[0]
            imported = _imported(tree, module, package)
            for node in ast.walk(tree):
                if not isinstance(node, ast.ClassDef):
                    continue
                bases = [name for name in map(_base_name, node.bases) if name is not None]
                if "Protocol" not in bases:
                    continue
                yield ProtocolClass(module=module, name=node.name, path=str(path.relative_to(root)), line=node.lineno,
                                    own=_members(node.body),
                                    bases=tuple(imported.get(name, (module, name)) for name in bases
                                                if name != "Protocol"))


def member_counts(root: Path, packages: tuple[str, ...] = PRODUCT) -> dict[ProtocolClass, frozenset[str]]:
    """Each protocol's members, its product protocol bases' included (a base outside the product adds none)."""
    found = {(p.module, p.name): p for p in protocols(root, packages)}

    def members(protocol: ProtocolClass, seen: frozenset[tuple[str, str]]) -> frozenset[str]:
        inherited = [members(found[base], seen | {base}) for base in protocol.bases
                     if base in found and base not in seen]
        return protocol.own.union(*inherited)

    return {p: members(p, frozenset({(p.module, p.name)})) for p in found.values()}


def test_every_protocol_in_the_product_has_at_most_six_members() -> None:
    counts = member_counts(ROOT)
    offenders = [f"{p.where} {p.name} has {len(names)} members: {', '.join(sorted(names))}"
                 for p, names in sorted(counts.items(), key=lambda item: (item[0].path, item[0].line))
                 if len(names) > MAX_MEMBERS and p.name not in LIBRARY_SURFACES]
    assert counts, "no protocol found: the walk read the wrong tree"
    assert not offenders, "protocols over six members:\n" + "\n".join(offenders)


def test_a_protocol_composed_of_others_counts_their_members(tmp_path: Path) -> None:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "parts.py").write_text(
        "from typing import Protocol\n"
        "class Reads(Protocol):\n    name: str\n    def read(self) -> str: ...\n"
        "class Writes(Protocol):\n    @property\n    def size(self) -> int: ...\n"
        "    @size.setter\n    def size(self, value: int) -> None: ...\n    async def write(self) -> None: ...\n")
    (tmp_path / "pkg" / "both.py").write_text(
        "import typing\nfrom .parts import Reads, Writes as W\n"
        "class Both(Reads, W, typing.Protocol[T]):\n    def read(self) -> str: ...\n    def close(self) -> None: ...\n"
        "class Concrete(Reads):\n    def extra(self) -> None: ...\n")
    counts = {p.name: names for p, names in member_counts(tmp_path, ("pkg",)).items()}
    assert counts == {"Reads": {"name", "read"}, "Writes": {"size", "write"},
                      "Both": {"name", "read", "size", "write", "close"}}
