"""`gateway --version`, `--help` and a usage error answer without importing the server stack, and a usage error is
Typer's own: its message and exit status 2, never "unexpected error".

What is imported is read from `sys.modules` of a real process, not timed: a timing test fails on a busy machine.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.support.cli_process import gateway_env, run_gateway

HEAVY = ("pydantic_ai", "openai", "fastapi", "uvicorn", "starlette", "sqlalchemy", "alembic", "redis", "telegram",
         "slack_sdk", "mattermostdriver", "aiohttp", "capabilities.registry.offered", "gateway.config.schema",
         "storage.db")
"""The server stack, the providers, the platform SDKs, the capability catalog and the config schema: what takes
seconds of CPU to import and what these commands do not need."""

PROBE = """
import sys
from gateway.cli.main import app
code = None
try:
    app(sys.argv[1:])
except SystemExit as exit:
    code = exit.code
heavy = sorted({name for name in sys.modules for prefix in HEAVY if name == prefix or name.startswith(prefix + ".")})
print(json.dumps({"code": code, "heavy": heavy}), file=sys.__stderr__)
"""


def imported(*args: str, cwd: Path, heavy: tuple[str, ...] = HEAVY) -> tuple[int, list[str]]:
    """The exit status of `gateway ARGS` run in a process of its own, and the `heavy` modules it imported."""
    script = f"import json\nHEAVY = {heavy!r}\n{PROBE}"
    run = subprocess.run([sys.executable, "-c", script, *args], cwd=cwd, env=gateway_env(), capture_output=True,
                         text=True, timeout=120)
    found = json.loads(run.stderr.strip().splitlines()[-1])
    return found["code"], found["heavy"]


@pytest.mark.parametrize("args", [pytest.param(["--version"], id="version"), pytest.param(["--help"], id="help"),
                                  pytest.param(["knowledge", "--help"], id="group-help"),
                                  pytest.param(["version"], id="unknown-command")])
def test_a_command_that_needs_nothing_imports_nothing_heavy(args: list[str], tmp_path: Path) -> None:
    code, heavy = imported(*args, cwd=tmp_path)
    assert code in (0, 2) and heavy == []


def test_the_probe_sees_what_a_command_imports(tmp_path: Path) -> None:
    """The check above would pass vacuously if the probe saw nothing: `schema` does import the config schema."""
    code, heavy = imported("schema", cwd=tmp_path)
    assert code in (0, None) and "gateway.config.schema" in heavy


@pytest.mark.parametrize(("args", "message"), [
    pytest.param(["version"], "No such command 'version'.", id="unknown-command"),
    pytest.param(["check", "--bogus"], "No such option: --bogus", id="unknown-option"),
])
async def test_a_usage_error_is_typers_own_with_status_2(args: list[str], message: str, tmp_path: Path) -> None:
    finished = await run_gateway(*args, cwd=tmp_path)
    assert finished.returncode == 2
    assert message in finished.stderr and "Usage: " in finished.stderr
    assert "unexpected error" not in finished.stderr and "--debug" not in finished.stderr


CHECK_HEAVY = ("pydantic_ai", "pydantic_ai_harness", "openai", "sqlalchemy", "starlette", "bs4", "matplotlib")
"""What `gateway check` does without: the capabilities' declarations are read, their builders are not loaded, and
models are judged from pydantic-ai's generated tables rather than built."""

BINDING_MANY = """
    models:
      hosted: openai:gpt-4o
      local: {{provider: openai-chat, base_url: "http://127.0.0.1:11434/v1", model: llama3.1}}
    agents:
      - name: helper
        model: hosted
        instructions: Be brief.
        capabilities:
          - {{id: memory_files}}
          - {{id: memory_mem0, secret_id: MEM0_KEY}}
          - {{id: conversation_search}}
          - {{id: web_fetch, config: {web_fetch}}}
          - {{id: web_research}}
          - {{id: planning}}
          - {{id: compaction}}
          - {{id: guardrails, config: {{redact_secrets_in: true}}}}
          - {{id: tool_output_limits}}
          - {{id: code_execution}}
          - {{id: charts}}
          - {{id: image_generation, secret_id: IMAGE_KEY}}
          - {{id: sandbox}}
          - {{id: subagents}}
          - {{id: thinking}}
    bots:
      - {{name: tg, platform: telegram, token: "${{TG_TOKEN}}", agent: helper}}
"""


@pytest.mark.parametrize(("web_fetch", "code"), [pytest.param("{}", 0, id="valid"),
                                                 pytest.param("{method: sideways}", 2, id="refused")])
def test_check_of_a_config_binding_many_capabilities_loads_no_builder_nor_sdk(web_fetch: str, code: int,
                                                                                tmp_path: Path) -> None:
    """Each entry's config is validated (a wrong one is refused, exit 2) from the capability's declaration alone."""
    config = tmp_path / "gateway.yaml"
    config.write_text(textwrap.dedent(BINDING_MANY.format(web_fetch=web_fetch)))
    status, heavy = imported("check", "-c", str(config), cwd=tmp_path, heavy=CHECK_HEAVY)
    assert (status or 0, heavy) == (code, [])


def test_the_server_stack_loads_no_console_and_no_cron_reader_until_asked(tmp_path: Path) -> None:
    """The console (Jinja2, argon2 and its pages, ~15 MB, and one argon2 hash's 64 MiB) is not paid for by every
    replica: `gateway serve` imports it when `console.enabled` says so. Nor croniter (~1 MB): the first cron read
    loads it, and a gateway with no schedule and no agent setting reminders has none to read. Nor the harness's
    compaction package (~1.7 MB), whose context-window table only `/status` reads, and an agent binding
    `compaction`."""
    script = ("import json, sys\nimport gateway.server.app\n"
              "print(json.dumps(sorted(n for n in sys.modules if n.split('.')[0] in ('jinja2', 'argon2', 'croniter') "
              "or n.startswith(('gateway.server.console', 'pydantic_ai_harness.compaction')))))")
    run = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, env=gateway_env(), capture_output=True,
                         text=True, timeout=120)
    assert run.returncode == 0, run.stderr[-2000:]
    assert json.loads(run.stdout.strip().splitlines()[-1]) == []
