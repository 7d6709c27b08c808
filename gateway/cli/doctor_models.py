"""Each model is asked the cheapest real question its provider has: "do you know this model?", with the key,
base URL and headers the model itself would use. It spends no tokens.

OpenAI-compatible servers answer `GET {base_url}/models/{id}`, Anthropic `GET /v1/models/{id}`, Groq the OpenAI
form under `/openai/v1`. A 404 is read against the server's list of models (`GET …/models`), because servers
that implement only the list (vLLM) answer 404 to every lookup. Providers without such a call are reported as
not checked rather than passed.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

import httpx
from pydantic_ai.models import Model, parse_model_id

from adapters.unreachable import describe_unreachable, without_credentials
from gateway.agents.models import ModelResolver
from gateway.checks.model_setup import ModelSetup
from gateway.cli.doctor_check import Check, Status, json_object, not_the_api, server_error, shorten
from gateway.config.schema import ModelStringProfile, OpenAIChatProfile, reference_name

ANTHROPIC_VERSION = "2023-06-01"
NOT_FOUND_CODES = frozenset({"model_not_found", "not_found_error", "not_found"})


@dataclass(frozen=True, slots=True, kw_only=True)
class Lookup:
    """Where and how to ask one provider about one model."""

    base: str
    one: str
    """The model's own URL: `…/models/gpt-4o`."""
    listing: str
    headers: Mapping[str, str]
    params: Mapping[str, str] = field(default_factory=dict)


async def check_model(client: httpx.AsyncClient, name: str, models: ModelResolver, setup: ModelSetup,
                      profiles: Mapping[str, str | OpenAIChatProfile | ModelStringProfile]) -> Check:
    subject = f"model {name}"
    problem = setup.problem(name)
    if problem is not None:  # an unknown provider, an unset key: in the words `gateway check` uses
        fix = "set it in the environment or in GATEWAY_SECRETS_FILE" if problem.environmental else "see gateway check"
        return Check(name=subject, status="fail", reason=problem.message, fix=fix)
    try:
        model = models.resolve(name)
    except Exception as exc:  # what only building the model finds: the library's own words name the fix
        return Check(name=subject, status="fail", reason=f"{type(exc).__name__}: {shorten(exc)}")
    if model.base_url is None:
        return Check(name=subject, status="ok", reason=f"{model.system} runs in this process; nothing to reach")
    lookup = lookup_for(model)
    if lookup is None:
        where = without_credentials(model.base_url)
        return Check(name=subject, status="warn", reason=f"{model.system} at {where} has no free check here; its "
                     "first chat turn is the test", fix=f"try it with `gateway chat` (agent on {name})")
    try:
        status, reason, fix = await ask(client, lookup, model.model_name, _Fixes(name, profiles.get(name, name)))
    except httpx.HTTPError as exc:
        return Check(name=subject, status="fail", reason=describe_unreachable(lookup.base, exc).split(" — ")[0],
                     fix="start the model server, or correct its base_url")
    return Check(name=subject, status=status, reason=reason, fix=fix)


def lookup_for(model: Model) -> Lookup | None:
    """How to ask the provider behind `model` about it, from the SDK client the model sends with."""
    client: Any = getattr(model, "client", None)
    sdk = type(client).__module__.split(".")[0]
    key = getattr(client, "api_key", None)
    if sdk not in ("openai", "anthropic", "groq") or not isinstance(key, str):
        return None
    base = without_credentials(str(client.base_url)).rstrip("/")  # it is printed; the key header authenticates
    headers = {name: value for name, value in client.default_headers.items() if isinstance(value, str)}
    params = {name: value for name, value in (client.default_query or {}).items() if isinstance(value, str)}
    path = {"openai": "models", "anthropic": "v1/models", "groq": "openai/v1/models"}[sdk]
    if sdk == "anthropic":
        headers |= {"x-api-key": key, "anthropic-version": ANTHROPIC_VERSION}
    else:
        headers["Authorization"] = f"Bearer {key}"
    return Lookup(base=base, one=f"{base}/{path}/{quote(model.model_name, safe='')}", listing=f"{base}/{path}",
                  headers=headers, params=params)


