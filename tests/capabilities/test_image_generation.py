"""`generate_image`: draws through a fake of OpenAI's images API on loopback, posts the picture, books the spend."""

from __future__ import annotations

import base64
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any, get_args

import pytest
import pytest_asyncio
from aiohttp import web
from pydantic import SecretStr
from pydantic_ai import DeferredToolRequests, ModelMessage
from pydantic_ai.images import ImageGenerationAspectRatio, ImageGenerator, TestImageGenerationModel
from pydantic_ai.messages import ModelRequest, ToolReturnPart
from pydantic_ai.models import override_allow_model_requests
from pydantic_ai.models.function import FunctionModel

from capabilities import default_registry
from capabilities.image_generation import AspectRatio, ImageGenerationConfig
from capabilities.image_generation.build import MissingKey, image_generator
from capabilities.image_generation.catalog import CATALOG
from capabilities.registry import config_for
from capabilities.run import BuildContext, FileRefused, MissingStore
from tests.e2e.test_telegram_approvals import buttons, cards
from tests.support.capability_runs import MemoryOutbox, assembled, binding_with, run, run_facts
from tests.support.fakes.telegram import FakeTelegram
from tests.support.harness import TelegramBot, running_gateway
from tests.support.loopback import serving
from tests.support.records import run_rows
from tests.support.scripted import stepped

KEY = "sk-test-9f8e7d6c5b4a"
PNG = base64.b64decode("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5E"
                       "rkJggg==")
"""A 1 by 1 PNG, as a provider returns it in `b64_json`."""
USAGE = {"input_tokens": 40, "output_tokens": 1056, "total_tokens": 1096,
         "input_tokens_details": {"text_tokens": 40, "image_tokens": 0}}


@dataclass
class FakeImagesAPI:
    """OpenAI's `POST /v1/images/generations` on loopback: records each request, answers `status` with the
    body OpenAI sends for it."""

    status: int = 200
    error: dict[str, Any] = field(default_factory=dict)
    requests: list[dict[str, Any]] = field(default_factory=list)
    keys: list[str] = field(default_factory=list)
    url: str = ""

    async def generations(self, request: web.Request) -> web.Response:
        self.requests.append(json.loads(await request.read()))
        self.keys.append(request.headers.get("Authorization", ""))
        if self.status != 200:  # `x-should-retry: false`: the SDK's own retries would only repeat the answer
            return web.json_response({"error": self.error}, status=self.status, headers={"x-should-retry": "false"})
        body = self.requests[-1]
        return web.json_response({"created": 1764590000, "data": [{"b64_json": base64.b64encode(PNG).decode()}],
                                  "usage": USAGE, "size": body.get("size", "1024x1024"),
                                  "output_format": body.get("output_format", "png")})


