"""The mem0 client: the three calls of `capabilities/memory_mem0/access.py`'s table, to a host `endpoint` vetted, with
the key in a header and redirects never followed."""

from __future__ import annotations

import ssl
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
from pydantic import SecretStr

from adapters.unreachable import describe_unreachable
from adapters.wire import is_object
from capabilities.memory_mem0.access import Dialect, Mem0Refused, Mem0Unavailable, Memory


@dataclass(kw_only=True)
class Mem0Client:
    base_url: str
    """Already vetted by `endpoint`."""
    dialect: Dialect
    key: SecretStr = field(repr=False)
    ca_file: Path | None = None
    timeout: float = 10.0

    async def remember(self, user_id: str, text: str) -> None:
        body = {"messages": [{"role": "user", "content": text}], "user_id": user_id}
        await self._call("POST", "/v1/memories/" if self.dialect == "cloud" else "/memories", json=body)

    async def recall(self, user_id: str, query: str, *, top_k: int) -> list[Memory]:
        if self.dialect == "cloud":
            answer = await self._call("POST", "/v2/memories/search/",
                                      json={"query": query, "filters": {"user_id": user_id}, "top_k": top_k})
        else:
            answer = await self._call("POST", "/search", json={"query": query, "user_id": user_id, "top_k": top_k})
        items = answer.get("results", []) if is_object(answer) else answer
        found = [Memory(text=str(item.get("memory") or ""), score=item.get("score"))
                 for item in items or () if is_object(item)]
        return [memory for memory in found if memory.text][:top_k]

    async def forget(self, user_id: str) -> None:
        """Every memory held under `user_id`."""
        await self._call("DELETE", "/v1/memories/" if self.dialect == "cloud" else "/memories",
                         params={"user_id": user_id})

    async def _call(self, method: str, path: str, **request: Any) -> Any:
        host = urlsplit(self.base_url).hostname
        secret = self.key.get_secret_value()
        headers = {"Authorization": f"Token {secret}"} if self.dialect == "cloud" else {"X-API-Key": secret}
        verify: Any = ssl.create_default_context(cafile=self.ca_file) if self.ca_file is not None else True
        try:
            async with httpx.AsyncClient(base_url=self.base_url, follow_redirects=False, verify=verify,
                                         timeout=self.timeout, trust_env=False) as client:
                response = await client.request(method, path, headers=headers, **request)
        except httpx.HTTPError as exc:
            raise Mem0Unavailable(describe_unreachable(f"mem0 at {host}", exc, hint="try again shortly")) from None
        if response.status_code in (401, 403):
            raise Mem0Refused(f"mem0 at {host} rejected the key (HTTP {response.status_code})")
        if response.is_redirect:
            raise Mem0Unavailable(f"mem0 at {host} answered with a redirect (HTTP {response.status_code}), which is "
                                  "not followed so that the key goes nowhere else")
        if response.status_code == 429 or response.status_code >= 500:
            raise Mem0Unavailable(f"mem0 at {host} is unavailable (HTTP {response.status_code})")
        if response.status_code >= 400:
            raise Mem0Refused(f"mem0 at {host} refused the request (HTTP {response.status_code})")
        try:
            return response.json() if response.content else None
        except ValueError:
            raise Mem0Unavailable(f"mem0 at {host} answered with something that is not JSON") from None
