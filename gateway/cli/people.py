"""`gateway identities` and `gateway memory`: who is who, and deleting what agents remember.

There is no command that prints a note: an operator reading what an agent wrote about a colleague is
the failure memory is designed against. Deletion is what an admin can do.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Annotated, NoReturn, TypeVar

import typer

from gateway.config.secrets import SecretSource

if TYPE_CHECKING:
    from capabilities.run import Deleted, PersonalStore
    from gateway.people.identities import Identity
    from storage.db import Database

T = TypeVar("T")

identities_app = typer.Typer(help="List speakers' identities, link two of them into one person, or unlink one.")
memory_app = typer.Typer(help="Delete what agents remember about a person, or everything one agent remembers.",
                         no_args_is_help=True)

Yes = Annotated[bool, typer.Option("--yes", "-y", help="Do not ask for confirmation.")]


@identities_app.callback(invoke_without_command=True)
def identities(ctx: typer.Context) -> None:
    """Without a subcommand: list every identity, grouped by the person it is linked to."""
    if ctx.invoked_subcommand is None:
        list_identities()


@identities_app.command("list")
def list_identities() -> None:
    """Every identity (platform, workspace, user id, handle, name) and its person."""
    # Each command imports the stores and the database when it runs, as `gateway/cli/main.py` says why.
    from gateway.people.identities import Identities

    rows = _run(lambda db: Identities(db).all())
    if not rows:
        typer.echo("no identities yet: nobody has talked to a bot of this gateway")
    for identity in rows:
        typer.echo(_line(identity))


@identities_app.command("link")
def link(first: Annotated[int, typer.Argument(help="An identity id from `gateway identities`.")],
         second: Annotated[int, typer.Argument(help="The identity id to link it with.")]) -> None:
    """Make two identities one person: both then reach the same personal notes."""
    from gateway.people.identities import Identities

    if first == second:
        _fail(f"identity {first} cannot be linked to itself")

    async def linked(db: Database) -> int:
        return await Identities(db, stores=await _personal_stores(db)).link(first, second)
    person = _run(linked)
    typer.echo(f"identities {first} and {second} are now person {person}")


@identities_app.command("unlink")
def unlink(identity: Annotated[int, typer.Argument(help="The identity id to detach from its person.")]) -> None:
    """Detach one identity from its person; the person's notes stay with the identities still linked."""
    from gateway.people.identities import Identities

    if _run(lambda db: Identities(db).unlink(identity)):
        typer.echo(f"identity {identity} unlinked; it starts with no personal notes")
    else:
        typer.echo(f"identity {identity} is not linked to another identity")


@memory_app.command("delete")
def delete(person: Annotated[int | None, typer.Option(help="A person id: every identity linked to it.")] = None,
           identity: Annotated[int | None, typer.Option(help="An identity id: its person's notes when linked.")]
           = None, yes: Yes = False) -> None:
    """Delete everything every agent remembers about one person (their one-to-one notes; rooms keep theirs) and the
    reminders they set."""
    from gateway.people.commands import counted, reminder_owners
    from gateway.people.identities import Identities
    from storage.reminders import Reminders

    if (person is None) == (identity is None):
        _fail("name exactly one of --person or --identity (ids from `gateway identities`)")
    who = f"person {person}" if person is not None else f"identity {identity}"
    if not yes:
        typer.confirm(f"Delete every note any agent keeps about {who}, and the reminders they set?", abort=True)

    async def forget(db: Database) -> tuple[list[Deleted], int]:
        people = Identities(db)
        owners = await (people.owners_of_person(person) if person is not None
                        else people.owners_of_identity(identity or 0))
        deleted = [await store.delete(owners) for store in await _personal_stores(db)]
        return deleted, await Reminders(db).delete_owned(reminder_owners(owners))

    deleted, reminders = _run(forget)
    typer.echo(f"deleted {counted(deleted)} and {reminders} reminder(s) of {who}")
    problems = [problem for part in deleted for problem in part.problems]
    for problem in problems:
        typer.echo(f"{problem}; run this again once it answers", err=True)
    if problems:
        raise typer.Exit(1)


@memory_app.command("clear")
def clear(agent: Annotated[str, typer.Option(help="The agent's name, as in gateway.yaml.")], yes: Yes = False) -> None:
    """Delete every note one agent keeps, for every person and room."""
    from gateway.people.commands import counted

    if not yes:
        typer.confirm(f"Delete every note agent {agent!r} keeps, for everyone?", abort=True)

    async def cleared(db: Database) -> list[Deleted]:
        return [await store.clear(agent) for store in await _personal_stores(db)]
    typer.echo(f"deleted {counted(_run(cleared))} of agent {agent}")


async def _personal_stores(db: Database) -> list[PersonalStore]:
    """What every capability keeps about people, bound by an applied agent or not; mem0 reaches the agents applied to
    this database that bind `memory_mem0`, with their keys from this environment."""
    from sqlalchemy import Connection, select

    from capabilities.run import Deployment
    from gateway.checks.validation import deployment_registry
    from gateway.config.schema import AgentSpec, GatewayConfig, Settings
    from storage.tables import AGENTS

    def applied(connection: Connection) -> list[AgentSpec]:
        return [AgentSpec.model_validate(spec) for spec in connection.execute(select(AGENTS.c.spec)).scalars()]
    settings = Settings()
    # Only the applied agents: what a store reads of the config here (no bot of this database is running).
    config = GatewayConfig.model_construct(agents=await db.run(applied, single=True), bots=[])
    deployment = Deployment(db=db, config=config, settings=settings, secrets=SecretSource.load(settings.secrets_file))
    return deployment_registry(settings).personal_stores(deployment)


def _line(identity: Identity) -> str:
    from storage.tables import utcnow

    handle = f"@{identity.handle}" if identity.handle else "-"
    person = f"person {identity.person_id}" if identity.person_id is not None else "unlinked"
    where = f"{identity.platform}/{identity.workspace}" if identity.workspace else identity.platform
    paused = identity.link_locked_until
    locked = f"  linking paused until {paused:%Y-%m-%d %H:%M} UTC" if paused and paused > utcnow() else ""
    return (f"{identity.id:>5}  {where:<24} {identity.platform_user_id:<16} {handle:<20} "
            f"{identity.display_name:<24} {person}{locked}")


def _run(work: Callable[[Database], Awaitable[T]]) -> T:
    from gateway.cli.database import existing_database
    from gateway.config.schema import Settings
    from gateway.people.identities import UnknownIdentity

    async def main() -> T:
        async with existing_database(Settings().database_url) as db:
            return await work(db)
    try:
        return asyncio.run(main())
    except UnknownIdentity as exc:
        _fail(str(exc))


def _fail(message: str) -> NoReturn:
    typer.echo(message, err=True)
    raise typer.Exit(1)
