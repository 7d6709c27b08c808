"""What a Mattermost bot account can do, in words an admin can act on (`gateway mattermost doctor`).

Mattermost's own answers to a wrong token or a bot outside its team are cryptic (`Invalid or expired
session`, an empty channel list), so the doctor connects and names the fix for each problem.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from adapters.base import PlatformConfigError
from adapters.mattermost.rest import MattermostApi, signed_in, websocket_url
from adapters.mattermost.socket import event_stream
from adapters.unreachable import describe_unreachable

ROOMS = ("O", "P")
"""Channel types of public and private channels; the others are direct and group messages."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Check:
    """One finding of `checkup`."""

    ok: bool
    text: str


def team_problem(teams: list[dict[str, Any]], team: str | None) -> str | None:
    """What is wrong with the bot's team memberships, in words an admin can act on; None when fine."""
    team_names = [str(t.get("name")) for t in teams]
    if not teams:
        return ("the bot account is in no team, so it sees no channel (direct messages only); add it to a team "
                "in System Console > User Management > Teams > Add Members")
    if team and not any(team in (t.get("name"), t.get("id"), t.get("display_name")) for t in teams):
        return (f"the bot account is not a member of team {team!r} (it is in {', '.join(team_names)}); "
                f"add it in System Console > User Management > Teams > {team} > Add Members")
    return None


async def checkup(*, bot_id: str, server_url: str, token: str, team: str | None, streams: bool,
                  webhook_token: str | None) -> list[Check]:
    """Connect and report what the bot account can do: token, id, team, channels, event stream, webhook.

    Args:
        streams: The bot takes its events from the event stream (`transport: websocket`).
    """
    api = MattermostApi(server_url=server_url, token=token)
    try:
        me = await signed_in(api, bot_id=bot_id, server_url=server_url)
    except PlatformConfigError as exc:
        return [Check(ok=False, text=str(exc))]
    except Exception as exc:  # the doctor reports any failure to connect instead of raising it
        return [Check(ok=False, text=describe_unreachable(server_url, exc))]
    user_id = me.get("id")
    signed = (f"signed in as @{me.get('username')}, user id {user_id}" if user_id else
              "signed in, but the server did not say the bot's user id: only direct messages would be answered")
    checks = [Check(ok=bool(user_id), text=signed)]
    teams = await api.my_teams()
    problem = team_problem(teams, team)
    checks.append(Check(ok=problem is None,
                        text=problem or f"member of team(s) {', '.join(str(t.get('name')) for t in teams)}"))
    kinds = await _channel_kinds(api, teams)
    rooms = sum(kind in ROOMS for kind in kinds)
    checks.append(Check(ok=True, text=f"member of {rooms} channel(s) and {len(kinds) - rooms} direct or group "
                                      f"conversation(s); invite it to a channel with `/invite @{me.get('username')}`"))
    if streams:
        checks.append(await _check_event_stream(server_url, token))
    if not webhook_token:
        checks.append(Check(ok=streams, text="no webhook_token: the outgoing webhook route refuses every call"))
    return checks


async def _channel_kinds(api: MattermostApi, teams: list[dict[str, Any]]) -> list[str]:
    """The type of every channel the bot is a member of, each counted once across teams."""
    kinds: dict[str, str] = {}
    for team in teams:
        for channel in await api.my_channels(str(team["id"])):
            kinds[str(channel["id"])] = str(channel.get("type") or "")
    return list(kinds.values())


async def _check_event_stream(server_url: str, token: str) -> Check:
    url = websocket_url(server_url)
    try:
        async with event_stream(url, token):
            return Check(ok=True, text=f"event stream {url}: authenticated")
    except Exception as exc:  # reported, not raised: this is a diagnosis
        return Check(ok=False, text=f"event stream {url}: {type(exc).__name__}: {exc}")
