"""Turns a model profile name or a pydantic-ai model string into a model, and says offline why one would not."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import SecretStr
from pydantic_ai.models import Model, infer_model, infer_model_profile

from gateway.agents.deadlines import DeadlineModel
from gateway.agents.transcription import Transcriber
from gateway.config.schema import ModelDeadlines, ModelStringProfile, OpenAIChatProfile, resolve_secret
from gateway.config.secrets import SecretSource


class ModelResolver:
    """Profiles come from `models:` in the config; `fixed` maps names to ready models (tests, the demo), which run
    as given. Every other model is held to its deadlines: its profile's, else `deadlines` (`model_deadlines`)."""

    def __init__(self, profiles: Mapping[str, str | OpenAIChatProfile | ModelStringProfile], secrets: SecretSource,
                 *, fixed: Mapping[str, Model] | None = None, deadlines: ModelDeadlines | None = None) -> None:
        self._profiles = {name: profile.model if isinstance(profile, ModelStringProfile) else profile
                          for name, profile in profiles.items()}
        self._transcribed = {name: profile for name, profile in profiles.items()
                             if not isinstance(profile, str) and profile.transcription is not None}
        self._transcribers: dict[str, Transcriber] = {}
        self._secrets = secrets
        self._fixed = dict(fixed or {})
        self._deadlines = deadlines or ModelDeadlines()
        self._resolved: dict[str, Model] = {}
        """Models are reusable across runs; building one per turn would open a new HTTP client each time."""

    @property
    def names(self) -> frozenset[str]:
        """The configured profiles (and fixed models): what a model-written specialist may run on."""
        return frozenset(self._profiles) | frozenset(self._fixed)

    def resolve(self, name: str) -> Model:
        """The model for a profile name or model string; raises pydantic-ai's `UserError` or our `ConfigError`
        saying what is missing (an unknown provider, an unset key)."""
        if name in self._fixed:
            return self._fixed[name]
        if name not in self._resolved:
            profile = self._profiles.get(name, name)
            if isinstance(profile, str):
                model = DeadlineModel(infer_model(profile), self._deadlines)
            else:
                model = DeadlineModel(self._openai_chat(name, profile), profile.deadlines or self._deadlines)
            self._resolved[name] = model
        return self._resolved[name]

    def transcriber(self, name: str) -> Transcriber | None:
        """The voice-note transcription of the profile `name` (an agent's model); None when it has none. Raises
        `ConfigError` naming the unset key."""
        profile = self._transcribed.get(name)
        if profile is None or profile.transcription is None:
            return None
        if name not in self._transcribers:
            deadlines = (profile.deadlines if isinstance(profile, OpenAIChatProfile) else None) or self._deadlines
            if isinstance(profile, OpenAIChatProfile):
                base_url, api_key = profile.base_url, self._api_key(name, profile)
            else:  # an openai model string: the variables OpenAI's own SDK reads, from the secrets as every key is
                base_url = self._secrets.get("OPENAI_BASE_URL")
                api_key = resolve_secret("${OPENAI_API_KEY}", self._secrets, field=f"models.{name}.transcription")
            self._transcribers[name] = Transcriber(profile.transcription, base_url=base_url, api_key=api_key,
                                                   deadlines=deadlines)
        return self._transcribers[name]

    def profile(self, name: str) -> Mapping[str, Any] | None:
        """What pydantic-ai knows of the model behind `name` (`supports_thinking`, …); None when it cannot say."""
        if name in self._fixed:
            return self._fixed[name].profile
        profile = self._profiles.get(name, name)
        model_id = f"openai-chat:{profile.model}" if isinstance(profile, OpenAIChatProfile) else profile
        try:
            return infer_model_profile(model_id)
        except Exception:  # a provider whose package is missing: reported as a problem of its own
            return None

    def _api_key(self, name: str, profile: OpenAIChatProfile) -> SecretStr:
        if not profile.api_key:  # local servers often want none, and the SDK wants something
            return SecretStr("not-needed")
        return resolve_secret(profile.api_key, self._secrets, field=f"models.{name}.api_key")

    def _openai_chat(self, name: str, profile: OpenAIChatProfile) -> Model:
        api_key = self._api_key(name, profile).get_secret_value()
        # The OpenAI SDK (20 MB of types) loads with the first such model, as pydantic-ai's own model strings do.
        from pydantic_ai.models.openai import OpenAIChatModel
        from pydantic_ai.providers.openai import OpenAIProvider
        return OpenAIChatModel(profile.model, provider=OpenAIProvider(base_url=profile.base_url, api_key=api_key))
