"""The import rules hold: layers, the local platform servers apart, SDKs and the web framework in their place."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("gateway", "adapters", "capabilities", "storage", "local_platforms")

LOCAL_IMPORTS_ALLOWED: dict[str, str] = {
    "gateway/cli/main.py": "the command line imports a command's implementation when that command runs: the "
                           "server stack (pydantic-ai, Starlette, uvicorn, the SDKs) takes seconds to import, and "
                           "`gateway --help` or `--version` should not wait for it",
    "gateway/cli/knowledge.py": "as gateway/cli/main.py: the knowledge store and the database load when a knowledge "
                                "command runs, not with `gateway --help`",
    "gateway/cli/people.py": "as gateway/cli/main.py: the identity and memory stores and the database load when an "
                             "identities or memory command runs, not with `gateway --help`",
    "gateway/cli/mcp.py": "as gateway/cli/main.py: the MCP client stack loads when `gateway mcp probe` runs",
    "gateway/cli/console.py": "as gateway/cli/main.py: the password hasher loads when `gateway console hash` runs",
    "capabilities/__init__.py": "`from capabilities import default_registry` loads the catalog (every capability, "
                                "pydantic-ai and the SDKs behind them) when asked for, not when a light module of "
                                "the package (config_errors, for the config schema) is imported",
    "gateway/pipeline/steps/commands/status.py": "the harness's compaction package (~1.7 MB, 40 modules) loads for "
                                                 "its context-window table when `/status` first asks, not in every "
                                                 "replica at start",
    "storage/db.py": "the async engine, SQLAlchemy's ORM session, greenlet and the async driver (~10 MB) load at the "
                     "first `transaction()`: the serving path runs every statement through `run()` and never asks",
    "storage/recurrence.py": "croniter and dateutil (~1 MB) load at the first cron read; a gateway with no "
                             "schedule and no agent setting reminders reads none, yet checks time zones here",
    "capabilities/charts/render.py": "matplotlib takes most of a second to import; the first chart loads it, so "
                                     "`gateway check`, the CLI and a replica's start do not wait for it",
    "gateway/server/platforms.py": "a platform's adapter and SDK load with its first bot: a gateway of Telegram bots "
                                   "does not carry Slack's aiohttp stack nor Mattermost's requests one (~20 MB)",
    "gateway/agents/mcp_servers.py": "the MCP client stack (fastmcp, the MCP SDK: ~40 MB, a second of imports) loads "
                                     "with the first server a run binds; most gateways bind none",
    "gateway/agents/models.py": "the OpenAI SDK (~20 MB of types) loads with the first OpenAI-compatible model, as "
                                "pydantic-ai's own model strings load their provider",
    "gateway/agents/transcription.py": "as gateway/agents/models.py: the OpenAI SDK loads with the first voice note",
    "gateway/checks/report.py": "pydantic-ai (a second of imports) loads in `gateway check` only to infer the profile "
                                "of a model its generated tables do not list, and only when an agent binds "
                                "`thinking` on one: whether the setting does anything on it",
    "gateway/server/tracing.py": "the OpenTelemetry SDK and its OTLP exporter (protobuf, ~4 MB) load only in a "
                                 "deployment that exports traces",
    "capabilities/knowledge/store.py": "pypdf (~10 MB) is for `gateway knowledge add`, never a running gateway",
    "gateway/cli/doctor_services.py": "Redis's client (~0.5 s of imports) loads only when the deployment being checked "
                                      "has a REDIS_URL",
    "gateway/server/app.py": "Alembic (~10 MB) loads only when a start finds a migration to run, Redis's client "
                             "(~7 MB) only for a gateway that has a REDIS_URL, the console (Jinja2, argon2, its "
                             "pages: ~15 MB) only where `console.enabled`",
}
"""Modules that may import inside a function, with the reason it cannot sit at the top of the module.

Dodging an import cycle is not a reason: the cycle is the thing to fix.
"""


def test_the_import_contracts_in_pyproject_hold() -> None:
    lint_imports = Path(sys.executable).with_name("lint-imports")
    run = subprocess.run([str(lint_imports), "--no-cache"], cwd=ROOT, capture_output=True, text=True, timeout=120,
                         env={"PYTHONPATH": str(ROOT), "PATH": str(lint_imports.parent)})
    assert run.returncode == 0, f"lint-imports failed:\n{run.stdout}\n{run.stderr}"


def local_imports(path: Path) -> list[str]:
    """`path:function` for every import statement inside a function body of the module at `path`."""
    found: list[str] = []

    def visit(node: ast.AST, function: str | None) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                visit(child, child.name if function is None else f"{function}.{child.name}")
            elif isinstance(child, ast.Import | ast.ImportFrom) and function is not None:
                found.append(f"{path.relative_to(ROOT).as_posix()}:{function}")
            else:
                visit(child, function)

    visit(ast.parse(path.read_text(), filename=str(path)), None)
    return found


def test_no_module_imports_inside_a_function() -> None:
    found = sorted({where for package in PACKAGES for path in sorted((ROOT / package).rglob("*.py"))
                    for where in local_imports(path)})
    unexplained = [where for where in found if where.split(":")[0] not in LOCAL_IMPORTS_ALLOWED]
    assert unexplained == [], f"move these imports to the top, or fix the cycle they dodge: {unexplained}"


def test_every_allowed_local_import_still_exists() -> None:
    found = {where for package in PACKAGES for path in (ROOT / package).rglob("*.py") for where in local_imports(path)}
    assert sorted(set(LOCAL_IMPORTS_ALLOWED) - {where.split(":")[0] for where in found}) == []
