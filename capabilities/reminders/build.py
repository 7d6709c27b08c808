"""The tools and builder of `reminders`, imported with its first build; its declaration (config, tools) is
`capabilities/reminders/__init__.py`."""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass
from datetime import datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

from pydantic import TypeAdapter, ValidationError
from pydantic_ai import ApprovalRequired, RunContext
from pydantic_ai.capabilities import Capability

from adapters.base import ChatAddress, Speaker
from capabilities.reminders import RemindersConfig
from capabilities.reminders.services import RemindersServices
from capabilities.run import BuildContext
from capabilities.run.tool_replies import function_toolset, retry_or_text
from storage.recurrence import cron_problem, next_after, readable
from storage.reminders import NewReminder, Reminder, Reminders
from storage.tables import utcnow

MAX_TEXT = 4_000
"""Characters of a reminder's text or instructions."""
MAX_AHEAD = timedelta(days=366)
"""How far ahead a reminder may be set."""
_RELATIVE = re.compile(r"^in\s+(\d{1,6})\s*(s|sec|secs|seconds?|m|min|mins|minutes?|h|hours?|d|days?|w|weeks?)$",
                       re.IGNORECASE)
_UNITS = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days", "w": "weeks"}
_CLOCK = re.compile(r"^(today|tomorrow)?\s*(?:at\s+)?([01]?\d|2[0-3]):([0-5]\d)$", re.IGNORECASE)
_DURATION: TypeAdapter[timedelta] = TypeAdapter(timedelta)


@dataclass(frozen=True, slots=True, kw_only=True)
class ReminderTools:
    """The four tools, bound to the run's conversation and speaker: no tool names a chat or a person."""

    store: Reminders
    config: RemindersConfig
    timezone: str
    bot_name: str
    address: ChatAddress
    speaker: Speaker
    owner_key: str

    async def schedule_message(self, ctx: RunContext[Any], when: str, text: str, repeat: str | None = None) -> str:
        """Post a message in this chat at a later time: a reminder the person asked for.

        Use it when someone asks to be reminded of something ("remind me tomorrow at nine to call Anna"). The text
        is posted as written, in this same chat, without you running again; to do work at that time (look
        something up, summarise), use `schedule_run` instead.

        Args:
            when: When to post, in this chat's time zone: `in 10 minutes`, `in 2 hours`, `in 3 days`, `PT90M`,
                `09:00` (the next 09:00), `tomorrow 09:00`, `2026-12-24 18:00`; up to a year ahead. With `repeat`,
                the first time on or after it (`now` for the next one).
            text: What to post, up to 4,000 characters, e.g. `Call Anna about the contract`.
            repeat: A cron expression (minute hour day month weekday, in this chat's time zone) to post it again
                and again, e.g. `0 9 * * 1-5` for 09:00 on weekdays; none (the default) posts it once. A repeating
                one may wait for a person's approval first.

        Returns:
            One line naming the reminder's number and when it first posts; or why it was not set.
        """
        return await self._schedule(ctx, "message", when, text, repeat)

    async def schedule_run(self, ctx: RunContext[Any], when: str, instructions: str,
                           repeat: str | None = None) -> str:
        """Run again in this chat at a later time, with instructions for what to do then.

        Use it when work must happen later ("tomorrow morning, check the build and tell me if it is red", "every
        Monday summarise last week's open issues"). You then run in this chat with the instructions as your task
        and your tools, and your answer is posted here.

        Args:
            when: When to run, in this chat's time zone: `in 10 minutes`, `in 2 hours`, `09:00`, `tomorrow 09:00`,
                `2026-12-24 18:00`; up to a year ahead. With `repeat`, the first time on or after it (`now`).
            instructions: What to do then, written as a task for yourself, up to 4,000 characters.
            repeat: A cron expression (minute hour day month weekday, in this chat's time zone) to run again and
                again, e.g. `0 8 * * 1` for 08:00 on Mondays; none (the default) runs once. A repeating one may
                wait for a person's approval first.

        Returns:
            One line naming the scheduled run's number and when it first runs; or why it was not set.
        """
        return await self._schedule(ctx, "run", when, instructions, repeat)

    async def list_schedules(self, ctx: RunContext[Any]) -> str:
        """List the reminders and scheduled runs set in this chat that have not finished.

        Use it before cancelling one, or when someone asks what is scheduled here.

        Returns:
            One line per reminder, soonest first: `#ID next at TIME: message|run "TEXT"`, with `(repeats: CRON)`
            for a repeating one; or one line saying nothing is scheduled here.
        """
        reminders = await self.store.active(conversation_key=self.address.conversation_key)
        if not reminders:
            return "Nothing is scheduled in this chat."
        return "\n".join(_line(reminder) for reminder in reminders)

    async def cancel_schedule(self, ctx: RunContext[Any], reminder_id: int) -> str:
        """Cancel a reminder or scheduled run of this chat, so it never fires again.

        Args:
            reminder_id: The number `list_schedules` shows for it (`#12` is 12).

        Returns:
            One line saying it was cancelled; or, when this chat has no such active reminder, why not.
        """
        if await self.store.cancel(reminder_id, conversation_key=self.address.conversation_key):
            return f"Cancelled #{reminder_id}."
        return retry_or_text(ctx, f"This chat has no active reminder #{reminder_id}; list_schedules shows "
                                  "the ones it has.")

    async def _schedule(self, ctx: RunContext[Any], mode: str, when: str, text: str, repeat: str | None) -> str:
        now = utcnow()
        first = self._first(when, repeat, now)
        if isinstance(first, str):
            return retry_or_text(ctx, first)
        text = text.strip()
        if not text or len(text) > MAX_TEXT:
            return retry_or_text(ctx, f"The text must hold 1 to {MAX_TEXT:,} characters; it holds {len(text):,}.")
        if (full := await self._full()) is not None:
            return full
        if repeat and self.config.recurring_approval and not ctx.tool_call_approved:
            raise ApprovalRequired()  # a message that repeats posts until someone cancels it: a person agrees first
        reminder = await self.store.add(NewReminder(
            bot_name=self.bot_name, conversation_key=self.address.conversation_key, address=asdict(self.address),
            speaker=asdict(self.speaker), owner_key=self.owner_key, mode=mode, text=text,
            recurrence=repeat.strip() if repeat else None, timezone=self.timezone, first_at=first))
        what = "Reminder" if mode == "message" else "Scheduled run"
        again = f", then again by `{reminder.recurrence}`" if reminder.recurrence else ""
        return f"{what} #{reminder.id} set for {readable(first, self.timezone)}{again}, in this chat."

    def _first(self, when: str, repeat: str | None, now: datetime) -> datetime | str:
        """The first firing, or why there is none."""
        if repeat is not None and repeat.strip():
            if len(repeat.split()) != 5:
                return "`repeat` takes five cron fields (minute hour day month weekday), e.g. '0 9 * * 1-5'"
            if problem := cron_problem(repeat.strip()):
                return problem
            start = now if when.strip().lower() in ("", "now") else moment_of(when, self.timezone, now)
            if isinstance(start, str):
                return start
            return next_after(repeat.strip(), self.timezone, start - timedelta(seconds=1))
        return moment_of(when, self.timezone, now)

    async def _full(self) -> str | None:
        """Why no further reminder may be set here, or None."""
        mine = await self.store.count(owner_key=self.owner_key)
        if mine >= self.config.max_per_person:
            return (f"Not set: this person has {mine} active reminders, the most allowed "
                    f"({self.config.max_per_person}). Cancel one first, or tell them.")
        here = await self.store.count(conversation_key=self.address.conversation_key)
        if here >= self.config.max_per_conversation:
            return (f"Not set: this chat has {here} active reminders, the most allowed "
                    f"({self.config.max_per_conversation}). Cancel one first, or tell them.")
        return None