@pytest_asyncio.fixture
async def images(monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[FakeImagesAPI]:
    fake = FakeImagesAPI()
    app = web.Application()
    app.router.add_post("/v1/images/generations", fake.generations)
    async with serving(app) as url:
        fake.url = f"{url}/v1"
        monkeypatch.setenv("OPENAI_BASE_URL", fake.url)  # the OpenAI SDK's own setting for a compatible server
        with override_allow_model_requests(True):
            yield fake


def returned(messages: list[ModelMessage]) -> list[ToolReturnPart]:
    return [p for m in messages if isinstance(m, ModelRequest) for p in m.parts if isinstance(p, ToolReturnPart)]


def draws(prompt: str) -> FunctionModel:
    """Asks for `prompt` to be drawn, again after each retry, and answers with what the last call returned."""

    def step(messages: list[ModelMessage]) -> tuple[str, dict[str, object], str] | str:
        parts = returned(messages)
        if parts and parts[-1].outcome != "retried":
            return str(parts[-1].content)
        return "generate_image", {"prompt": prompt}, f"call-{len(parts)}"
    return stepped(step)


def entry(approval: str = "never", **config: Any) -> dict[str, Any]:
    return {"id": "image_generation", "config": config, "secret_id": "IMAGE_KEY", "approval": approval}


async def draw(prompt: str = "A lighthouse at dusk, watercolour", *, approval: str = "never",
               **config: Any) -> tuple[Any, MemoryOutbox, Any]:
    """A real assembled run asking for `prompt`: its result, what it posted, and the assembled agent."""
    binding = binding_with([entry(approval, **config)])
    outbox = MemoryOutbox()
    agent = assembled(binding, draws(prompt), outbox=outbox, secrets={"IMAGE_KEY": KEY})
    result = await run(agent, "draw it", binding=binding)
    return result, outbox, agent


async def test_the_picture_is_drawn_with_the_entrys_key_and_posted_into_the_chat(images: FakeImagesAPI) -> None:
    result, outbox, _ = await draw()
    assert outbox.files == [("image.png", PNG, "image/png", None)]
    assert result.output == (f"The picture is on its way into the chat (PNG, {len(PNG):,} bytes), shown below your "
                             "answer.")
    [request] = images.requests
    assert request["model"] == "gpt-image-2" and request["prompt"] == "A lighthouse at dusk, watercolour"
    assert images.keys == [f"Bearer {KEY}"]


async def test_the_configured_settings_reach_the_provider(images: FakeImagesAPI) -> None:
    await draw(model="gpt-image-1.5", quality="high", size="1536x1024", background="opaque", output_format="webp")
    [request] = images.requests
    assert {k: request[k] for k in ("model", "quality", "size", "background", "output_format")} == {
        "model": "gpt-image-1.5", "quality": "high", "size": "1536x1024", "background": "opaque",
        "output_format": "webp"}


async def test_unset_settings_are_left_to_the_provider(images: FakeImagesAPI) -> None:
    await draw()
    [request] = images.requests
    assert not {"quality", "size", "background", "output_format"} & set(request)


async def test_an_aspect_ratio_becomes_the_models_own_size(images: FakeImagesAPI) -> None:
    await draw(aspect_ratio="16:9")
    assert images.requests[0]["size"] == "1280x720"


async def test_the_image_models_spend_is_booked_on_the_run(images: FakeImagesAPI) -> None:
    _, _, agent = await draw()
    assert (agent.delegated.requests, agent.delegated.input_tokens, agent.delegated.output_tokens) == (1, 40, 1056)


async def test_it_asks_before_drawing_by_default(images: FakeImagesAPI) -> None:
    result, outbox, _ = await draw(approval="default")
    assert isinstance(result.output, DeferredToolRequests)
    assert [call.tool_name for call in result.output.approvals] == ["generate_image"]
    assert images.requests == [] and outbox.files == []


async def test_a_moderation_refusal_is_a_retry_asking_for_another_description(images: FakeImagesAPI) -> None:
    images.status, images.error = 400, {"code": "moderation_blocked", "message": "Your request was rejected."}
    result, outbox, _ = await draw()
    assert len(images.requests) == 2 and outbox.files == []
    assert result.output.startswith("The image provider refused this description (content moderation)")


async def test_a_provider_outage_is_retried_once_then_told(images: FakeImagesAPI) -> None:
    images.status, images.error = 503, {"message": "overloaded"}
    result, _, _ = await draw()
    assert len(images.requests) == 2 and result.output.startswith("The image provider did not answer (HTTP 503)")


async def test_a_refused_key_is_told_once_without_the_key_or_the_providers_body(images: FakeImagesAPI) -> None:
    images.status, images.error = 401, {"code": "invalid_api_key",
                                        "message": f"Incorrect API key provided: {KEY[:6]}...{KEY[-4:]}."}
    result, _, _ = await draw()
    assert len(images.requests) == 1
    assert result.output.startswith("The image provider refused this agent's key (HTTP 401)")
    assert KEY[-4:] not in result.output and KEY[:6] not in result.output


async def test_an_empty_description_is_a_retry_and_nothing_is_spent(images: FakeImagesAPI) -> None:
    result, _, _ = await draw("   ")
    assert images.requests == [] and result.output.startswith("Describe the picture in 1 to 4,000 characters")


async def test_a_post_the_outbox_refuses_is_told_not_hidden(images: FakeImagesAPI) -> None:
    class Full(MemoryOutbox):
        async def post_file(self, *, name: str, data: bytes, mime_type: str | None, caption: str | None = None) -> None:
            raise FileRefused("image.png is 60 MB; Telegram takes files up to 50 MB.")

    binding = binding_with([entry()])
    result = await run(assembled(binding, draws("a cat"), outbox=Full(), secrets={"IMAGE_KEY": KEY}), "draw",
                       binding=binding)
    assert result.output.startswith("The image was drawn but could not be posted into the chat: image.png is 60 MB; "
                                    "Telegram takes files up to 50 MB.")


def context_for(config: dict[str, Any], **facts: Any) -> BuildContext[ImageGenerationConfig]:
    binding = binding_with([entry(**config)])
    return BuildContext(capability="image_generation", config=ImageGenerationConfig.model_validate(config),
                        run=run_facts(binding, **facts))


def test_a_build_without_a_key_or_an_outbox_is_refused_by_name() -> None:
    definition = default_registry().get("image_generation")
    assert definition is not None
    with pytest.raises(MissingKey, match="secret_id"):
        definition.build(context_for({}, outbox=MemoryOutbox()))
    with pytest.raises(MissingStore, match="outbox"):
        definition.build(BuildContext(capability="image_generation", config=ImageGenerationConfig(),
                                      run=run_facts(binding_with()), secret=SecretStr(KEY)))


def problems(config: dict[str, Any], *, secret_id: str | None = "IMAGE_KEY") -> list[str]:
    spec_entry = binding_with([{"id": "image_generation", "config": config, "secret_id": secret_id}])
    return default_registry().validate_entry(spec_entry.agent.spec.capabilities[0], path="c")


def test_the_key_is_required() -> None:
    assert problems({}, secret_id=None) == ["c.secret_id: 'image_generation' needs a key (an API key of the image "
                                            "provider (`provider`), e.g. an OpenAI key); name the secret that holds it"]
    assert problems({}) == []


@dataclass(frozen=True, slots=True, kw_only=True)
class Refused:
    id: str
    config: dict[str, Any]
    problem: str


REFUSED = (
    Refused(id="unknown-provider", config={"provider": "midjourney"},
            problem="c.config.provider: 'midjourney' is not an image provider; known: openai, google"),
    Refused(id="unknown-model", config={"model": "dall-e-3"},
            problem="c.config.model: 'dall-e-3' is not one of OpenAI's image models; known: gpt-image-2, "
                    "gpt-image-1.5, gpt-image-1-mini"),
    Refused(id="ratio-the-model-lacks", config={"model": "gpt-image-1.5", "aspect_ratio": "16:9"},
            problem="c.config.aspect_ratio: '16:9' is not a aspect_ratio gpt-image-1.5 takes; choose one of 1:1, "
                    "2:3, 3:2"),
    Refused(id="size-and-ratio", config={"size": "1024x1024", "aspect_ratio": "1:1"},
            problem="c.config.aspect_ratio: OpenAI takes `size` or `aspect_ratio`, not both; remove one"),
    Refused(id="google-tier-on-openai", config={"size": "2K"},
            problem="c.config.size: '2K' is not a size gpt-image-2 takes; choose one of auto, 1024x1024, "
                    "1024x1536, 1536x1024"),
    Refused(id="transparent-jpeg", config={"background": "transparent", "output_format": "jpeg"},
            problem="c.config.output_format: a JPEG cannot be transparent; choose png or webp, or another "
                    "background"),
    Refused(id="not-a-setting", config={"style": "vivid"},
            problem="c.config.style: unknown setting; known: provider, model, quality, size, background, "
                    "output_format, aspect_ratio"),
)


@pytest.mark.parametrize("case", [pytest.param(case, id=case.id) for case in REFUSED])
def test_a_setting_the_provider_or_model_does_not_take_is_refused_with_what_it_takes(case: Refused) -> None:
    assert problems(case.config) == [case.problem]


def test_google_settings_are_checked_against_google_whether_or_not_its_sdk_is_installed() -> None:
    found = problems({"provider": "google", "quality": "high", "size": "1024x1024"})
    assert "c.config.quality: Google Gemini does not take `quality`; remove it (it takes: size, aspect_ratio)" in found
    assert any(p.startswith("c.config.size: '1024x1024' is not a size ") and "2K, 4K" in p for p in found)


@pytest.mark.skipif(CATALOG.provider("google").installed,  # type: ignore[union-attr]
                    reason="the google extra is installed here")
def test_google_without_its_sdk_is_refused_with_the_install_line() -> None:
    assert problems({"provider": "google"}) == [
        "c.config.model: Google Gemini draws through the google.genai SDK, which is not installed here; install "
        "'pydantic-ai-slim[google]', or choose another provider"]


@pytest.mark.parametrize(("stored", "provider", "model"), [
    ({"model": "openai-responses:gpt-5.4"}, "openai", "gpt-image-2"),
    ({"model": "openai:gpt-image-1.5"}, "openai", "gpt-image-1.5"),
    ({"provider": "openai", "model": "gpt-image-1-mini"}, "openai", "gpt-image-1-mini"),
    ({}, "openai", "gpt-image-2"),
])
def test_a_stored_model_string_names_both_provider_and_model(stored: dict[str, Any], provider: str,
                                                             model: str) -> None:
    definition = default_registry().get("image_generation")
    assert definition is not None
    config = config_for(definition, stored)
    assert (config.provider, config.model) == (provider, model)


async def test_google_settings_reach_its_image_model_in_googles_shape() -> None:
    """Read by pydantic-ai's Google image model; checked on the Test model, which records what it was given."""
    config = ImageGenerationConfig.model_construct(provider="google", model="gemini-3.1-flash-image", size="2K",
                                                   aspect_ratio="16:9", quality=None, background=None,
                                                   output_format=None)
    recorder = TestImageGenerationModel()
    await ImageGenerator(recorder, settings=config.settings()).generate("a map")
    assert recorder.last_settings == {"aspect_ratio": "16:9", "google_image_config": {"image_size": "2K"}}


@pytest.mark.parametrize("provider", [p for p in CATALOG.providers if p.installed], ids=lambda p: p.id)
def test_every_catalog_model_of_an_installed_provider_is_one_pydantic_ai_can_drive(provider: Any) -> None:
    for model in provider.models:
        config = ImageGenerationConfig(provider=provider.id, model=model.id)
        generator = image_generator(config, SecretStr(KEY))
        assert generator.model.model_name == model.id  # type: ignore[union-attr]
        assert generator.model.system == provider.id  # type: ignore[union-attr]


async def test_a_chat_turn_asks_first_then_posts_the_picture_into_the_chat(
        telegram: FakeTelegram, database_url: str, images: FakeImagesAPI) -> None:
    bot = TelegramBot().register(telegram)
    alice = telegram.add_user(1001, "Alice")
    chat = telegram.private_chat(alice)
    async with running_gateway(telegram, [bot], database_url=database_url, redis_url=None,
                               model=draws("A lighthouse at dusk, watercolour"),
                               capabilities=[{"id": "image_generation", "secret_id": "IMAGE_KEY"}],
                               secrets={"IMAGE_KEY": KEY}):
        await telegram.user_says(bot.token, chat, alice, "draw me a lighthouse")
        await telegram.wait_for(lambda: len(cards(telegram, chat["id"])) == 1)
        assert images.requests == []  # nothing is drawn, or spent, before a person agrees
        [card] = cards(telegram, chat["id"])
        await telegram.user_clicks(bot.token, card, alice, buttons(card)["✅ Approve"])
        await telegram.wait_for(lambda: bool(photos(telegram, chat["id"]))
                                and said(telegram, chat["id"])[-1].startswith("The picture is on its way"))
    [photo] = photos(telegram, chat["id"])
    assert telegram.file_content(photo) == PNG and len(images.requests) == 1
    [row] = await run_rows(database_url)  # the resume continues the parked run's row
    # the agent's own scripted requests spend a few tokens; the image model's 40 in and 1,056 out are booked too
    assert row.status == "answered" and row.output_tokens >= 1056 and row.input_tokens >= 40 and row.requests >= 3


def said(telegram: FakeTelegram, chat_id: int) -> list[str]:
    """The bot's text messages (a photo has none)."""
    return [m["text"] for m in telegram.bot_messages(chat_id) if "text" in m]


def photos(telegram: FakeTelegram, chat_id: int) -> list[dict[str, Any]]:
    return [m for m in telegram.bot_messages(chat_id) if "photo" in m]


def test_the_declared_aspect_ratios_are_pydantic_ais() -> None:
    """The declaration spells pydantic-ai's list out so it imports no pydantic-ai; an upgrade that changes the list
    fails here: copy `ImageGenerationAspectRatio` from `pydantic_ai.images` into `capabilities/image_generation`."""
    assert get_args(AspectRatio) == get_args(ImageGenerationAspectRatio)
