"""The `gateway` command: check, apply, serve, demo, and Slack setup."""

from __future__ import annotations

import asyncio
import json
import signal
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from gateway.cli.people import identities_app, memory_app
from gateway.config.schema import ConfigError, GatewayConfig, Settings
from gateway.config.secrets import SecretSource
from gateway.server.logs import configure_logging

if TYPE_CHECKING:
    from capabilities.registry import Registry
    from gateway.config.check import Report

app = typer.Typer(help="chat-gateway: pydantic-ai agents in Slack, Mattermost and Telegram.", no_args_is_help=True,
                  pretty_exceptions_enable=False)

slack_app = typer.Typer(help="Setting up Slack apps.", no_args_is_help=True)
app.add_typer(slack_app, name="slack")
mattermost_app = typer.Typer(help="Setting up Mattermost bots.", no_args_is_help=True)
app.add_typer(mattermost_app, name="mattermost")
app.add_typer(identities_app, name="identities")
app.add_typer(memory_app, name="memory")

ConfigOption = Annotated[Path, typer.Option("--config", "-c", "--file", "-f", help="Path to gateway.yaml.")]


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
    report = asyncio.run(_apply(loaded, Settings()))
    for name, version in report.agents.items():
        typer.echo(f"agent {name}: version {version}")
    for bot in report.bots:
        typer.echo(f"bot {bot}: bound")


@app.command()
def serve(config: ConfigOption = Path("gateway.yaml"),
          log_level: Annotated[str, typer.Option(help="DEBUG, INFO, WARNING or ERROR.")] = "INFO") -> None:
    """Apply the config, then run the HTTP server, the transports and the workers until Ctrl-C."""
    configure_logging(log_level)
    report = _report(config)
    _echo_lines(report.lines(report.errors + report.unset))
    _echo_lines(report.lines(report.warnings, label="warning: "))
    if report.errors or report.unset or report.config is None:
        raise typer.Exit(2)
    asyncio.run(_serve(report.config, Settings()))


@app.command()
def demo() -> None:
    """Run a short conversation offline: a local Telegram server, SQLite, and a scripted model."""
    from gateway.cli.demo import run_demo

    configure_logging("WARNING")
    asyncio.run(run_demo(typer.echo))


@app.command()
def capabilities(as_json: Annotated[bool, typer.Option("--json", help="Print JSON with each config's "
                                                                   "JSON Schema, as the API serves it.")] = False
                 ) -> None:
    """List the capabilities this deployment offers: tools, scopes and whether a key is needed."""
    registry = _registry(Settings())
    if as_json:
        typer.echo(json.dumps({"capabilities": registry.describe()}, indent=2))
        return
    rows = [("id", "name", "category", "scope", "key", "tools")]
    for entry in registry.describe():
        rows.append((entry["id"] + (" (per binding)" if entry["granted_in"] == "binding" else ""), entry["name"],
                     entry["category"],
                     ", ".join(entry["scopes"]) + ("" if entry["available"] else " (not granted)") or "—",
                     "required" if entry["key"] else "—",
                     ", ".join(t["id"] for t in entry["tools"]) or "none, by design"))
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]) - 1)]
    for row in rows:
        typer.echo("  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=False)) + "  " + row[-1])


@app.command()
def approvals(limit: Annotated[int, typer.Option(help="How many rows to show.")] = 50) -> None:
    """List pending approvals, then recent decisions: what was asked, by whom, who decided, when."""
    from gateway.approvals.store import Approvals
    from storage.db import Database

    async def recent() -> list:
        db = Database(Settings().database_url)
        try:
            return await Approvals(db).recent(limit=limit)
        finally:
            await db.close()

    rows = asyncio.run(recent())
    if not rows:
        typer.echo("no approvals yet")
    for row in rows:
        args = " ".join(json.dumps(row.args, ensure_ascii=False).split())
        decided = (f"by {row.decided_by or 'nobody'} at {row.decided_at:%Y-%m-%d %H:%M}" if row.decided_at
                   else f"expires {row.expires_at:%Y-%m-%d %H:%M}")
        typer.echo(f"{row.status:<8} {row.tool_name}({args[:80]}) asked by {row.requester_name}, {decided} "
                   f"[{row.conversation_key}]")


@slack_app.command("manifest")
def slack_manifest(bot: Annotated[str, typer.Argument(help="The bot's name in the config.")],
                   config: ConfigOption = Path("gateway.yaml")) -> None:
    """Print the Slack app manifest (YAML) of BOT: paste it at api.slack.com/apps, Create New App, From a manifest."""
    from adapters.slack.manifest import build_slack_manifest, render_slack_manifest
    from gateway.config.schema import SlackBotSpec

    loaded = _load(config)
    spec = next((b for b in loaded.bots if b.name == bot), None)
    if not isinstance(spec, SlackBotSpec):
        slack_bots = ", ".join(b.name for b in loaded.bots if isinstance(b, SlackBotSpec)) or "none"
        typer.echo(f"{config}: {bot!r} is not a Slack bot of this config (Slack bots: {slack_bots})", err=True)
        raise typer.Exit(2)
    manifest = build_slack_manifest(name=spec.name, transport=spec.transport, public_url=loaded.server.public_url,
                                    description=f"{spec.agent}, an assistant served by chat-gateway")
    typer.echo(render_slack_manifest(manifest), nl=False)


@mattermost_app.command("doctor")
def mattermost_doctor(bot: Annotated[str, typer.Argument(help="The bot's name in the config.")],
                      config: ConfigOption = Path("gateway.yaml")) -> None:
    """Connect BOT to its server and say what to fix: token, team, channels, event stream, webhook token."""
    loaded = _load(config)
    settings = Settings()
    try:
        healthy = asyncio.run(run_doctor(loaded, bot, SecretSource.load(settings.secrets_file), typer.echo))
    except ConfigError as exc:
        typer.echo(f"{config}: {exc}", err=True)
        raise typer.Exit(2) from None
    if not healthy:
        raise typer.Exit(1)


async def run_doctor(config: GatewayConfig, bot_name: str, secrets: SecretSource, echo: Callable[[str], None]) -> bool:
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
    from gateway.config.check import check_file

    settings = Settings()
    return check_file(path, registry=_registry(settings), secrets=SecretSource.load(settings.secrets_file))


def _echo_lines(lines: list[str]) -> None:
    for line in lines:
        typer.echo(line, err=True)


def _registry(settings: Settings) -> Registry:
    from gateway.config.validation import deployment_registry

    try:
        return deployment_registry(settings)
    except ConfigError as exc:
        typer.echo(str(exc), err=True)
        raise typer.Exit(2) from None


async def _apply(config: GatewayConfig, settings: Settings) -> object:
    from gateway.agents.bindings import BindingStore
    from storage.db import Database
    from storage.migrate import upgrade

    db = Database(settings.database_url)
    try:
        await upgrade(db)
        return await BindingStore(db).apply(config)
    finally:
        await db.close()


async def _serve(config: GatewayConfig, settings: Settings) -> None:
    from gateway.server.app import Gateway

    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    gateway = Gateway(config, settings, secrets=SecretSource.load(settings.secrets_file))
    try:
        async with gateway:
            stopped = asyncio.create_task(stop.wait())
            crashed = asyncio.create_task(gateway.wait())
            await asyncio.wait({stopped, crashed}, return_when=asyncio.FIRST_COMPLETED)
            typer.echo("shutting down: finishing running turns; queued messages stay in the inbox", err=True)
    except ConfigError as exc:
        typer.echo(str(exc), err=True)
        raise typer.Exit(2) from None
