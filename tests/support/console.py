"""Signing in to the operator console of a running gateway, as a browser would: the sign-in form's CSRF cookie,
then the session cookie."""

from __future__ import annotations

import re
from functools import cache
from typing import Any

import httpx

from gateway.server.console.operators import hash_password

PASSWORDS = {"ops": "correct horse ops", "lead": "correct horse lead"}


@cache
def hashes() -> dict[str, str]:
    """The operators' argon2 hashes, by the variable gateway.yaml names (made once per test process)."""
    return {f"CONSOLE_{name.upper()}_HASH": hash_password(password) for name, password in PASSWORDS.items()}


def console_section(**changes: Any) -> dict[str, Any]:
    """`console:` as the issue's example writes it: `ops` an operator, `lead` also reads transcripts and approves."""
    return {"console": {"enabled": True, "path": "/console", "operators": [
        {"name": "ops", "password_hash": "${CONSOLE_OPS_HASH}", "roles": ["operator"]},
        {"name": "lead", "password_hash": "${CONSOLE_LEAD_HASH}", "roles": ["operator", "transcripts", "approver"]},
    ], **changes}}


def csrf_in(html: str) -> str:
    found = re.search(r'name="csrf" value="([^"]+)"', html)
    assert found, "the page carries a CSRF token"
    return found.group(1)


async def signed_in(client: httpx.AsyncClient, name: str = "lead") -> str:
    """Sign `client` in as `name`; returns the session's CSRF token."""
    form = await client.get("/console/sign-in")
    answer = await client.post("/console/sign-in", data={"name": name, "password": PASSWORDS[name],
                                                         "csrf": csrf_in(form.text)})
    assert answer.status_code == 303, answer.text
    return csrf_in((await client.get("/console/")).text)
