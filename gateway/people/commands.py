"""What a person can ask any bot in a DM without a model run: `link`, `link CODE`, `unlink`, `forget`.

In a group these words are ordinary messages, so a code is never issued where others read it, nor
accepted from there; only `link CODE` typed in a group is answered here, with where codes work, and
the code it shows stops working, since others could read it. Command turns stay out of the
conversation history, so a code never lands in a transcript or a log.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence

from adapters.base import Inbound
from capabilities.run import Deleted, Held, MemoryOwner, PersonalStore
from gateway.people.identities import (
    CODE_ALPHABET,
    CODE_LENGTH,
    CODE_LIFETIME,
    Identities,
    Linked,
    Redemption,
    normalize_code,
)
from storage.reminders import Reminders

log = logging.getLogger(__name__)

COMMAND = re.compile(r"^/?(?:(?P<link>link)(?:\s+(?P<code>[A-Za-z0-9-]{1,20}))?|(?P<unlink>unlink)"
                      r"|(?P<forget>forget)(?:\s+(?P<yes>yes))?)$", re.IGNORECASE)

LINK_HELP = ("Your link code is `{code}`. Within {minutes} minutes, send `link {code}` in a direct message to "
             "a bot of this gateway on your other platform. It works once, and asking for a new code cancels "
             "this one.")
LINKED = "Linked with {label}. Both accounts now reach the same notes; send `unlink` to undo it."
INVALID_CODE = ("That code is not valid: mistyped, already used or expired. Send `link` on your other account "
                "for a new one ({left} attempt(s) left before linking pauses).")
LOCKED = "Too many wrong codes: linking is paused for this account until {until:%H:%M} UTC."
OWN_CODE = "That code was issued to this account; send it from your other account."
UNLINKED = ("Unlinked. Your other accounts keep the notes you shared; this account starts with none and "
            "can be linked again with `link`.")
NOT_LINKED = "This account is not linked to another one."
FORGET_ASK = ("This deletes everything every agent of this gateway remembers about you ({counted}), on every "
              "account linked to this one. It cannot be undone. Send `forget yes` to confirm.")
FORGET_REMINDERS = " It also deletes the {reminders} reminder(s) you set, so none of them will fire."
NOTHING_TO_FORGET = "No agent of this gateway remembers anything about you."
FORGOTTEN = "Done: {counted} deleted. No agent of this gateway remembers anything about you now."
FORGOTTEN_EXCEPT = ("{counted} deleted, but {unreached} could not be reached, so what they remember about you there "
                    "is not deleted yet. Send `forget yes` again later.")
NOTHING_COUNTED = "nothing this gateway can count"
"""In place of the counts where no capability counts what it keeps."""
CODE_IN_GROUP = ("Link codes work in a direct message: send `link CODE` to a bot of this gateway in a direct "
                 "message on your other platform.")
CODE_IN_GROUP_RETIRED = ("Link codes work in a direct message. That code no longer works, since others here could "
                         "read it: send `link` in a direct message for a new one.")


class DirectCommands:
    def __init__(self, *, identities: Identities, stores: Sequence[PersonalStore],
                 reminders: Reminders | None = None) -> None:
        self._identities = identities
        self._stores = tuple(stores)
        """What every capability keeps about people (`Registry.personal_stores`), bound by an agent or not."""
        self._reminders = reminders
        """The reminders people set, which `forget` deletes too; None: no agent sets any."""

    async def answer(self, inbound: Inbound, identity_id: int) -> str:
        """Carry out a command the command step recognized (`COMMAND`), and say what happened."""
        match = COMMAND.match(inbound.text.strip())
        if match is None:
            raise ValueError("not a command; match `COMMAND` first")
        if not inbound.address.is_direct:
            retired = await self._identities.retire_code(match["code"])
            log.info("a link code was typed in a group (%s)", "retired" if retired else "no live code")
            return CODE_IN_GROUP_RETIRED if retired else CODE_IN_GROUP
        if match["link"]:
            return await (self._redeem(identity_id, match["code"]) if match["code"] else self._issue(identity_id))
        if match["unlink"]:
            return UNLINKED if await self._identities.unlink(identity_id) else NOT_LINKED
        return await self._forget(identity_id, confirmed=match["yes"] is not None)

    async def _issue(self, identity_id: int) -> str:
        issued = await self._identities.issue_code(identity_id)
        log.info("identity %d was issued a link code", identity_id)
        return LINK_HELP.format(code=issued.code, minutes=int(CODE_LIFETIME.total_seconds() // 60))

    async def _redeem(self, identity_id: int, code: str) -> str:
        outcome: Redemption = await self._identities.redeem(identity_id, code)
        if isinstance(outcome, Linked):
            log.info("identity %d linked with identity %d as person %d", identity_id, outcome.other.id,
                     outcome.person_id)
            return LINKED.format(label=outcome.other.label)
        log.info("identity %d: link code refused (%s)", identity_id, outcome.reason)
        if outcome.reason == "locked":
            return LOCKED.format(until=outcome.locked_until)
        if outcome.reason == "own_code":
            return OWN_CODE
        return INVALID_CODE.format(left=outcome.attempts_left)

    async def _forget(self, identity_id: int, *, confirmed: bool) -> str:
        owners = await self._identities.owners_of_identity(identity_id)
        if not confirmed:
            return await self._ask_to_forget(owners)
        deleted = [await store.delete(owners) for store in self._stores]
        if self._reminders is not None:
            await self._reminders.delete_owned(reminder_owners(owners))
        unreached = [part.unreached for part in deleted if part.unreached]
        log.info("identity %d: forgot %s across every agent; %d store(s) not reached", identity_id,
                 counted(deleted), len(unreached))
        if unreached:
            return FORGOTTEN_EXCEPT.format(counted=counted(deleted), unreached=" and ".join(unreached))
        return FORGOTTEN.format(counted=counted(deleted))

    async def _ask_to_forget(self, owners: list[MemoryOwner]) -> str:
        held = [await store.held(owners) for store in self._stores]
        reminders = await self._reminders.count_owned(reminder_owners(owners)) if self._reminders else 0
        if not reminders and not any(part.anything for part in held):
            return NOTHING_TO_FORGET
        ask = " ".join([FORGET_ASK.format(counted=counted(held)), *(part.uncounted for part in held if part.uncounted)])
        return ask + (FORGET_REMINDERS.format(reminders=reminders) if reminders else "")


def counted(parts: Sequence[Held | Deleted]) -> str:
    """What the capabilities counted, as one phrase ("2 note(s)")."""
    return ", ".join(part.counted for part in parts if part.counted) or NOTHING_COUNTED


def reminder_owners(owners: list[MemoryOwner]) -> list[str]:
    """The keys the reminders of these owners are set under (`person:<id>`, `identity:<id>`)."""
    return [f"{owner.kind}:{owner.key}" for owner in owners if owner.personal]


def code_shaped(text: str | None) -> bool:
    code = normalize_code(text or "")
    return len(code) == CODE_LENGTH and set(code) <= set(CODE_ALPHABET)
