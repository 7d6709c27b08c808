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

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, SecretStr, ValidationInfo, field_validator, model_validator
from pydantic_ai import RunContext
from pydantic_ai.capabilities import Capability
from pydantic_ai.exceptions import ContentFilterError, ModelAPIError, ModelHTTPError, UnexpectedModelBehavior, UserError
from pydantic_ai.images import (
    ImageGenerationAspectRatio,
    ImageGenerationSettings,
    ImageGenerator,
    infer_image_generation_model,
)
from pydantic_ai.providers import Provider, infer_provider_class
from pydantic_ai.usage import RequestUsage

from capabilities.context import BuildContext, FileRefused, Outbox
from capabilities.failures import retry_or_text
from capabilities.image_catalog import CATALOG, SETTINGS, Setting
from capabilities.registry import CapabilityDef, KeyRequirement, ToolInfo
from capabilities.tool_text import function_toolset

MAX_PROMPT = 4_000
"""Characters of description; longer ones are refused before anything is spent."""
_OLD_PROVIDERS = {"openai": "openai", "openai-responses": "openai", "google": "google", "google-gla": "google"}
"""The SDK prefixes a spec stored before `provider` existed may carry in `model` (`openai-responses:gpt-5.4`)."""
_EXTENSIONS = {"image/png": "png", "image/jpeg": "jpg", "image/webp": "webp", "image/gif": "gif"}

REFUSED = ("The image provider refused this description (content moderation). Describe the picture differently, "
           "leaving out what may have triggered the filter, or tell the person it cannot be drawn.")
BUSY = ("The image provider did not answer ({reason}). Try once more; if it fails again, tell the person "
        "images cannot be drawn right now.")
KEY_REFUSED = ("The image provider refused this agent's key (HTTP {status}). Tell the person image generation "
               "is not set up correctly here; an operator has to check the key.")
NOT_DRAWN = ("The image provider could not draw this ({reason}). Tell the person, and do not describe an image "
             "as if it had been drawn.")
NOT_POSTED = ("The image was drawn but could not be posted into the chat: {reason} Tell the person the picture "
              "could not be delivered.")


class ImageGenerationConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)

    provider: str = "openai"
    """Who draws: `openai`, or `google` where the `pydantic-ai-slim[google]` extra is installed."""
    model: str = "gpt-image-2"
    """That provider's image model, from the catalog (`capabilities/catalog/image_models.json`); left out
    with a `provider` set, that provider's first model."""
    quality: Literal["low", "medium", "high", "auto"] | None = None
    """OpenAI only; unset: the provider's default."""
    size: Literal["auto", "1024x1024", "1024x1536", "1536x1024", "512", "1K", "2K", "4K"] | None = None
    """Pixel sizes for OpenAI, resolution tiers (`512`, `1K`, `2K`, `4K`) for Google; unset: the provider's."""
    background: Literal["transparent", "opaque", "auto"] | None = None
    """OpenAI only; `transparent` needs `png` or `webp`."""
    output_format: Literal["png", "webp", "jpeg"] | None = None
    """OpenAI only; unset: PNG."""
    aspect_ratio: ImageGenerationAspectRatio | None = None
    """The shape, e.g. `16:9`; the values depend on the model (GPT Image 2 takes sixteen, the 1.x models
    three). With OpenAI, set this or `size`, not both."""

    @model_validator(mode="before")
    @classmethod
    def _stored_shapes(cls, data: Any) -> Any:
        """A provider without a model takes its first; a stored `prefix:model` string names both halves."""
        if not isinstance(data, dict):
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


class MissingKey(LookupError):
    """An entry reached a run without the key `gateway check` requires (a spec stored before it required one)."""

    def __init__(self, capability: str) -> None:
        super().__init__(f"capability {capability!r} needs a key for its image provider; set the entry's "
                         "secret_id to the secret that holds it")


