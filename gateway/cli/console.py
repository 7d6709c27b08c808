"""`gateway console`: what the operator console needs from the command line, a password hash for gateway.yaml."""

from __future__ import annotations

import sys

import typer

from gateway.cli.failures import OperatorError

console_app = typer.Typer(help="The operator console in the browser (console: in gateway.yaml).", no_args_is_help=True)

SHORTEST = 12
"""Characters a console password has at least: it guards approvals and configuration changes."""


@console_app.command("hash")
def hash_command() -> None:
    """Read a password (asked twice on a terminal, else one line from standard input) and print its argon2 hash, for
    `console.operators[].password_hash` through an environment variable. The password is never echoed."""
    # The hasher loads when the command runs, as `gateway/cli/main.py` says why.
    from gateway.server.console.operators import hash_password

    if sys.stdin.isatty():
        password = typer.prompt("Password", hide_input=True, confirmation_prompt=True)
    else:
        password = sys.stdin.readline().rstrip("\r\n")
    if len(password) < SHORTEST:
        raise OperatorError(f"the password has {len(password)} characters; use at least {SHORTEST}")
    typer.echo(hash_password(password))
