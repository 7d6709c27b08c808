"""`image_generation`: `generate_image` draws with a dedicated image model and posts the picture into the chat.

The image model is separate from the agent's own, so drawing works whatever model the agent runs on. It is
pydantic-ai's direct image API (`ImageGenerator`), built per run from the catalog's provider and model with the
entry's own key (`secret_id`), never the deployment's environment. A call spends money on that key and makes
something a person may publish, so the tool is side-effecting: it waits for an approval unless the spec or the
binding says otherwise. What the image model spent is booked on the run (`RunFacts.charge`), and the picture
goes through the run's outbox (`RunFacts.outbox`), which posts it into the thread once.

Settings left unset are left to the provider. A setting the chosen provider or model does not take is refused
when the config is checked, naming the values it does take, since the provider would refuse it on every call.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal, TypeGuard

from pydantic import BaseModel, ConfigDict, ValidationInfo, field_validator, model_validator

from capabilities.image_generation.catalog import CATALOG, SETTINGS, Setting
from capabilities.registry import CapabilityDef, Deferred, KeyRequirement, ToolInfo

if TYPE_CHECKING:
    from pydantic_ai.images import ImageGenerationSettings

_OLD_PROVIDERS = {"openai": "openai", "openai-responses": "openai", "google": "google", "google-gla": "google"}
"""The SDK prefixes a spec stored before `provider` existed may carry in `model` (`openai-responses:gpt-5.4`)."""
AspectRatio = Literal["1:1", "1:2", "1:4", "1:8", "2:1", "2:3", "3:2", "3:4", "4:1", "4:3", "4:5", "5:4", "8:1", "9:16",
                      "9:19.5", "9:20", "16:9", "19.5:9", "20:9", "21:9"]
"""pydantic-ai's `ImageGenerationAspectRatio`, spelt out so the declaration does not import pydantic-ai;
`tests/capabilities/test_image_generation.py` holds the two equal."""


class ImageGenerationConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)

    provider: str = "openai"
    """Who draws: `openai`, or `google` where the `pydantic-ai-slim[google]` extra is installed."""
    model: str = "gpt-image-2"
    """That provider's image model, from the catalog (`capabilities/image_generation/image_models.json`); left out
    with a `provider` set, that provider's first model."""
    quality: Literal["low", "medium", "high", "auto"] | None = None
    """OpenAI only; unset: the provider's default."""
    size: Literal["auto", "1024x1024", "1024x1536", "1536x1024", "512", "1K", "2K", "4K"] | None = None
    """Pixel sizes for OpenAI, resolution tiers (`512`, `1K`, `2K`, `4K`) for Google; unset: the provider's."""
    background: Literal["transparent", "opaque", "auto"] | None = None
    """OpenAI only; `transparent` needs `png` or `webp`."""
    output_format: Literal["png", "webp", "jpeg"] | None = None
    """OpenAI only; unset: PNG."""
    aspect_ratio: AspectRatio | None = None
    """The shape, e.g. `16:9`; the values depend on the model (GPT Image 2 takes sixteen, the 1.x models
    three). With OpenAI, set this or `size`, not both."""

    @model_validator(mode="before")
    @classmethod
    def _stored_shapes(cls, data: Any) -> Any:
        """A provider without a model takes its first; a stored `prefix:model` string names both halves."""
        if not _is_fields(data):
            return data
        if "provider" in data:
            provider = CATALOG.provider(str(data["provider"]))
            if "model" not in data and provider is not None:
                return {**data, "model": provider.models[0].id}
            return data
        prefix, _, name = str(data.get("model", "")).rpartition(":")
        provider = CATALOG.provider(_OLD_PROVIDERS.get(prefix, ""))
        if provider is None:
            return data
        return {**data, "provider": provider.id, "model": name if provider.model(name) else provider.models[0].id}

    @field_validator("provider")
    @classmethod
    def _known_provider(cls, value: str) -> str:
        if CATALOG.provider(value) is None:
            raise ValueError(f"{value!r} is not an image provider; known: {', '.join(CATALOG.provider_ids)}")
        return value

    @field_validator("model")
    @classmethod
    def _drawable_model(cls, value: str, info: ValidationInfo) -> str:
        provider = CATALOG.provider(info.data.get("provider", ""))
        if provider is None:
            return value
        if provider.model(value) is None:
            raise ValueError(f"{value!r} is not one of {provider.name}'s image models; known: "
                             f"{', '.join(m.id for m in provider.models)}")
        if not provider.installed:
            raise ValueError(f"{provider.name} draws through the {provider.sdk} SDK, which is not installed here; "
                             f"install '{provider.install}', or choose another provider")
        return value

    @field_validator(*SETTINGS)
    @classmethod
    def _taken_by_the_model(cls, value: str | None, info: ValidationInfo) -> str | None:
        """Checked against the model's values, or the provider's where the model itself was refused."""
        provider = CATALOG.provider(info.data.get("provider", ""))
        if value is None or provider is None:
            return value
        model = info.data.get("model")
        setting: Setting = info.field_name  # type: ignore[assignment]  # the validator is bound to SETTINGS
        allowed = provider.allowed(setting, model)
        if not allowed:
            raise ValueError(f"{provider.name} does not take `{setting}`; remove it (it takes: "
                             f"{', '.join(s for s in SETTINGS if provider.allowed(s, model))})")
        if value not in allowed:
            raise ValueError(f"{value!r} is not a {setting} {model or provider.name} takes; choose one of "
                             f"{', '.join(allowed)}")
        if setting == "aspect_ratio" and provider.id == "openai" and info.data.get("size") is not None:
            raise ValueError("OpenAI takes `size` or `aspect_ratio`, not both; remove one")
        if setting == "output_format" and value == "jpeg" and info.data.get("background") == "transparent":
            raise ValueError("a JPEG cannot be transparent; choose png or webp, or another background")
        return value

    def settings(self) -> ImageGenerationSettings:
        """These settings in the shape pydantic-ai's image model for this provider reads."""
        settings: dict[str, Any] = {}
        if self.aspect_ratio is not None:
            settings["aspect_ratio"] = self.aspect_ratio
        if self.provider == "google":
            if self.size is not None:
                settings["google_image_config"] = {"image_size": self.size}
            return settings  # type: ignore[return-value]  # a provider's settings extend the common TypedDict
        chosen = {"openai_quality": self.quality, "openai_size": self.size, "openai_background": self.background,
                  "openai_output_format": self.output_format}
        return settings | {name: value for name, value in chosen.items() if value is not None}  # type: ignore[return-value]



def _is_fields(data: object) -> TypeGuard[dict[str, Any]]:
    """Whether a config's raw input is a mapping of its fields (by name), rather than a built config."""
    return isinstance(data, dict)


CAPABILITY = CapabilityDef(
    id="image_generation", name="Image generation", category="analysis", config=ImageGenerationConfig,
    build=Deferred("capabilities.image_generation.build:build"), posts_files=True,
    key=KeyRequirement(description="an API key of the image provider (`provider`), e.g. an OpenAI key"),
    description="Draws pictures from a description with a dedicated image model and posts them into the chat.",
    tools=(ToolInfo(id="generate_image", summary="Generates an image from a written description.",
                    side_effecting=True),))
