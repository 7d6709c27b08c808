"""The `gateway` command: check, apply, migrate, serve, demo, and Slack setup.

A command imports what it runs when it runs: the config schema, the capability catalog, pydantic-ai, the
database and the server stack take seconds of CPU to import, and `gateway --version`, `--help` or a usage
error should answer at once (`tests/cli/test_cli_startup.py` holds that).
"""

from __future__ import annotations

import asyncio
import json
import logging
import signal
from collections.abc import Callable
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from gateway.cli.console import console_app
from gateway.cli.failures import CONFIG_EXIT, GatewayGroup, OperatorError
from gateway.cli.knowledge import knowledge_app
from gateway.cli.mcp import mcp_app
from gateway.cli.people import identities_app, memory_app
from gateway.config.errors import ConfigError
from gateway.config.secrets import SecretSource
from gateway.server.logs import LogFormat, configure_logging, default_format

if TYPE_CHECKING:
    from capabilities.registry import Registry
    from gateway.agents.bindings import ApplyReport
    from gateway.checks.report import Report
    from gateway.config.schema import GatewayConfig, Settings

log = logging.getLogger("gateway.serve")

app = typer.Typer(help="chat-gateway: pydantic-ai agents in Slack, Mattermost and Telegram.", no_args_is_help=True,
                  pretty_exceptions_enable=False, cls=GatewayGroup,
                  context_settings={"help_option_names": ["-h", "--help"]})

slack_app = typer.Typer(help="Setting up Slack apps.", no_args_is_help=True)
app.add_typer(slack_app, name="slack")
mattermost_app = typer.Typer(help="Setting up Mattermost bots.", no_args_is_help=True)
app.add_typer(mattermost_app, name="mattermost")
app.add_typer(identities_app, name="identities")
app.add_typer(memory_app, name="memory")
app.add_typer(knowledge_app, name="knowledge")
app.add_typer(mcp_app, name="mcp")
app.add_typer(console_app, name="console")

ConfigOption = Annotated[Path, typer.Option("--config", "-c", "--file", "-f", help="Path to gateway.yaml.")]
LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR")


def _print_version(wanted: bool) -> None:
    if wanted:
        typer.echo(f"chat-gateway {metadata.version('chat-gateway')}")
        raise typer.Exit()


@app.callback()
def main(debug: Annotated[bool, typer.Option("--debug", help="Show the traceback of a failure, not just its line.")]
         = False,
         show_version: Annotated[bool, typer.Option("--version", callback=_print_version, is_eager=True,
                                                    help="Print the version and exit.")] = False) -> None:
    """Global options; `GatewayGroup` reads --debug when a command fails."""


@app.command()
def check(config: ConfigOption = Path("gateway.yaml")) -> None:
    """Validate a config file without connecting anywhere: every problem, and what this machine lacks to serve it."""
    report = _report(config)
    _echo_lines(report.lines(report.errors))
    _echo_lines(report.lines(report.unset + report.warnings, label="warning: "))
    if report.errors or report.config is None:
        raise typer.Exit(2)
    if report.unset:
        typer.echo("warning: gateway serve refuses to start on a machine where these are not set", err=True)
    loaded = report.config
    typer.echo(f"{config}: ok — {len(loaded.agents)} agent(s), {len(loaded.bots)} bot(s)")
    for bot in loaded.bots:
        typer.echo(f"  bot {bot.name}: {bot.platform} via {bot.transport}, answered by agent {bot.agent}")


@app.command()
def apply(config: ConfigOption = Path("gateway.yaml")) -> None:
    """Upsert agents, bots and bindings into the database."""
    loaded = _load(config)
    report = asyncio.run(_apply(loaded, _settings()))
    for name, version in report.agents.items():
        typer.echo(f"agent {name}: version {version}")
    for bot in report.bots:
        typer.echo(f"bot {bot}: bound")


@app.command()
def migrate(config: Annotated[Path | None, typer.Option(
        "--config", "-c", "--file", "-f", help="Path to gateway.yaml, checked before the schema is touched.")] = None
            ) -> None:
    """Bring the database schema (DATABASE_URL) up to date, once: for a deploy's one-shot job before `serve`."""
    from gateway.cli.database import shown

    if config is not None:
        _load(config)
    settings = _settings()
    revision = asyncio.run(_migrate(settings.database_url))
    typer.echo(f"database at {shown(settings.database_url)}: schema at revision {revision}")


