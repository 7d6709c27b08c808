"""A capability's builder and hooks are `Deferred` references into its own modules: every one the catalog holds
names a function that exists, so a misspelt target fails here rather than at the first run that binds it."""

from __future__ import annotations

import pytest

from capabilities.registry import Deferred
from capabilities.registry.offered import CAPABILITIES

REFERENCES = [pytest.param(reference, id=f"{definition.id}.{field}")
              for definition in CAPABILITIES for field in ("build", "on_run_end", "personal_store")
              if isinstance(reference := getattr(definition, field), Deferred)]


def test_the_catalog_defers_builders() -> None:
    """The checks below would pass vacuously if nothing were deferred."""
    assert any(param.id is not None and param.id.endswith(".build") for param in REFERENCES)


@pytest.mark.parametrize("reference", REFERENCES)
def test_every_deferred_reference_resolves_to_a_function(reference: Deferred) -> None:
    assert callable(reference.resolve())
    assert reference.resolve() is reference.resolve()


def test_a_misspelt_reference_says_which_one() -> None:
    with pytest.raises(AttributeError, match="no_such_builder"):
        Deferred("capabilities.memory_mem0.build:no_such_builder").resolve()
