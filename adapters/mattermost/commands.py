"""The gateway's commands as Mattermost custom slash commands, where the bot account may create them.

Mattermost's client takes a message that starts with `/` as a slash command and refuses one it does not know, so a
command typed as `/new` reaches the bot only as a slash command; the plain word (`new`) is an ordinary post and
works everywhere. The slash commands are created in each team of the bot (`POST /api/v4/commands`, trigger word,
method POST, the gateway's `commands` route as the URL), once: one already there with that trigger and URL is
kept. Mattermost signs each call with the command's own token (`Authorization: Token …`), learned here when the
commands are created or listed, on every replica. A word Mattermost keeps for itself (`/help`, `/status`) is
registered under `SLASH_PREFIX` (`/agent-status`).
"""

from __future__ import annotations

import hmac
import logging
from collections.abc import Mapping, Sequence
from typing import Any

from adapters.base import MenuCommand, VerificationError
from adapters.mattermost.rest import MattermostApi

MATTERMOST_BUILT_IN = frozenset({"away", "code", "collapse", "dnd", "echo", "expand", "groupmsg", "header", "help",
                                 "invite", "invite_people", "join", "kick", "leave", "logout", "me", "msg", "mute",
                                 "offline", "online", "open", "purpose", "remove", "rename", "search", "settings",
                                 "shortcuts", "shrug", "status"})
"""The server's own slash commands (`app/slashcommands`), whose triggers a custom command cannot take."""
log = logging.getLogger(__name__)

SLASH_PREFIX = "agent-"
SLASH_EVENT = "slash_command"
"""The payload a slash command call is handed to `parse` as: `{"event": SLASH_EVENT, "data": {…its fields…}}`."""


def trigger(word: str) -> str:
    return f"{SLASH_PREFIX}{word}" if word in MATTERMOST_BUILT_IN else word


def slash_word(command: str) -> str:
    """`/new` is `new`; `/agent-status` is `status`."""
    return command.removeprefix("/").removeprefix(SLASH_PREFIX)


class SlashCommands:
    """The bot's slash commands on its teams, and the tokens their calls carry."""

    def __init__(self, api: MattermostApi, *, url: str | None) -> None:
        """`url`: the gateway's `commands` route; None (no `server.public_url`): Mattermost could not call it."""
        self._api = api
        self._url = url
        self._tokens: set[str] = set()

    async def register(self, teams: Sequence[Mapping[str, Any]], commands: Sequence[MenuCommand]) -> None:
        """Create the commands each team lacks, and learn every token. Raises what the server answered a refusal
        with (a bot without the permission to manage slash commands gets a 403)."""
        if self._url is None:
            log.info("no slash commands: without server.public_url Mattermost could not call them; the commands work "
                     "as words")
            return
        for team in teams:
            team_id = str(team.get("id") or "")
            existing = {str(c.get("trigger")): c for c in await self._api.team_commands(team_id)
                        if c.get("url") == self._url}
            for command in commands:
                found = existing.get(trigger(command.name)) or await self._api.create_command(
                    _command(team_id, command, self._url))
                if isinstance(token := found.get("token"), str) and token:
                    self._tokens.add(token)

    def verify(self, headers: Mapping[str, str]) -> None:
        """The call carries the token of one of the bot's commands. Raises `VerificationError`."""
        given = {k.lower(): v for k, v in headers.items()}.get("authorization", "").removeprefix("Token ").strip()
        if not self._tokens:
            raise VerificationError("no slash command of this bot is registered here; every call is refused")
        if not any(hmac.compare_digest(given.encode(), token.encode()) for token in self._tokens):
            raise VerificationError("missing or wrong slash command token")


def _command(team_id: str, command: MenuCommand, url: str) -> dict[str, Any]:
    return {"team_id": team_id, "trigger": trigger(command.name), "method": "P", "url": url,
            "display_name": command.name, "description": command.summary, "auto_complete": True,
            "auto_complete_desc": command.summary}
