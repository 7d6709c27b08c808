"""`schedules:` and `hooks:` in gateway.yaml: runs that start without a message, each posting in one chat of one
bot (`gateway/pipeline/scheduler.py`, `gateway/pipeline/hooks.py`)."""

from __future__ import annotations

import base64
import binascii
import re
from typing import TYPE_CHECKING, Literal

from pydantic import Field, field_validator, model_validator

from capabilities.registry.config_errors import Problem
from gateway.config.fields import SecretReference, Strict
from storage.recurrence import cron_problem, zone_problem

if TYPE_CHECKING:
    from gateway.config.schema import GatewayConfig


class _Destination(Strict):
    """Where a run that starts without a message posts: a chat of one bot, named as the platform names it."""

    name: str = Field(pattern=r"^[a-z0-9][a-z0-9_-]{0,62}$")
    """Lower-case letters, digits, `_-`: the name in logs, metrics and the firing's unique key."""
    bot: str
    """The bot that posts, by name; the run is that bot's agent's, under its binding."""
    chat: str = Field(min_length=1, max_length=128)
    """Where to post, as the platform names it: a Telegram chat id (`-1001234567890`, or a person's id for their
    private chat), a Slack channel id (`C0123ABCD`), a Mattermost channel id (26 characters)."""
    thread: str | None = Field(default=None, max_length=128)
    """A thread to post in: a Slack thread's `ts`, a Mattermost root post id, a Telegram forum topic id; none: the
    chat itself."""


class ScheduleSpec(_Destination):
    """An operator's schedule: at each cron time, a message posted (`text`) or a run of the bot's agent (`prompt`)."""

    cron: str
    """Five fields (minute hour day month weekday: `0 9 * * 1-5`), six with seconds last, or `@daily`-style."""
    timezone: str = "UTC"
    """The IANA time zone the cron expression is read in, e.g. `Europe/Warsaw`."""
    prompt: str | None = Field(default=None, min_length=1)
    """What the agent is asked at each firing (a run, with its tools, approvals and budgets)."""
    text: str | None = Field(default=None, min_length=1)
    """Posted as written at each firing, without a model run."""
    missed: Literal["late", "skip"] = "late"
    """A firing due while no replica ran: `late` posts it once on the next start, saying when it was due (several
    missed ones are one); `skip` leaves it out."""

    @field_validator("cron")
    @classmethod
    def _cron(cls, value: str) -> str:
        if problem := cron_problem(value):
            raise ValueError(problem)
        return value

    @field_validator("timezone")
    @classmethod
    def _zone(cls, value: str) -> str:
        if problem := zone_problem(value):
            raise ValueError(problem)
        return value

    @model_validator(mode="after")
    def _one_action(self) -> ScheduleSpec:
        if (self.prompt is None) == (self.text is None):
            raise ValueError("give exactly one of prompt (the agent runs) or text (posted as written)")
        return self


class HookSpec(_Destination):
    """A webhook that starts a run: `POST /hooks/{name}`, signed with `secret`, its body handed to the agent."""

    secret: SecretReference
    """A `${ENV_VAR}` reference to the shared secret senders sign with: the raw body (HMAC-SHA256, sent as
    `X-Signature-256: sha256=<hex>`, GitHub's form), or Standard Webhooks' `id.timestamp.body` (a `whsec_` key)."""
    prompt_template: str = Field(min_length=1)
    """What the agent is asked; the body follows it, framed as data from the sender, never instructions.
    `{hook}` and `{delivery}` are replaced by the hook's name and the delivery's id."""
    max_bytes: int = Field(default=256 * 1024, gt=0, le=2**20)
    """Largest body taken, in bytes (at most 1 MiB); a larger one is refused with 413."""


STANDARD_KEY_PREFIX = "whsec_"


def hook_key(secret: str) -> bytes:
    """The HMAC key of a hook's secret: a `whsec_` secret is its base64 key, as Standard Webhooks senders give it;
    any other is its own bytes. Raises `binascii.Error` for a `whsec_` secret that is not base64."""
    if secret.startswith(STANDARD_KEY_PREFIX):
        return base64.b64decode(secret.removeprefix(STANDARD_KEY_PREFIX), validate=True)
    return secret.encode()


def hook_secret_problem(secret: str) -> str | None:
    """Why a hook's secret would refuse every call (`gateway check` and the start say it); None: it is usable."""
    try:
        hook_key(secret)
    except binascii.Error:
        return (f"holds a {STANDARD_KEY_PREFIX} key that is not base64; paste the signing secret exactly as the "
                "sender shows it")
    return None


CHAT_IDS = {"telegram": (re.compile(r"^-?[0-9]{1,20}$"), "a Telegram chat id such as -1001234567890"),
            "slack": (re.compile(r"^[CGD][A-Z0-9]{2,20}$"), "a Slack channel id such as C0123ABCD"),
            "mattermost": (re.compile(r"^[a-z0-9]{26}$"), "a Mattermost channel id (26 lower-case letters and digits)")}
"""How each platform names a chat, so a schedule's or hook's `chat` that could never be posted in is refused."""


def destination_problems(config: GatewayConfig) -> list[Problem]:
    """Each schedule and hook names a bot of this config and a chat as that bot's platform names one."""
    bots = {bot.name: bot for bot in config.bots}
    problems = _twice("schedules", [s.name for s in config.schedules]) + _twice("hooks", [h.name for h in config.hooks])
    for section, destinations in (("schedules", config.schedules), ("hooks", config.hooks)):
        for i, destination in enumerate(destinations):
            bot = bots.get(destination.bot)
            if bot is None:
                problems.append(Problem(loc=(section, i, "bot"),
                                        message=f"{destination.bot!r} is not one of bots ({', '.join(sorted(bots))})"))
                continue
            shape, example = CHAT_IDS[bot.platform]
            if not shape.match(destination.chat):
                problems.append(Problem(loc=(section, i, "chat"),
                                        message=f"{destination.chat!r} is not {example}, so bot {bot.name!r} "
                                                "cannot post there"))
    return problems


def _twice(section: str, names: list[str]) -> list[Problem]:
    """A name given to two entries of `section`, at its second place."""
    return [Problem(loc=(section, at, "name"), message=f"{name!r} is used twice in {section}; give each one a name "
                                                       "of its own")
            for at, name in enumerate(names) if name in names[:at]]
