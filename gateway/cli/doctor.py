"""`gateway doctor`: whether this deployment will work, one check per line (or one JSON object for CI).

Every bot signs in (`doctor_bots`), every model is looked up at its provider with its key (`doctor_models`), every
MCP server lists its tools, every capability key is set, Redis and the database answer (`doctor_services`). A
refusal says why and what to change; the command exits 1 when any check fails. Nothing is registered, sent or
spent, and every line passes through the scrubber of `doctor_secrets` first: no configured secret, nor a piece
of one quoted back by a server, reaches the output.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from pathlib import Path

import httpx

from gateway.agents.models import ModelResolver
from gateway.checks.model_setup import ModelSetup
from gateway.cli.doctor_bots import check_bot
from gateway.cli.doctor_check import TIMEOUT, Check, shorten
from gateway.cli.doctor_models import check_model
from gateway.cli.doctor_secrets import Scrubber, known_secrets, scrubbed_logging
from gateway.cli.doctor_services import check_capability_keys, check_database, check_mcp_server, check_redis
from gateway.config.schema import GatewayConfig, Settings
from gateway.config.secrets import SecretSource


async def run_doctor(config: GatewayConfig, secrets: SecretSource, settings: Settings, *, config_path: Path,
                     echo: Callable[[str], None], as_json: bool = False) -> bool:
    """Run every check and print the findings; True when none failed."""
    scrub = Scrubber(known_secrets(config_path, secrets, settings))
    with scrubbed_logging(scrub):
        checks = await all_checks(config, secrets, settings)
    failed = sum(check.status == "fail" for check in checks)
    if as_json:
        echo(json.dumps({"ok": not failed, "checks": [
            {key: scrub(value) if isinstance(value, str) else value for key, value in check.fields().items()}
            for check in checks]}, ensure_ascii=False))
    else:
        for check in checks:
            echo(scrub(check.line()))
        warned = sum(check.status == "warn" for check in checks)
        echo(f"{len(checks)} checks: {len(checks) - failed - warned} ok, {warned} warning(s), {failed} failed")
    return not failed


async def all_checks(config: GatewayConfig, secrets: SecretSource, settings: Settings) -> list[Check]:
    """Every check, run side by side, in the order they are printed: bots, models, MCP servers, keys, storage."""
    models = ModelResolver(config.models, secrets)
    setup = ModelSetup(config.models, secrets)
    names = list(dict.fromkeys([*(agent.model for agent in config.agents), *config.models]))
    async with httpx.AsyncClient(timeout=TIMEOUT, follow_redirects=False) as client:
        pending: list[tuple[str, Awaitable[Check]]] = [
            *((f"bot {bot.name} ({bot.platform})", check_bot(client, index, bot, secrets))
              for index, bot in enumerate(config.bots)),
            *((f"model {name}", check_model(client, name, models, setup, config.models)) for name in names),
            *((f"mcp {server.name}", check_mcp_server(server, secrets)) for server in config.mcp_servers),
            ("redis", check_redis(settings)),
            ("database", check_database(settings)),
        ]
        found = await asyncio.gather(*(_guarded(name, check) for name, check in pending))
    storage = found[-2:]
    return [*found[:-2], *check_capability_keys(config, secrets), *storage]


async def _guarded(name: str, check: Awaitable[Check]) -> Check:
    """The check's finding; an exception it did not expect becomes a failure line instead of a traceback."""
    try:
        return await check
    except Exception as exc:  # one check's surprise must not hide every other finding
        return Check(name=name, status="fail", reason=f"unexpected {type(exc).__name__}: {shorten(exc)}",
                     fix="a fault of the doctor itself; please report this line")
