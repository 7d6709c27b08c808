"""What every section of `gateway.yaml` is built from: a strict model, and credentials only as references."""

from __future__ import annotations

import re
from typing import Annotated

from pydantic import AfterValidator, BaseModel, ConfigDict

REFERENCE = re.compile(r"^\$\{([A-Za-z_][A-Za-z0-9_]*)\}$")


def _reference_only(value: str) -> str:
    if not REFERENCE.match(value):
        raise ValueError("write credentials as a ${ENV_VAR} reference, never the secret itself")
    return value


SecretReference = Annotated[str, AfterValidator(_reference_only)]
"""A credential in gateway.yaml: always a `${ENV_VAR}` reference, resolved from the environment or secrets file."""


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)