class _Fixes:
    """The fixes for one model, naming the setting the operator edits."""

    def __init__(self, name: str, profile: str | OpenAIChatProfile | ModelStringProfile) -> None:
        self.name = name
        self.profile = profile.model if isinstance(profile, ModelStringProfile) else profile

    def key(self) -> str:
        if isinstance(self.profile, OpenAIChatProfile):
            variable = reference_name(self.profile.api_key) if self.profile.api_key else None
            return (f"put a key the server accepts in {variable}" if variable else
                    f"the server wants a key: set api_key: ${{VARIABLE}} on models.{self.name}")
        return f"put a key the provider accepts in {provider_key_variable(self.profile)}"

    def model_id(self, known: list[str], model_id: str) -> str:
        where = f"model of models.{self.name}" if isinstance(self.profile, OpenAIChatProfile) else "agent's model"
        close = difflib.get_close_matches(model_id, known, n=3, cutoff=0.6)
        offered = f"did you mean {' or '.join(close)}?" if close else (
            f"the server offers {', '.join(known[:8])}{'…' if len(known) > 8 else ''}" if known else "")
        return f"correct the {where}" + (f"; {offered}" if offered else "")


def provider_key_variable(model: str) -> str:
    """The variable pydantic-ai reads a model string's key from: `openai-chat:gpt-4o` → OPENAI_API_KEY."""
    provider = (parse_model_id(model)[0] or "").removesuffix("-chat").removesuffix("-responses")
    return "GOOGLE_API_KEY" if provider == "google-gla" else f"{provider.upper().replace('-', '_')}_API_KEY"


async def ask(client: httpx.AsyncClient, lookup: Lookup, model_id: str,
              fixes: _Fixes) -> tuple[Status, str, str | None]:
    """The provider's answer about `model_id`, as a status, a reason and a fix."""
    answer = await client.get(lookup.one, headers=dict(lookup.headers), params=dict(lookup.params))
    body = json_object(answer)
    said = _error_message(body)
    if answer.status_code in (401, 403):
        return "fail", f"the server refused the key (HTTP {answer.status_code}{_colon(said)})", fixes.key()
    if answer.status_code >= 500:
        return "fail", server_error(answer, said), "retry later; if it persists, see the model server's status or log"
    if answer.status_code == 200:
        if body is None or not body.get("id"):
            return "fail", not_the_api(lookup.one, answer), "correct base_url (OpenAI-compatible ones end in /v1)"
        return "ok", f"{model_id} at {lookup.base}: the server knows the model and accepts the key", None
    if answer.status_code == 429:
        return "warn", f"rate limited (HTTP 429{_colon(said)}); the key was accepted", "check the account's quota"
    if answer.is_redirect:  # not followed: the key would go wherever the redirect points
        return "fail", f"{lookup.one} redirects to {answer.headers.get('location')}", (
            "set base_url to the address it redirects to, if that is the provider")
    if answer.status_code != 404:
        return "fail", f"{lookup.one} answered HTTP {answer.status_code}{_colon(said)}", (
            "check base_url and the key against the provider's documentation")
    return await _not_found(client, lookup, model_id, fixes, answer, body)


async def _not_found(client: httpx.AsyncClient, lookup: Lookup, model_id: str, fixes: _Fixes,
                     answer: httpx.Response, body: dict[str, Any] | None) -> tuple[Status, str, str | None]:
    known = await _listed(client, lookup)
    if known is not None and model_id in known:
        return "ok", f"{model_id} at {lookup.base}: listed by the server, which accepts the key", None
    if known is not None or _error_code(body) in NOT_FOUND_CODES:
        said = _error_message(body)
        return "fail", f"{model_id} is not a model this server knows (HTTP 404{_colon(said)})", (
            fixes.model_id(known or [], model_id))
    return "fail", not_the_api(lookup.one, answer), "correct base_url (OpenAI-compatible ones end in /v1)"


async def _listed(client: httpx.AsyncClient, lookup: Lookup) -> list[str] | None:
    """The model ids the server lists; None when it has no list there."""
    answer = await client.get(lookup.listing, headers=dict(lookup.headers), params=dict(lookup.params))
    body = json_object(answer) if answer.status_code == 200 else None
    data = body.get("data") if body else None
    if not isinstance(data, list):
        return None
    return [str(item["id"]) for item in data if isinstance(item, dict) and "id" in item]


def _error_code(body: dict[str, Any] | None) -> str | None:
    error = body.get("error") if body else None
    if not isinstance(error, dict):
        return None
    code = error.get("code") or error.get("type")
    return str(code) if code else None


def _error_message(body: dict[str, Any] | None) -> str | None:
    if not body:
        return None
    error = body.get("error")
    message = error.get("message") if isinstance(error, dict) else error or body.get("detail") or body.get("message")
    return shorten(message) if message else None


def _colon(said: str | None) -> str:
    return f": {said}" if said else ""
