"""What `gateway check` refuses about model ids: one its provider does not have, told with the closest one it has.

A typo in a model id (`openai:gpt-4o-mnii`) otherwise passes every offline check and is found in the chat, as a
404 from the provider. pydantic-ai lists the models it knows per provider (`KnownModelName`); an id that list does
not hold, for a provider it lists models of, is refused. A provider it lists nothing of (Ollama, OpenRouter, an
OpenAI-compatible endpoint profile) names whatever its server serves, so its ids are taken as written, and so is a
profile marked `unlisted: true` (a fine-tune, a private or newer model).
"""

from __future__ import annotations

import difflib
from functools import cache

from capabilities.registry.config_errors import Loc, Problem
from gateway.checks.known_models import KNOWN_MODEL_NAMES
from gateway.config.schema import GatewayConfig, ModelStringProfile


@cache
def known_models() -> dict[str, tuple[str, ...]]:
    """pydantic-ai's known model strings, by provider prefix (`openai` → `openai:gpt-4o`, …); read from the table
    generated from pydantic-ai (`gateway/checks/known_models.py`), so that `gateway check` does not import it."""
    by_provider: dict[str, list[str]] = {}
    for name in KNOWN_MODEL_NAMES:
        provider, separator, _ = name.partition(":")
        if separator:
            by_provider.setdefault(provider, []).append(name)
    return {provider: tuple(names) for provider, names in by_provider.items()}


def unknown_model(model: str) -> str | None:
    """Why `model` names no model its provider has, with the closest it has; None when it does, or cannot say."""
    provider, separator, _ = model.partition(":")
    listed = known_models().get(provider, ()) if separator else ()
    if not listed or model in listed:
        return None
    close = difflib.get_close_matches(model, listed, n=1, cutoff=0.6)
    hint = f"did you mean {close[0]!r}?" if close else f"see pydantic-ai's KnownModelName for {provider}'s models"
    return (f"{model!r} is not a model pydantic-ai knows for {provider}; {hint} If the id is right (a fine-tune, "
            f"a private or newer model), write the profile as {{model: {model!r}, unlisted: true}}")


def model_name_problems(config: GatewayConfig, references: list[tuple[Loc, str]]) -> list[Problem]:
    """Each profile, and each model string named directly (`references`), whose id its provider does not have."""
    problems: list[Problem] = []
    for name, profile in config.models.items():
        if isinstance(profile, str):
            problems += _problem(("models", name), profile)
        elif isinstance(profile, ModelStringProfile) and not profile.unlisted:
            problems += _problem(("models", name, "model"), profile.model)
    for loc, model in references:
        if model not in config.models:
            problems += _problem(loc, model)
    return problems


def _problem(loc: Loc, model: str) -> list[Problem]:
    message = unknown_model(model)
    return [] if message is None else [Problem(loc=loc, message=message)]
