"""The Slack app manifest of one bot, so that creating its Slack app is one paste.

Paste the YAML at https://api.slack.com/apps → Create New App → From a manifest
(format: https://docs.slack.dev/reference/app-manifest). The scopes are the ones the adapter uses,
and no more: reading the messages it is sent, posting and editing its answers, naming people, and
the channel lookups (`conversations.*`) a binding may grant its agent.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

import yaml

from adapters.base import MenuCommand

BOT_SCOPES = (
    "app_mentions:read",   # app_mention events
    "channels:history",    # message.channels: follow-ups in threads of public channels, and thread context
    "groups:history",      # the same in private channels
    "im:history",          # direct messages
    "mpim:history",        # group direct messages
    "chat:write",          # answers, live edits and streams, approval cards, ephemeral notices, the status line
    "assistant:write",     # the assistant view: a new thread's title and suggested prompts
    "users:read",          # users.info: speakers and mentions by name
    "channels:read",       # conversations.info, .members and .list: the channel lookups a binding may grant
    "groups:read",
    "im:read",
    "mpim:read",
    "files:write",         # files.getUploadURLExternal / completeUploadExternal: charts and images into threads
    "files:read",          # files.info and url_private downloads: what people attach reaches the agent
    "commands",            # slash commands: the gateway's commands in Slack's menu
    "reactions:write",     # 👀 on a person's message while it waits, where the binding says `reaction`
)  # fmt: skip
BOT_EVENTS = ("app_mention", "message.channels", "message.groups", "message.im", "message.mpim",
              "assistant_thread_started")
NAME_LIMIT = 35
"""Characters Slack allows in an app's name."""
SLACK_BUILT_IN = frozenset({"active", "apps", "archive", "away", "call", "collapse", "dm", "dnd", "expand", "feed",
                            "feedback", "invite", "join", "kick", "leave", "me", "msg", "mute", "open", "remind",
                            "remove", "rename", "search", "shortcuts", "shrug", "star", "status", "topic", "who"})
"""Slack's own slash commands, which an app cannot register (a manifest naming one is refused whole)."""
SLASH_PREFIX = "agent-"
"""A command whose word Slack keeps for itself is registered as `/agent-<word>` (`/agent-status`)."""
DESCRIPTION_LIMIT = 2000


def slash_command(word: str) -> str:
    return f"/{SLASH_PREFIX}{word}" if word in SLACK_BUILT_IN else f"/{word}"


def build_slack_manifest(*, name: str, transport: Literal["socket", "http"], public_url: str | None,
                         description: str, commands: Sequence[MenuCommand] = ()) -> dict[str, Any]:
    """The manifest for bot `name`: Socket Mode, or request URLs under `public_url` for the Events API; `commands`
    as slash commands, delivered as the words are (over Socket Mode, or to the `commands` URL)."""
    events: dict[str, Any] = {"bot_events": list(BOT_EVENTS)}
    interactivity: dict[str, Any] = {"is_enabled": True}
    slash: list[dict[str, Any]] = [{"command": slash_command(command.name),
                                    "description": command.summary[:DESCRIPTION_LIMIT], "should_escape": False}
                                   for command in commands]
    if transport == "http":
        base = f"{(public_url or 'https://YOUR-PUBLIC-URL').rstrip('/')}/slack/{name}"
        events = {"request_url": f"{base}/events", **events}
        interactivity["request_url"] = f"{base}/interactions"
        slash = [{**entry, "url": f"{base}/commands"} for entry in slash]
    features: dict[str, Any] = {
        "app_home": {"home_tab_enabled": False, "messages_tab_enabled": True, "messages_tab_read_only_enabled": False},
        "bot_user": {"display_name": name, "always_online": True},
        "assistant_view": {"assistant_description": description[:255]},
    }
    if slash:
        features["slash_commands"] = slash
    return {
        "_metadata": {"major_version": 1, "minor_version": 1},
        "display_information": {"name": name[:NAME_LIMIT], "description": description[:140]},
        "features": features,
        "oauth_config": {"scopes": {"bot": list(BOT_SCOPES)}},
        "settings": {
            "event_subscriptions": events,
            "interactivity": interactivity,
            "org_deploy_enabled": False,
            "socket_mode_enabled": transport == "socket",
            "token_rotation_enabled": False,
        },
    }


def render_slack_manifest(manifest: dict[str, Any]) -> str:
    return yaml.safe_dump(manifest, sort_keys=False, allow_unicode=True)
