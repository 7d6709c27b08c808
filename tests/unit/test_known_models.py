"""`gateway check` reads pydantic-ai's model names and providers from a generated table (it imports no pydantic-ai):
the table is the installed pydantic-ai's, and what the check says of a model string is what pydantic-ai says."""

from __future__ import annotations

from typing import get_args

import pytest
from pydantic_ai.exceptions import UserError
from pydantic_ai.models import KnownModelName, infer_model

from gateway.checks.generate_known_models import TARGET, bare_environment, render
from gateway.checks.known_models import KNOWN_MODEL_NAMES
from gateway.checks.model_setup import model_string_problem

REGENERATE = ("gateway/checks/known_models.py is not what the installed pydantic-ai says (an upgrade?); regenerate it "
              "with `python -m gateway.checks.generate_known_models` and commit the result")


def test_the_known_names_are_the_installed_pydantic_ais() -> None:
    assert set(KNOWN_MODEL_NAMES) == set(get_args(KnownModelName.__value__)), REGENERATE


def test_the_generated_table_is_current() -> None:
    """Names, providers and what each provider needs, and which models do not reason: all of it."""
    assert render() == TARGET.read_text(), REGENERATE


@pytest.mark.parametrize("model", ["opneai:gpt-4o-mini", "locl", "gpt", "openai:gpt-4o", "openai-chat:gpt-4o-mini",
                                   "anthropic:claude-sonnet-4-5", "ollama:llama3.1", "sentence-transformers:x",
                                   "groq:llama-3.3-70b-versatile", "litellm:anything"])
def test_the_check_says_of_a_model_string_what_pydantic_ai_says(model: str) -> None:
    """In a bare environment each model string either builds, or fails as the offline check predicts."""
    problem = model_string_problem(model, {})
    with bare_environment():
        try:
            infer_model(model)
        except ImportError as exc:
            assert problem is not None and not problem.environmental
            assert problem.message == f"pydantic-ai cannot use {model!r}: {exc}"
            return
        except UserError as exc:
            assert problem is not None
            if problem.environmental:
                variable = problem.message.split(" needs ")[1].split(",")[0]
                assert f"`{variable}`" in str(exc)
            else:
                assert problem.message == str(exc)
            return
    assert problem is None


def test_a_set_variable_is_enough() -> None:
    assert model_string_problem("openai:gpt-4o", {"OPENAI_API_KEY": "sk-test"}) is None
    assert model_string_problem("openai:gpt-4o", {}) is not None
