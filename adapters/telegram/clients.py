"""The HTTP clients of one Telegram bot, over the TLS context every bot of the process shares.

python-telegram-bot gives each `Bot` two httpx clients, and each loads the CA bundle into a TLS context of its
own: about 1.6 MB and a few milliseconds per bot, most of what an idle bot costs. One context serves them all.
Each bot keeps its own small pools: one shared pool for a thousand long polls would hold a thousand
connections, and httpcore assigns requests to connections in time that grows with their number.
"""

from __future__ import annotations

import functools
import ssl

import httpx
from telegram.request import HTTPXRequest

CALL_POOL = 16
"""Sends, edits and the like of one bot at once."""


@functools.cache
def shared_tls() -> ssl.SSLContext:
    """httpx's own default context (certifi, or SSL_CERT_FILE / SSL_CERT_DIR), built once per process."""
    return httpx.create_ssl_context()


def bot_requests() -> tuple[HTTPXRequest, HTTPXRequest]:
    """(request, get_updates_request) for one `Bot`: its calls, and its one long poll at a time."""
    tls = {"verify": shared_tls()}
    return (HTTPXRequest(connection_pool_size=CALL_POOL, httpx_kwargs=tls),
            HTTPXRequest(connection_pool_size=1, httpx_kwargs=tls))