def moment_of(when: str, timezone: str, now: datetime) -> datetime | str:
    """The time `when` names, read in `timezone`; or why it names none (in the past, too far ahead, unreadable)."""
    text = " ".join(when.strip().split())
    zone = ZoneInfo(timezone)
    moment: datetime | None = None
    if relative := _RELATIVE.match(text):
        moment = now + timedelta(**{_UNITS[relative[2][0].lower()]: int(relative[1])})
    elif clock := _CLOCK.match(text):
        local = now.astimezone(zone).replace(hour=int(clock[2]), minute=int(clock[3]), second=0, microsecond=0)
        if (clock[1] or "").lower() == "tomorrow" or (local <= now and not clock[1]):
            local += timedelta(days=1)
        moment = local
    elif text.upper().startswith("P"):
        try:
            moment = now + _DURATION.validate_python(text)
        except ValidationError:
            moment = None
    else:
        try:
            parsed = datetime.fromisoformat(text)
            moment = parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=zone)
        except ValueError:
            moment = None
    if moment is None:
        return (f"{when!r} is not a time I can read; write `in 10 minutes`, `in 2 hours`, `09:00`, "
                "`tomorrow 09:00` or `2026-12-24 18:00`.")
    if moment <= now:
        return f"{when!r} is in the past ({readable(moment, timezone)}); give a later time."
    if moment - now > MAX_AHEAD:
        return f"{when!r} is more than a year ahead; give an earlier time."
    return moment


def _line(reminder: Reminder) -> str:
    when = readable(reminder.next_fire_at, reminder.timezone) if reminder.next_fire_at else "(done)"
    repeats = f" (repeats: {reminder.recurrence})" if reminder.recurrence else ""
    return f'#{reminder.id} next at {when}: {reminder.mode} "{reminder.text}"{repeats}'


def build(context: BuildContext[RemindersConfig]) -> Capability[Any]:
    services = context.bound(RemindersServices)
    run = context.run
    zone = context.config.timezone or services.clock_zones.get(run.agent_name, "UTC")
    tools = ReminderTools(store=services.reminders, config=context.config, timezone=zone,
                          bot_name=run.address.bot_id, address=run.address, speaker=context.speaker,
                          owner_key=run.user_key or f"speaker:{context.speaker.platform_user_id}")
    toolset = function_toolset([tools.schedule_message, tools.schedule_run, tools.list_schedules,
                                tools.cancel_schedule], toolset_id="reminders")
    return Capability(toolsets=[toolset])
