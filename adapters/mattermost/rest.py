"""Mattermost's REST API v4 through mattermostdriver, kept off the event loop.

The driver's calls are synchronous (`requests` at module level, no session), so each runs in a worker
thread. A 429 is waited out as the server asks (`Retry-After` or `X-RateLimit-Reset`); everything else
is raised as the driver raises it (`requests.HTTPError` subclasses: 401 `NoAccessTokenProvided`,
403 `NotEnoughPermissions`, 404 `ResourceNotFound`, ...).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping
from typing import Any, Literal, TypeVar
from urllib.parse import urlsplit

import requests
from mattermostdriver import Driver  # pyright: ignore[reportMissingTypeStubs] - the driver ships no types
from mattermostdriver.exceptions import (  # pyright: ignore[reportMissingTypeStubs] - as above
    ContentTooLarge,
    FeatureDisabled,
    InvalidOrMissingParameters,
    MethodNotAllowed,
    NoAccessTokenProvided,
    NotEnoughPermissions,
    ResourceNotFound,
)

from adapters.base import ApiTrouble, PlatformConfigError
from adapters.wire import is_object

log = logging.getLogger(__name__)
T = TypeVar("T")
# The driver logs the server's words at ERROR for every refused call (a membership check's expected 404 included)
# before raising; whoever catches the error says what it meant, once. Set here, after the driver's import set it
# to INFO.
logging.getLogger("mattermostdriver.websocket").setLevel(logging.CRITICAL)

API_PATH = "/api/v4"
MAX_RETRY_AFTER = 60.0
REQUEST_TIMEOUT = 15.0


class NotMattermost(Exception):
    """The server answered, but not as a Mattermost server does (a proxy's sign-in page, a wrong URL)."""


_STATUSES: tuple[tuple[type[requests.HTTPError], int], ...] = (
    (InvalidOrMissingParameters, 400), (NoAccessTokenProvided, 401), (NotEnoughPermissions, 403),
    (ResourceNotFound, 404), (MethodNotAllowed, 405), (ContentTooLarge, 413), (FeatureDisabled, 501))
"""The driver raises these without the response, so their class is the status."""


def status_of(exc: BaseException) -> int | None:
    """The HTTP status of a failed driver call, or None when no HTTP answer came."""
    if not isinstance(exc, requests.HTTPError):
        return None
    known = next((status for kind, status in _STATUSES if isinstance(exc, kind)), None)
    return known or getattr(exc.response, "status_code", None)


async def signed_in(api: MattermostApi, *, bot_id: str, server_url: str) -> dict[str, Any]:
    """`GET /users/me`; raises `PlatformConfigError` when the token or the server URL is wrong."""
    try:
        return await api.me()
    except NotMattermost as exc:
        raise PlatformConfigError(f"bot {bot_id!r}: {server_url} does not answer like a Mattermost "
                                  f"server ({exc}); check api_base_url") from None
    except Exception as exc:
        if status_of(exc) == 401:
            raise PlatformConfigError(
                f"mattermost at {server_url} refused the token of bot {bot_id!r} (401): use the bot "
                "account's access token (Integrations > Bot Accounts), and check the account is active") from None
        raise


def websocket_url(server_url: str) -> str:
    parts = urlsplit(server_url)
    scheme = "wss" if parts.scheme == "https" else "ws"
    return f"{scheme}://{parts.netloc}{parts.path}{API_PATH}/websocket"


class MattermostApi:
    """The REST calls the adapter makes, each awaited in a thread."""

    def __init__(self, *, server_url: str, token: str, request_timeout: float = REQUEST_TIMEOUT,
                 on_api_trouble: ApiTrouble | None = None) -> None:
        self._on_api_trouble = on_api_trouble
        parts = urlsplit(server_url)
        host = parts.hostname or ""
        # The driver is untyped: its calls answer JSON, read by the adapter as untrusted payloads are.
        self._driver: Any = Driver({
            "url": f"[{host}]" if ":" in host else host,  # the driver formats `scheme://url:port`
            "port": parts.port or (443 if parts.scheme == "https" else 80),  # an int: the driver formats `{port:d}`
            "scheme": parts.scheme,
            "basepath": f"{parts.path}{API_PATH}",
            "token": token,
            "verify": True,
            "request_timeout": request_timeout,
        })
        self._driver.client.token = token  # `login()` would set it; every call below needs it

    # -- users and teams -----------------------------------------------------------------------------

    async def me(self) -> dict[str, Any]:
        return await self._call("GET /users/me", self._driver.users.get_user, "me")

    async def users(self, user_ids: list[str]) -> list[dict[str, Any]]:
        if not user_ids:
            return []
        return await self._call("POST /users/ids", self._driver.users.get_users_by_ids, user_ids)

    async def my_teams(self) -> list[dict[str, Any]]:
        return await self._call("GET /users/me/teams", self._driver.teams.get_user_teams, "me")

    async def my_channels(self, team_id: str) -> list[dict[str, Any]]:
        """Every channel of the team the bot is a member of, with its direct and group messages."""
        return await self._call("GET /users/me/teams/{team}/channels",
                                self._driver.channels.get_channels_for_user, "me", team_id)

    async def typing(self, user_id: str, channel_id: str, parent_id: str) -> None:
        await self._call("POST /users/{id}/typing", self._driver.client.post, f"/users/{user_id}/typing",
                         {"channel_id": channel_id, "parent_id": parent_id})

    async def team_commands(self, team_id: str) -> list[dict[str, Any]]:
        """The team's custom slash commands, with their tokens (needs the permission to manage them)."""
        return await self._call("GET /commands", self._driver.commands.list_commands_for_team,
                                {"team_id": team_id, "custom_only": "true"})

    async def create_command(self, command: dict[str, Any]) -> dict[str, Any]:
        return await self._call("POST /commands", self._driver.commands.create_command, command)

    # -- channels and posts --------------------------------------------------------------------------

    async def channel(self, channel_id: str) -> dict[str, Any]:
        return await self._call("GET /channels/{id}", self._driver.channels.get_channel, channel_id)

    async def channel_stats(self, channel_id: str) -> dict[str, Any]:
        return await self._call("GET /channels/{id}/stats", self._driver.channels.get_channel_statistics, channel_id)

    async def channel_members(self, channel_id: str, *, limit: int) -> list[dict[str, Any]]:
        return await self._call("GET /channels/{id}/members", self._driver.channels.get_channel_members, channel_id,
                                {"page": 0, "per_page": limit})

    async def channel_member(self, channel_id: str, user_id: str) -> dict[str, Any]:
        return await self._call("GET /channels/{id}/members/{user_id}", self._driver.channels.get_channel_member,
                                channel_id, user_id)

    async def search_channels(self, team_id: str, term: str) -> list[dict[str, Any]]:
        return await self._call("POST /teams/{id}/channels/search", self._driver.channels.search_channels, team_id,
                                {"term": term})

    async def channel_posts(self, channel_id: str, *, limit: int) -> dict[str, Any]:
        return await self._call("GET /channels/{id}/posts", self._driver.posts.get_posts_for_channel, channel_id,
                                {"page": 0, "per_page": limit})

    async def channel_posts_since(self, channel_id: str, since_ms: int) -> dict[str, Any]:
        return await self._call("GET /channels/{id}/posts?since", self._driver.posts.get_posts_for_channel,
                                channel_id, {"since": since_ms})

    async def post(self, post_id: str) -> dict[str, Any]:
        return await self._call("GET /posts/{id}", self._driver.posts.get_post, post_id)

    async def thread(self, post_id: str) -> dict[str, Any]:
        return await self._call("GET /posts/{id}/thread", self._driver.posts.get_thread, post_id)

    async def create_post(self, channel_id: str, message: str, root_id: str,
                          props: dict[str, Any] | None = None, *, pending_post_id: str = "",
                          file_ids: list[str] | None = None) -> dict[str, Any]:
        """`pending_post_id`: the same id again within the server's window returns the first post."""
        post: dict[str, Any] = {"channel_id": channel_id, "message": message, "root_id": root_id}
        if props:
            post["props"] = props
        if file_ids:
            post["file_ids"] = file_ids
        if pending_post_id:
            post["pending_post_id"] = pending_post_id
        return await self._call("POST /posts", self._driver.posts.create_post, post)

    async def replace_post(self, post_id: str, message: str, props: dict[str, Any] | None = None) -> dict[str, Any]:
        """`PUT /posts/{id}`: the whole post, so props (buttons) not given are removed."""
        return await self._call("PUT /posts/{id}", self._driver.posts.update_post, post_id,
                                {"id": post_id, "message": message, "props": props or {}})

    async def ephemeral_post(self, user_id: str, channel_id: str, root_id: str, message: str) -> dict[str, Any]:
        """A post only `user_id` sees, until they reload."""
        return await self._call("POST /posts/ephemeral", self._driver.posts.create_ephemeral_post,
                                {"user_id": user_id, "post": {"channel_id": channel_id, "root_id": root_id,
                                                              "message": message}})

    async def open_dialog(self, trigger_id: str, url: str, dialog: dict[str, Any]) -> dict[str, Any]:
        """`POST /actions/dialogs/open`: an interactive dialog for the person whose click gave `trigger_id`; its
        submission goes to `url`."""
        return await self._call("POST /actions/dialogs/open", self._driver.integration_actions.open_dialog,
                                {"trigger_id": trigger_id, "url": url, "dialog": dialog})

    async def patch_post(self, post_id: str, message: str) -> dict[str, Any]:
        return await self._call("PUT /posts/{id}/patch", self._driver.posts.patch_post, post_id,
                                {"message": message})

    # -- files ---------------------------------------------------------------------------------------

    async def upload_file(self, channel_id: str, name: str, data: bytes, mime_type: str) -> dict[str, Any]:
        """`POST /files` (multipart): the file's info, to name in a post's `file_ids`."""
        answer = await self._call("POST /files", self._driver.files.upload_file, channel_id,
                                  {"files": (name, data, mime_type)})
        infos: list[Mapping[str, Any]] = answer.get("file_infos") or [{}]
        return dict(infos[0])

    async def file_content(self, file_id: str) -> bytes:
        """`GET /files/{id}`: the file's bytes, whatever content type the server gives them.

        `Driver.files.get_file` goes through `Client.get`, which parses any `application/json` answer, so a
        `.json` file would come back as an API answer; `Client.make_request` sends the same authenticated
        request, maps error statuses to the same exceptions, and leaves the body alone.
        """
        return await self._call("GET /files/{id}", self._download, file_id)

    def _download(self, file_id: str) -> bytes:
        return bytes(self._driver.client.make_request("get", f"/files/{file_id}").content)

    # -- plumbing ------------------------------------------------------------------------------------

    async def _call(self, what: str, function: Callable[..., Any], *args: Any, attempts: int = 5) -> Any:
        """Run one driver call in a thread; wait out a 429 as the server asks, up to `attempts` times.

        Each 429 and each other failure is told to `on_api_trouble`, with `what` as the method.
        """
        for attempt in range(1, attempts + 1):
            try:
                return _json(what, await asyncio.to_thread(function, *args))
            except requests.HTTPError as exc:
                limited = status_of(exc) == 429
                self._trouble(what, "rate_limited" if limited else "error")
                if not limited or attempt == attempts:
                    raise
                delay = _retry_after(exc.response.headers if exc.response is not None else {})
                log.warning("mattermost asked to wait %.0fs (429) before %s", delay, what)
            except (requests.RequestException, NotMattermost):
                self._trouble(what, "error")
                raise
            await asyncio.sleep(delay)
        raise AssertionError("unreachable")

    def _trouble(self, what: str, kind: Literal["rate_limited", "error"]) -> None:
        if self._on_api_trouble is not None:
            self._on_api_trouble(what, kind)


def posts_of(answer: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The posts of a post list (`{"order": [ids], "posts": {id: post}}`), in no particular order."""
    posts = answer.get("posts")
    return [post for post in posts.values() if is_object(post)] if is_object(posts) else []


def _json(what: str, result: Any) -> Any:
    """The driver hands back the raw response when the answer is not `application/json`."""
    if isinstance(result, requests.Response):
        kind = result.headers.get("Content-Type", "no content type")
        raise NotMattermost(f"{what} answered {result.status_code} with {kind}, not Mattermost's JSON")
    return result


def _retry_after(headers: Mapping[str, str]) -> float:
    for name in ("Retry-After", "X-RateLimit-Reset"):
        try:
            return min(max(float(headers[name]), 0.0), MAX_RETRY_AFTER)
        except (KeyError, ValueError):
            continue
    return 1.0