def image_generator(config: ImageGenerationConfig, key: SecretStr) -> ImageGenerator:
    """The provider's image model with this entry's key. The base URL is the provider SDK's own default
    (`OPENAI_BASE_URL` points OpenAI's at a compatible server)."""

    def provider(name: str) -> Provider[Any]:
        return infer_provider_class(name)(api_key=key.get_secret_value())  # type: ignore[call-arg]

    model = infer_image_generation_model(f"{config.provider}:{config.model}", provider_factory=provider)
    return ImageGenerator(model, settings=config.settings())


@dataclass(frozen=True, slots=True, kw_only=True)
class ImageTools:
    generator: ImageGenerator
    outbox: Outbox
    charge: Callable[[RequestUsage], None] | None = None
    """`RunFacts.charge`; None: the spend is added to the calling agent's own usage."""

    async def generate_image(self, ctx: RunContext[Any], prompt: str) -> str:
        """Draw an image from a written description and post it into this chat as a picture.

        Use it when the person asks for a picture, an illustration, a logo or a visual idea. For numbers use a
        chart tool instead, which plots them exactly. Every call costs money and may need a person's approval
        first, so draw once from a careful description rather than trying variations.

        Args:
            prompt: What to draw, in detail: subject, setting, style, composition, colours and any text that
                must appear; up to 4,000 characters.

        Returns:
            A line saying the picture is stored and on its way into the chat, below your answer (its format and
            size), and the provider's revised description when it rewrote yours; the person sees the picture
            itself, so do not describe it as a link or an attachment. When nothing was drawn, a line saying why.
        """
        prompt = prompt.strip()
        if not prompt or len(prompt) > MAX_PROMPT:
            return retry_or_text(ctx, f"Describe the picture in 1 to {MAX_PROMPT:,} characters (this one has "
                                      f"{len(prompt):,}).")
        try:
            result = await self.generator.generate(prompt)
        except ContentFilterError:
            return retry_or_text(ctx, REFUSED)
        except ModelHTTPError as exc:  # the body is never shown: a provider may echo part of the key in it
            if exc.status_code in (401, 403):
                return KEY_REFUSED.format(status=exc.status_code)
            if exc.status_code == 429 or exc.status_code >= 500:
                return retry_or_text(ctx, BUSY.format(reason=f"HTTP {exc.status_code}"))
            return NOT_DRAWN.format(reason=f"HTTP {exc.status_code}")
        except ModelAPIError as exc:
            return retry_or_text(ctx, BUSY.format(reason=type(exc.__cause__ or exc).__name__))
        except (UserError, UnexpectedModelBehavior) as exc:
            return NOT_DRAWN.format(reason=str(exc)[:200])
        self._book(ctx, result.usage)
        image = result.images[0]
        extension = _EXTENSIONS.get(image.content.media_type, "png")
        try:
            await self.outbox.post_file(name=f"image.{extension}", data=image.content.data,
                                        mime_type=image.content.media_type)
        except FileRefused as refused:  # the chat cannot take it (too large for the platform, say)
            return NOT_POSTED.format(reason=str(refused))
        posted = (f"The picture is on its way into the chat ({extension.upper()}, {len(image.content.data):,} bytes), "
                  "shown below your answer.")
        if image.revised_prompt and image.revised_prompt != prompt:
            posted += f" The provider drew it from this revised description: {image.revised_prompt}"
        return posted

    def _book(self, ctx: RunContext[Any], usage: RequestUsage) -> None:
        if self.charge is not None:
            self.charge(usage)
        else:
            ctx.usage.incr(usage)


def build(context: BuildContext[ImageGenerationConfig]) -> Capability[Any]:
    if context.secret is None:
        raise MissingKey(context.capability)
    tools = ImageTools(generator=image_generator(context.config, context.secret), outbox=context.outbox,
                       charge=context.run.charge)
    return Capability(toolsets=[function_toolset([tools.generate_image], toolset_id="image_generation")])


CAPABILITY = CapabilityDef(
    id="image_generation", name="Image generation", category="analysis", config=ImageGenerationConfig, build=build,
    key=KeyRequirement(description="an API key of the image provider (`provider`), e.g. an OpenAI key"),
    description="Draws pictures from a description with a dedicated image model and posts them into the chat.",
    tools=(ToolInfo(id="generate_image", summary="Generates an image from a written description.",
                    side_effecting=True),))
