"""Each capability is a room of its own: the core names none, builds none by name, and the capabilities package holds
the registry, the build context and one entry per capability."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

from capabilities import CAPABILITIES
from gateway.pipeline.runtime import Runtime

ROOT = Path(__file__).resolve().parents[2]
IDS = frozenset(definition.id for definition in CAPABILITIES)

SHARED = {
    "__init__.py": "the package: loads the catalog lazily",
    "registry": "the registry, its declarations, their config errors and the catalog (`offered.py`)",
    "run": "the build context: what a capability receives at start and per run, with the outbound-request guard "
           "and the tool replies every capability builds with",
}
"""What `capabilities/` holds besides one entry per capability, and why."""

NAMING_ALLOWED = {
    "gateway/checks/": "config validation: it names the capability whose settings it checks",
    "gateway/cli/demo.py": "the demo's own config binds a capability",
    "gateway/cli/main.py": "`gateway knowledge` is a command's name",
}


IMPORTS_ALLOWED = {
    "gateway/checks/": "config validation: it reads the settings of the capability it checks",
    "gateway/cli/knowledge.py": "`gateway knowledge` manages the knowledge capability's documents",
    "gateway/server/console/": "the console's knowledge page manages the knowledge capability's documents",
    "gateway/config/schema.py": "the deployment's settings read MEM0_ALLOWED_HOSTS with the rest of the environment",
}
"""Where the core may import a capability's own modules, and why; elsewhere only the catalog, the registry and the
build context."""
SHARED_MODULES = ("capabilities", "capabilities.registry", "capabilities.run")


def test_capabilities_holds_the_registry_the_build_context_and_one_entry_per_capability() -> None:
    entries = {path.name for path in (ROOT / "capabilities").iterdir() if not path.name.startswith(("_", "."))
               or path.name == "__init__.py"}
    strays = entries - set(SHARED) - IDS - {f"{id_}.py" for id_ in IDS}
    assert not strays, f"capabilities/ holds {sorted(strays)}: move each into its capability's folder"
    homeless = {id_ for id_ in IDS if id_ not in entries and f"{id_}.py" not in entries}
    assert not homeless, f"capabilities {sorted(homeless)} have no folder (or module) of their own"


def core_modules(allowed: dict[str, str]) -> list[tuple[str, Path]]:
    """(path from the root, path) of every module of `gateway/` outside the `allowed` paths."""
    paths = [(path.relative_to(ROOT).as_posix(), path) for path in sorted((ROOT / "gateway").rglob("*.py"))]
    return [(relative, path) for relative, path in paths if not relative.startswith(tuple(allowed))]


def string_constants(path: Path) -> list[tuple[int, str]]:
    """(line, value) of every string in the module that is not a docstring."""
    tree = ast.parse(path.read_text())
    docstrings = {id(node.value) for node in ast.walk(tree)
                  if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)}
    return [(node.lineno, node.value) for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings]


def test_the_core_spells_no_capability_id_outside_config_validation() -> None:
    spelled = []
    for relative, path in core_modules(NAMING_ALLOWED):
        spelled += [f"{relative}:{line}: {value!r}" for line, value in string_constants(path) if value in IDS]
    assert not spelled, "the core names capabilities; make it a declaration on the capability:\n" + "\n".join(spelled)


def test_the_runtime_takes_at_most_six_collaborators_and_imports_no_capability() -> None:
    parameters = [name for name in inspect.signature(Runtime.__init__).parameters if name != "self"]
    assert len(parameters) <= 6, parameters
    tree = ast.parse((ROOT / "gateway/pipeline/runtime.py").read_text())
    imported = {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.module}
    capability_modules = {module for module in imported if module.startswith("capabilities")}
    assert capability_modules <= {"capabilities.registry", "capabilities.run"}, capability_modules


def test_the_core_imports_no_capability_module_but_the_registry_and_the_build_context() -> None:
    found = []
    for relative, path in core_modules(IMPORTS_ALLOWED):
        for node in ast.walk(ast.parse(path.read_text())):
            names = [node.module] if isinstance(node, ast.ImportFrom) and node.module else \
                [alias.name for alias in node.names] if isinstance(node, ast.Import) else []
            found += [f"{relative}:{node.lineno}: {name}" for name in names if name.startswith("capabilities")
                      and not name.startswith(tuple(f"{shared}." for shared in SHARED_MODULES[1:]))
                      and name not in SHARED_MODULES]
    assert not found, "the core imports a capability's own module; share it through capabilities.run:\n" + \
        "\n".join(found)
