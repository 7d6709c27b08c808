"""The tools and builder of `image_generation`, imported with its first build; its declaration (config, tools,
scopes) is `capabilities/image_generation/__init__.py`."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pydantic import SecretStr
from pydantic_ai import RunContext
from pydantic_ai.capabilities import Capability
from pydantic_ai.exceptions import ContentFilterError, ModelAPIError, ModelHTTPError, UnexpectedModelBehavior, UserError
from pydantic_ai.images import (
    ImageGenerator,
    infer_image_generation_model,
)
from pydantic_ai.providers import Provider, infer_provider_class
from pydantic_ai.usage import RequestUsage

from capabilities.image_generation import ImageGenerationConfig
from capabilities.run import BuildContext, FileRefused, Outbox
from capabilities.run.tool_replies import function_toolset, retry_or_text

MAX_PROMPT = 4_000
"""Characters of description; longer ones are refused before anything is spent."""
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
