"""Turns a model profile name or a pydantic-ai model string into a model."""

from __future__ import annotations

from collections.abc import Mapping

from pydantic_ai.models import Model, infer_model
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider

from gateway.config.schema import OpenAIChatProfile, resolve_secret
from gateway.config.secrets import SecretSource


class ModelResolver:
    """Profiles come from `models:` in the config; `fixed` maps names to ready models (tests, the demo)."""

    def __init__(self, profiles: Mapping[str, str | OpenAIChatProfile], secrets: SecretSource,
                 *, fixed: Mapping[str, Model] | None = None) -> None:
        self._profiles = dict(profiles)
        self._secrets = secrets
        self._fixed = dict(fixed or {})
        self._resolved: dict[str, Model] = {}
        """Models are reusable across runs; building one per turn would open a new HTTP client each time."""

    @property
    def names(self) -> frozenset[str]:
        """The configured profiles (and fixed models): what a model-written specialist may run on."""
        return frozenset(self._profiles) | frozenset(self._fixed)

    def resolve(self, name: str) -> Model:
        if name in self._fixed:
            return self._fixed[name]
        if name not in self._resolved:
            profile = self._profiles.get(name, name)
            model = infer_model(profile) if isinstance(profile, str) else self._openai_chat(name, profile)
            self._resolved[name] = model
        return self._resolved[name]

    def _openai_chat(self, name: str, profile: OpenAIChatProfile) -> Model:
        api_key = "not-needed"
        if profile.api_key:
            field = f"models.{name}.api_key"
            api_key = resolve_secret(profile.api_key, self._secrets, field=field).get_secret_value()
        provider = OpenAIProvider(base_url=profile.base_url, api_key=api_key)
        return OpenAIChatModel(profile.model, provider=provider)

