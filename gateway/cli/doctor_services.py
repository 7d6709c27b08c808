"""What the doctor checks besides bots and models: each MCP server lists its tools, each capability key is set
(none of the key-holding services — Tavily, Brave, Exa, mem0, the image providers — is asked: a search or an
image costs money, and the doctor spends none), Redis answers a PING, the database a `SELECT 1`."""

from __future__ import annotations

from pathlib import Path

from sqlalchemy import text
from sqlalchemy.engine import make_url
from sqlalchemy.exc import DBAPIError, SQLAlchemyError
from sqlalchemy.ext.asyncio import create_async_engine

from gateway.agents.mcp_servers import describe, probe
from gateway.cli.doctor_check import Check, shorten
from gateway.config.schema import GatewayConfig, McpServerSpec, Settings, secret_name
from gateway.config.secrets import SecretSource

SERVICE_TIMEOUT = 10.0


def shown(url: str) -> str:
    """A database or Redis URL as it may be printed: the password replaced by ***."""
    return make_url(url).render_as_string(hide_password=True)


async def check_mcp_server(server: McpServerSpec, secrets: SecretSource) -> Check:
    name = f"mcp {server.name}"
    try:
        tools = await probe(server, secrets)
    except Exception as exc:  # whatever the server did, one line; agents go without its tools until it answers
        return Check(name=name, status="fail", reason=f"cannot be reached ({shorten(describe(exc))})",
                     fix="start the server or correct its url/command; `gateway mcp probe` retries one server")
    offered = [tool.tool_id for tool in tools if tool.left_out is None]
    listed = ", ".join(offered[:6]) + ("…" if len(offered) > 6 else "")
    return Check(name=name, status="ok", reason=f"lists {len(tools)} tool(s), {len(offered)} offered: {listed}")


def check_capability_keys(config: GatewayConfig, secrets: SecretSource) -> list[Check]:
    """One check per distinct key the agents' capabilities name."""
    checks: dict[str, Check] = {}
    for agent in config.agents:
        for entry in agent.capabilities:
            if not entry.enabled or not entry.secret_id or secret_name(entry.secret_id) in checks:
                continue
            variable = secret_name(entry.secret_id)
            checks[variable] = _capability_key(entry.id, variable, secrets, where=f"agent {agent.name}")
    return list(checks.values())


def _capability_key(capability: str, variable: str, secrets: SecretSource, *, where: str) -> Check:
    name = f"key {variable} ({capability})"
    key = secrets.get(variable)
    if not key:
        return Check(name=name, status="fail", reason=f"{where} needs {variable}, which is not set",
                     fix=f"set {variable} in the environment or in GATEWAY_SECRETS_FILE")
    return Check(name=name, status="ok",
                 reason=f"set; {capability} is not asked (no free call), its first use tests the key")


async def check_redis(settings: Settings) -> Check:
    if not settings.redis_url:
        return Check(name="redis", status="ok", reason="not configured: one replica, coordination in process")
    # Redis's client (~0.5 s of imports) loads only for a deployment that has a REDIS_URL.
    import redis.asyncio as redis

    client = redis.from_url(settings.redis_url, socket_connect_timeout=SERVICE_TIMEOUT, socket_timeout=SERVICE_TIMEOUT)
    try:
        await client.ping()
    except (redis.RedisError, OSError) as exc:
        return Check(name="redis", status="fail", reason=f"cannot reach {shown(settings.redis_url)} "
                     f"({type(exc).__name__}: {shorten(exc, 120)})",
                     fix="start Redis or correct REDIS_URL; replicas serve without it, degraded")
    finally:
        await client.aclose()
    return Check(name="redis", status="ok", reason=f"{shown(settings.redis_url)} answers PING")


async def check_database(settings: Settings) -> Check:
    url = settings.database_url
    parsed = make_url(url)
    if parsed.get_backend_name() == "sqlite" and parsed.database not in (None, "", ":memory:") and not (
            path := Path(parsed.database)).exists():
        return Check(name="database", status="warn", reason=f"no database yet at {path}",
                     fix="run `gateway apply -c gateway.yaml`, which creates it")
    engine = create_async_engine(url)
    try:
        async with engine.connect() as connection:
            await connection.execute(text("SELECT 1"))
    except DBAPIError as exc:
        reason = (str(exc.orig).strip().splitlines() or [type(exc.orig).__name__])[0]
        return Check(name="database", status="fail", reason=f"cannot use {shown(url)}: {shorten(reason, 160)}",
                     fix="is the database running, and is DATABASE_URL right?")
    except (SQLAlchemyError, OSError) as exc:
        return Check(name="database", status="fail", reason=f"cannot use {shown(url)}: {type(exc).__name__}",
                     fix="is the database running, and is DATABASE_URL right?")
    finally:
        await engine.dispose()
    return Check(name="database", status="ok", reason=f"{shown(url)} answers")
