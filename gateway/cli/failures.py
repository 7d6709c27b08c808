"""How the `gateway` command fails: one line naming the fix, a non-zero exit, a traceback only with --debug.

Every command raises; `GatewayGroup` alone turns what it raised into that line (`explain`), so no
command catches an exception only to print it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import typer
from typer.core import TyperGroup

from gateway.config.errors import ConfigError
from gateway.config.secrets import SecretsFileMissing
from gateway.server.errors import StartupError

CONFIG_EXIT = 2
"""The exit status of a mistake in gateway.yaml or the settings, as for a usage error."""


class OperatorError(Exception):
    """A failure the operator fixes; its message is the one line to print."""

    def __init__(self, message: str, *, exit_code: int = 1) -> None:
        super().__init__(message)
        self.exit_code = exit_code


@dataclass(frozen=True, slots=True, kw_only=True)
class Failure:
    line: str
    exit_code: int


def explain(exc: BaseException) -> Failure:
    """The line and exit status for anything a command raised."""
    match exc:
        case OperatorError():
            return Failure(line=str(exc), exit_code=exc.exit_code)
        case ConfigError() | SecretsFileMissing():
            return Failure(line=str(exc), exit_code=CONFIG_EXIT)
        case StartupError():
            return Failure(line=str(exc), exit_code=1)
    first = (str(exc).strip().splitlines() or [""])[0][:300]
    return Failure(line=f"unexpected error: {type(exc).__name__}{': ' + first if first else ''} "
                        "(run again with --debug for the traceback)", exit_code=1)


class GatewayGroup(TyperGroup):
    """The top-level command group: a command's exception becomes `explain`'s line unless `--debug` is given."""

    def invoke(self, ctx: typer.Context) -> Any:  # pyright: ignore[reportIncompatibleMethodOverride] - typer's Context is its Click's
        try:
            return super().invoke(ctx)
        except (typer.TyperException, typer.Exit, typer.Abort):
            # Usage errors (Typer's own Click, whose exceptions derive from TyperException), exits and a declined
            # prompt: Typer prints and exits as it always does, a usage error with status 2.
            raise
        except Exception as exc:
            if ctx.params.get("debug"):
                raise
            failure = explain(exc)
            typer.echo(failure.line, err=True)
            raise typer.Exit(failure.exit_code) from None