@app.command()
def serve(config: ConfigOption = Path("gateway.yaml"),
          log_level: Annotated[str, typer.Option(help="DEBUG, INFO, WARNING or ERROR.")] = "INFO",
          log_format: Annotated[str | None, typer.Option(
              help="json or text; JSON lines by default when stderr is not a terminal.")] = None) -> None:
    """Apply the config, then run the HTTP server, the transports and the workers until Ctrl-C."""
    configure_logging(_log_level(log_level), _log_format(log_format))
    report = _report(config)
    _echo_lines(report.lines(report.errors + report.unset))
    for line in report.lines(report.warnings):
        log.warning("%s", line)  # a log line like any other, so a JSON collector reads it too
    if report.errors or report.unset or report.config is None:
        raise typer.Exit(2)
    _without_first_run_banner()
    asyncio.run(_serve(report.config, _settings()))


DEMO_PLATFORMS = ("telegram", "slack", "mattermost")


@app.command()
def demo(platform: Annotated[str, typer.Option(help="telegram, slack, mattermost, or all of them in turn.")]
         = "telegram") -> None:
    """Run a short conversation offline: a platform's local server, SQLite, and a scripted model."""
    from gateway.cli.demo import run_demo

    if platform not in (*DEMO_PLATFORMS, "all"):
        raise OperatorError(f"--platform: {platform!r} is not one of {', '.join(DEMO_PLATFORMS)}, all",
                            exit_code=CONFIG_EXIT)
    configure_logging("WARNING")
    _without_first_run_banner()
    asyncio.run(run_demo(typer.echo, DEMO_PLATFORMS if platform == "all" else (platform,)))  # type: ignore[arg-type]


@app.command()
def init(config: ConfigOption = Path("gateway.yaml"),
         platform: Annotated[str, typer.Option(help="Comma-separated: telegram, slack, mattermost.")] = "telegram"
         ) -> None:
    """Write a commented starter gateway.yaml with one bot per platform asked for (never overwrites a file)."""
    from gateway.cli.init import parse_platforms, render_starter_config

    try:
        platforms = parse_platforms(platform)
    except ValueError as exc:
        raise OperatorError(str(exc), exit_code=CONFIG_EXIT) from None
    if config.exists():
        raise OperatorError(f"{config} already exists; move it away or name another file with -c", exit_code=1)
    config.write_text(render_starter_config(platforms), encoding="utf-8")
    typer.echo(f"wrote {config} with a bot for {', '.join(platforms)}; next: set the tokens it names, then "
               f"`gateway check -c {config}`")


@app.command()
def schema() -> None:
    """Print the JSON Schema of gateway.yaml, for editors (`# yaml-language-server: $schema=FILE`)."""
    typer.echo(render_config_schema())


@app.command()
def chat(agent: Annotated[str, typer.Option(help="The agent's name, as in gateway.yaml.")],
         config: ConfigOption = Path("gateway.yaml")) -> None:
    """Talk to AGENT in the terminal through the real pipeline; approvals are y/n questions.

    The model `demo:scripted` and the capability `demo_ops` (a pretend service restart behind an approval)
    are available here too, so the flow can be tried before any model is connected.
    """
    from gateway.checks.validation import check_appliable
    from gateway.cli.chat import run_chat
    from gateway.cli.demo import demo_capability
    from gateway.config.schema import load_config

    registry = _registry(_settings()).with_extra(demo_capability())
    loaded = load_config(config)
    check_appliable(loaded, registry)
    if agent not in {a.name for a in loaded.agents}:
        raise OperatorError(f"{config}: agent {agent!r} is not one of {', '.join(a.name for a in loaded.agents)}",
                            exit_code=CONFIG_EXIT)
    configure_logging("WARNING")
    _without_first_run_banner()
    asyncio.run(run_chat(loaded, agent, secrets=SecretSource.load(_settings().secrets_file), registry=registry,
                         ask=_ask, say=typer.echo))


async def _ask(prompt: str) -> str | None:
    try:
        return await asyncio.to_thread(input, prompt)
    except EOFError:
        typer.echo()  # end the prompt's line
        return None


