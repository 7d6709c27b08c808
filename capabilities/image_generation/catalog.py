"""Which image models `image_generation` offers, per provider, and which optional settings each one takes.

The list is data (`capabilities/image_generation/image_models.json`): no provider has an endpoint that lists its image
models, so a model released this morning is a catalog entry rather than a release. A provider's `settings` name
the values its image API accepts; a model's own `settings` narrow or widen them for that model (GPT Image 2 takes
sixteen aspect ratios, the 1.x models three). A provider whose SDK is not installed stays listed, so that a
spec naming it is refused with the install line instead of as an unknown name.
"""

from __future__ import annotations

import importlib.util
from importlib.resources import files
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

Setting = Literal["quality", "size", "background", "output_format", "aspect_ratio"]
SETTINGS: tuple[Setting, ...] = ("quality", "size", "background", "output_format", "aspect_ratio")


class _Entry(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ImageModel(_Entry):
    id: str
    name: str
    description: str
    """When to reach for this model rather than its neighbours."""
    settings: dict[Setting, tuple[str, ...]] = Field(default_factory=dict[Setting, tuple[str, ...]])
    """Values this model accepts where they differ from its provider's."""


class ImageProvider(_Entry):
    id: str
    name: str
    sdk: str
    """The module pydantic-ai drives this provider's image API with."""
    install: str
    """What to install when `sdk` is missing."""
    settings: dict[Setting, tuple[str, ...]]
    """The optional settings this provider's image API takes, each with the values it accepts."""
    models: tuple[ImageModel, ...] = Field(min_length=1)

    def model(self, model_id: str) -> ImageModel | None:
        return next((m for m in self.models if m.id == model_id), None)

    def allowed(self, setting: Setting, model_id: str | None) -> tuple[str, ...]:
        """The values `setting` may take with `model_id` (None: the provider's own); empty: this provider does
        not take the setting."""
        if setting not in self.settings:
            return ()
        model = self.model(model_id) if model_id else None
        return model.settings.get(setting, self.settings[setting]) if model else self.settings[setting]

    @property
    def installed(self) -> bool:
        try:
            return importlib.util.find_spec(self.sdk) is not None
        except ModuleNotFoundError:  # the parent package of a dotted name is missing too
            return False


class ImageCatalog(_Entry):
    providers: tuple[ImageProvider, ...] = Field(min_length=1)

    def provider(self, provider_id: str) -> ImageProvider | None:
        return next((p for p in self.providers if p.id == provider_id), None)

    @property
    def provider_ids(self) -> tuple[str, ...]:
        return tuple(p.id for p in self.providers)


def load_catalog() -> ImageCatalog:
    text = files("capabilities.image_generation").joinpath("image_models.json").read_text(encoding="utf-8")
    return ImageCatalog.model_validate_json(text)


CATALOG = load_catalog()
"""Read once, when the module is imported: a malformed file stops the gateway at start, not a chat."""
