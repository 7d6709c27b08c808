"""The `gateway` command: check, apply, serve, demo."""

from __future__ import annotations

import asyncio
import json
import signal
from pathlib import Path
from typing import Annotated

import typer

from gateway.config import ConfigError, GatewayConfig, Settings, load_config
from gateway.logs import configure_logging
from gateway.secrets import SecretSource

app = typer.Typer(help="chat-gateway: pydantic-ai agents in Slack, Mattermost and Telegram.", no_args_is_help=True,
                  pretty_exceptions_enable=False)

ConfigOption = Annotated[Path, typer.Option("--config", "-c", "--file", "-f", help="Path to gateway.yaml.")]


@app.command()
def check(config: ConfigOption = Path("gateway.yaml")) -> None:
    """Validate a config file without connecting anywhere."""
    loaded = _load(config)
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
    loaded = _load(config)
    asyncio.run(_serve(loaded, Settings()))


@app.command()
def demo() -> None:
    """Run a short conversation offline: a local Telegram server, SQLite, and a scripted model."""
    from gateway.demo import run_demo

    configure_logging("WARNING")
    asyncio.run(run_demo(typer.echo))


@app.command()
def approvals(limit: Annotated[int, typer.Option(help="How many rows to show.")] = 50) -> None:
    """List pending approvals, then recent decisions: what was asked, by whom, who decided, when."""
    from gateway.approvals import Approvals
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


def _load(path: Path) -> GatewayConfig:
    try:
        return load_config(path)
    except ConfigError as exc:
        typer.echo(str(exc), err=True)
        raise typer.Exit(2) from None


async def _apply(config: GatewayConfig, settings: Settings) -> object:
    from gateway.bindings import BindingStore
    from storage.db import Database
    from storage.migrate import upgrade

    db = Database(settings.database_url)
    try:
        await upgrade(db)
        return await BindingStore(db).apply(config)
    finally:
        await db.close()


async def _serve(config: GatewayConfig, settings: Settings) -> None:
    from gateway.app import Gateway

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
