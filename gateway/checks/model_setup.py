"""What would stop a model profile or model string from resolving on this machine, told offline from pydantic-ai's
tables (`gateway/checks/known_models.py`): `gateway check` imports no pydantic-ai and builds no provider client
(the provider's SDK alone takes a second or two of CPU to import). Building the model is `gateway serve`'s and
`gateway doctor`'s work; a provider that reads this machine's credentials its own way (a login file) is told of
there, since only building it tells.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from difflib import get_close_matches

from gateway.checks.known_models import KNOWN_MODEL_NAMES, PROVIDERS, WITHOUT_THINKING
from gateway.config.schema import ModelStringProfile, OpenAIChatProfile, reference_name
from gateway.config.secrets import SecretSource


@dataclass(frozen=True, slots=True, kw_only=True)
class SetupProblem:
    """Why a model name would not resolve to a model."""

    message: str
    environmental: bool
    """True when it depends on this machine (an unset key): `gateway serve` refuses, `gateway check` on another
    machine only warns. False: the name itself is wrong, wherever it runs."""


class ModelSetup:
    """The config's model profiles, judged without building them."""

    def __init__(self, profiles: Mapping[str, str | OpenAIChatProfile | ModelStringProfile], secrets: SecretSource,
                 *, environ: Mapping[str, str] = os.environ) -> None:
        self._profiles = {name: profile.model if isinstance(profile, ModelStringProfile) else profile
                          for name, profile in profiles.items()}
        self._secrets = secrets
        self._environ = environ

    @property
    def names(self) -> frozenset[str]:
        return frozenset(self._profiles)

    def problem(self, name: str) -> SetupProblem | None:
        """What would stop `name` (a profile or a model string) from resolving here; None when nothing would."""
        profile = self._profiles.get(name, name)
        if isinstance(profile, OpenAIChatProfile):
            variable = reference_name(profile.api_key) if profile.api_key else None
            if variable is not None and not self._secrets.get(variable):
                return SetupProblem(message=f"{variable} is not set in the environment or the secrets file",
                                    environmental=True)
            return None
        return model_string_problem(profile, self._environ)

    def model_id(self, name: str) -> str:
        """The pydantic-ai model string `name` stands for (an endpoint profile as `openai-chat:<model>`)."""
        profile = self._profiles.get(name, name)
        return f"openai-chat:{profile.model}" if isinstance(profile, OpenAIChatProfile) else profile

    def ignores_thinking(self, name: str) -> bool | None:
        """True when pydantic-ai knows the model as one that does not reason, False when it knows it as one that
        does; None for a model its tables do not list (its profile is inferred from the name at run time)."""
        model = self.model_id(name)
        return model in WITHOUT_THINKING if model in KNOWN_MODEL_NAMES else None


def model_string_problem(model: str, environ: Mapping[str, str]) -> SetupProblem | None:
    """What `infer_model(model)` would raise in `environ`, by pydantic-ai's tables; None when it would build."""
    if model == "test":
        return None
    provider, separator, _ = model.partition(":")
    if separator and provider.startswith("gateway/"):
        return None  # Pydantic's model gateway routes to any provider: `gateway doctor` builds it
    setup = PROVIDERS.get(provider) if separator else None
    if setup is None or setup[0] == "unknown":
        return SetupProblem(message=unknown_model(model), environmental=False)
    kind, detail = setup
    if kind == "missing":
        return SetupProblem(message=f"pydantic-ai cannot use {model!r}: {detail}", environmental=False)
    if kind == "variables" and not any(environ.get(variable) for variable in detail):
        return SetupProblem(message=f"{model!r} needs {detail[0]}, which is not set in the environment",
                            environmental=True)
    return None


def unknown_model(model: str) -> str:
    """pydantic-ai's own message for a model string it cannot place, with its suggestion."""
    suggested = suggest(model)
    return f"Unknown model: {model}" + (f". Did you mean '{suggested}'?" if suggested else "")


def suggest(model: str) -> str | None:
    """The known model closest to `model`, as pydantic-ai's `infer_model` suggests it (the same cut-offs)."""
    model_name = model.split(":", 1)[1] if ":" in model else model
    known = sorted(KNOWN_MODEL_NAMES, key=lambda name: (name.startswith("gateway/"), name))
    normalized = {name.replace(":", "-", 1): name for name in reversed(known) if ":" in name}
    if matches := get_close_matches(model.replace(":", "-", 1), list(normalized), n=1, cutoff=0.9):
        return normalized[matches[0]]
    names = [name.split(":", 1)[1] for name in known if ":" in name]
    matches = (get_close_matches(model_name, names, n=1, cutoff=0.8)
               or get_close_matches(model.replace(":", "-", 1), names, n=1, cutoff=0.7))
    return next(name for name in known if name.endswith(f":{matches[0]}")) if matches else None