@app.command()
def capabilities(as_json: Annotated[bool, typer.Option("--json", help="Print JSON with each config's "
                                                                   "JSON Schema, as the API serves it.")] = False
                 ) -> None:
    """List the capabilities this deployment offers: tools, scopes and whether a key is needed."""
    registry = _registry(_settings())
    if as_json:
        typer.echo(json.dumps({"capabilities": registry.describe()}, indent=2))
        return
    rows = [("id", "name", "category", "scope", "key", "tools")]
    for entry in registry.describe():
        rows.append((entry["id"] + (" (per binding)" if entry["granted_in"] == "binding" else ""), entry["name"],
                     entry["category"],
                     ", ".join(entry["scopes"]) + ("" if entry["available"] else " (not granted)") or "—",
                     ("for some configs" if entry["key"]["conditional"] else "required") if entry["key"] else "—",
                     ", ".join(t["id"] for t in entry["tools"]) or "none, by design"))
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]) - 1)]
    for row in rows:
        typer.echo("  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=False)) + "  " + row[-1])


@app.command()
def approvals(limit: Annotated[int, typer.Option(help="How many rows to show.")] = 50) -> None:
    """List pending approvals, then recent decisions: what was asked, by whom, who decided, when."""
    from gateway.approvals.store import Approvals
    from gateway.cli.database import existing_database

    async def recent() -> list:
        async with existing_database(_settings().database_url) as db:
            return await Approvals(db).recent(limit=limit)

    rows = asyncio.run(recent())
    if not rows:
        typer.echo("no approvals yet")
    for row in rows:
        args = " ".join(json.dumps(row.args, ensure_ascii=False).split())
        decided = (f"by {row.decided_by or 'nobody'} at {row.decided_at:%Y-%m-%d %H:%M}" if row.decided_at
                   else f"expires {row.expires_at:%Y-%m-%d %H:%M}")
        typer.echo(f"{row.status:<8} {row.tool_name}({args[:80]}) asked by {row.requester_name}, {decided} "
                   f"[{row.conversation_key}]")


@app.command()
def schedules(config: ConfigOption = Path("gateway.yaml")) -> None:
    """List the schedules of gateway.yaml with their next firing, then the reminders agents set that are to come."""
    from gateway.cli import schedules as listing

    loaded = _load(config)
    for line in listing.lines(loaded.schedules, asyncio.run(listing.read(_settings().database_url))):
        typer.echo(line)


@slack_app.command("manifest")
def slack_manifest(bot: Annotated[str, typer.Argument(help="The bot's name in the config.")],
                   config: ConfigOption = Path("gateway.yaml")) -> None:
    """Print the Slack app manifest (YAML) of BOT: paste it at api.slack.com/apps, Create New App, From a manifest."""
    from adapters.slack.manifest import build_slack_manifest, render_slack_manifest
    from gateway.config.schema import SlackBotSpec
    from gateway.pipeline.steps.commands import menu

    loaded = _load(config)
    spec = next((b for b in loaded.bots if b.name == bot), None)
    if not isinstance(spec, SlackBotSpec):
        slack_bots = ", ".join(b.name for b in loaded.bots if isinstance(b, SlackBotSpec)) or "none"
        typer.echo(f"{config}: {bot!r} is not a Slack bot of this config (Slack bots: {slack_bots})", err=True)
        raise typer.Exit(2)
    manifest = build_slack_manifest(name=spec.name, transport=spec.transport, public_url=loaded.server.public_url,
                                    description=f"{spec.agent}, an assistant served by chat-gateway", commands=menu())
    typer.echo(render_slack_manifest(manifest), nl=False)


@mattermost_app.command("doctor")
def mattermost_doctor(bot: Annotated[str, typer.Argument(help="The bot's name in the config.")],
                      config: ConfigOption = Path("gateway.yaml")) -> None:
    """Connect BOT to its server and say what to fix: token, team, channels, event stream, webhook token."""
    loaded = _load(config)
    healthy = asyncio.run(run_mattermost_doctor(loaded, bot, SecretSource.load(_settings().secrets_file), typer.echo))
    if not healthy:
        raise typer.Exit(1)


@app.command()
def doctor(config: ConfigOption = Path("gateway.yaml"),
           as_json: Annotated[bool, typer.Option("--json", help="One JSON object (checks: name, status, reason, "
                                                 "fix) instead of lines, for CI.")] = False) -> None:
    """Whether this deployment will work: bots sign in, models answer with their keys, MCP servers list tools,
    capability keys are set, Redis and the database answer. No secret is printed; exit 1 when any check fails."""
    from gateway.cli.doctor import run_doctor

    loaded = _load(config)
    settings = _settings()
    if not asyncio.run(run_doctor(loaded, SecretSource.load(settings.secrets_file), settings, config_path=config,
                                  echo=typer.echo, as_json=as_json)):
        raise typer.Exit(1)


async def run_mattermost_doctor(config: GatewayConfig, bot_name: str, secrets: SecretSource,
                                echo: Callable[[str], None]) -> bool:
    """Print one line per check of `adapters/mattermost/doctor.py`; True when every check passed.

    Raises `ConfigError` for a bot that is not a Mattermost bot of `config`, or a secret that is not set.
    """
    from adapters.mattermost.doctor import checkup
    from gateway.config.schema import MattermostBotSpec, resolve_secret

    found = [(i, b) for i, b in enumerate(config.bots) if b.name == bot_name and isinstance(b, MattermostBotSpec)]
    if not found:
        names = ", ".join(b.name for b in config.bots if isinstance(b, MattermostBotSpec)) or "none configured"
        raise ConfigError(f"bots: {bot_name!r} is not a mattermost bot of this config (mattermost bots: {names})")
    index, bot = found[0]
    token = resolve_secret(bot.token, secrets, field=f"bots[{index}].token").get_secret_value()
    webhook_token = None
    if bot.webhook_token:
        webhook_token = resolve_secret(bot.webhook_token, secrets, field=f"bots[{index}].webhook_token")
    echo(f"bot {bot_name}: mattermost at {bot.api_base_url}")
    checks = await checkup(bot_id=bot.name, server_url=bot.api_base_url, token=token, team=bot.team,
                           streams=bot.transport == "websocket",
                           webhook_token=webhook_token.get_secret_value() if webhook_token else None)
    for check in checks:
        echo(f"  {'ok  ' if check.ok else 'FAIL'}  {check.text}")
    return all(check.ok for check in checks)


def _load(path: Path) -> GatewayConfig:
    """The config, refused (exit 2, every problem listed) unless it can be applied as it stands."""
    report = _report(path)
    _echo_lines(report.lines(report.errors))
    if report.errors or report.config is None:
        raise typer.Exit(2)
    return report.config


def _report(path: Path) -> Report:
    """Every problem of the file at `path`, as `check`, `apply` and `serve` report them."""
    from gateway.checks.report import check_file

    settings = _settings()
    return check_file(path, registry=_registry(settings), secrets=SecretSource.load(settings.secrets_file),
                      settings=settings)


def _echo_lines(lines: list[str]) -> None:
    for line in lines:
        typer.echo(line, err=True)


def render_config_schema() -> str:
    from gateway.config.schema import GatewayConfig

    return json.dumps(GatewayConfig.model_json_schema(), indent=2, ensure_ascii=False)


def _without_first_run_banner() -> None:
    """pydantic-ai prints a banner on a process's first agent run in a terminal (observability is off, set up
    Logfire); this process owns its output (the chat's prompt, the server's log lines) and traces through
    OpenTelemetry when OTEL_EXPORTER_OTLP_ENDPOINT is set, so it says no, the way pydantic-ai documents."""
    import pydantic_ai

    pydantic_ai.BANNER_ENABLED = False


def _settings() -> Settings:
    """The process settings from the environment (the schema module loads with the first command that asks)."""
    from gateway.config.schema import Settings

    return Settings()


def _log_format(name: str | None) -> LogFormat:
    if name is None:
        return default_format()
    if name.lower() not in ("json", "text"):
        raise OperatorError(f"--log-format: {name!r} is not one of json, text", exit_code=CONFIG_EXIT)
    return "json" if name.lower() == "json" else "text"


def _log_level(name: str) -> str:
    if name.upper() not in LOG_LEVELS:
        raise OperatorError(f"--log-level: {name!r} is not one of {', '.join(LOG_LEVELS)}", exit_code=CONFIG_EXIT)
    return name.upper()


def _registry(settings: Settings) -> Registry:
    from gateway.checks.validation import deployment_registry

    try:
        return deployment_registry(settings)
    except ConfigError as exc:
        typer.echo(str(exc), err=True)
        raise typer.Exit(2) from None


async def _apply(config: GatewayConfig, settings: Settings) -> ApplyReport:
    from gateway.agents.bindings import BindingStore
    from gateway.cli.database import database_errors
    from storage.db import Database
    from storage.migrate import upgrade

    db = Database(settings.database_url)
    try:
        with database_errors(settings.database_url):
            await upgrade(db)
            return await BindingStore(db).apply(config)
    finally:
        await db.close()


async def _migrate(url: str) -> str | None:
    from gateway.cli.database import database_errors
    from storage.db import Database
    from storage.migrate import current_revision, upgrade

    db = Database(url)
    try:
        with database_errors(url):
            await upgrade(db)
            return await current_revision(db)
    finally:
        await db.close()


async def _serve(config: GatewayConfig, settings: Settings) -> None:
    from gateway.cli.database import database_errors
    from gateway.server.app import Gateway

    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    gateway = Gateway(config, settings, secrets=SecretSource.load(settings.secrets_file))
    with database_errors(settings.database_url):
        async with gateway:
            stopped = asyncio.create_task(stop.wait())
            crashed = asyncio.create_task(gateway.wait())
            await asyncio.wait({stopped, crashed}, return_when=asyncio.FIRST_COMPLETED)
            log.info("shutting down: finishing running turns; queued messages stay in the inbox")
