"""The floors: the smallest bots on the gateway's own libraries, for `bench.ratio` to compare against.

    python -m bench.floor_bots [--platform telegram|slack|mattermost] --kind echo|llm|durable \
        --url http://127.0.0.1:PORT --token TOKEN [--app-token XAPP] --username NAME [--database PATH]

`echo`: each private message or @mention gets a placeholder "…", then an edit to `answer <tag>`. `llm`: the same,
with one streamed pydantic-ai run (`run_stream`, the bench's scripted model) between the two, the history of each
chat kept in memory and cut to the gateway's default window (50 turns) (`bench/floor_answer.py`). `durable`: the
LLM floor with each message stored first and the history kept in a SQLite file (`bench/floor_store.py`). Telegram:
python-telegram-bot long polling (`bench/floor_telegram.py`); Slack: slack-sdk's Socket Mode client
(`bench/floor_slack.py`); Mattermost: the `websockets` event stream and mattermostdriver
(`bench/floor_mattermost.py`). Apart from `durable`, no database and no durability: what the libraries cost by
themselves.
"""

from __future__ import annotations

import argparse
import importlib
import logging

from bench.floor_answer import Answerer

FLOORS = {"telegram": "bench.floor_telegram", "slack": "bench.floor_slack", "mattermost": "bench.floor_mattermost"}
"""Each platform's floor, by module: only the one that runs is imported, so a floor's memory holds its own
platform's SDK and no other's (the gateway likewise loads a platform's adapter with its first bot)."""
FLOOR_PLATFORMS = tuple(FLOORS)
"""Platforms with floors of their own."""


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").partition("\n")[0])
    parser.add_argument("--platform", choices=FLOOR_PLATFORMS, default="telegram")
    parser.add_argument("--kind", choices=("echo", "llm", "durable"), required=True)
    parser.add_argument("--url", required=True)
    parser.add_argument("--token", required=True)
    parser.add_argument("--app-token", default="", help="Slack: the app-level token (xapp-…)")
    parser.add_argument("--username", required=True)
    parser.add_argument("--database", help="`durable`: the SQLite file it keeps its messages and history in")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    importlib.import_module(FLOORS[args.platform]).run(Answerer(args.kind, args.database), args)


if __name__ == "__main__":
    main()
