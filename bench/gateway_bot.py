"""The gateway as `bench.ratio` runs it: one process, one bot per token, the bench's scripted model.

    python -m bench.gateway_bot [--platform telegram|slack|mattermost] --url http://127.0.0.1:PORT \
        --token TOKEN[,TOKEN…] [--app-token XAPP[,XAPP…]] --database-url URL [--poll-timeout S]

Telegram bots poll; Slack apps use Socket Mode (`--app-token`: each app's app-level token, in the order of
`--token`); Mattermost bots hold the WebSocket event stream. Several comma-separated tokens run one bot each
on the same agent (the idle-bots figures). Runs until SIGTERM/SIGINT; logs at INFO (one line per turn), as
`gateway serve` does by default.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import logging
import os
import signal
import sys
import tracemalloc
from datetime import timedelta
from pathlib import Path
from typing import Any

from bench.models import instant_model
from gateway.agents.models import ModelResolver
from gateway.config.schema import GatewayConfig, Settings
from gateway.config.secrets import SecretSource
from gateway.server.app import Gateway, Tuning

TUNING = Tuning(worker_lease=timedelta(seconds=10), poll_timeout=1, transport_first_delay=0.1)
"""Defaults, but 1 s long polls like the floors' and a quick first poll."""
TRANSPORTS = {"telegram": "polling", "slack": "socket", "mattermost": "websocket"}


def bot_spec(platform: str, url: str, n: int) -> dict[str, Any]:
    """Bot `n`'s entry, its secrets named `BENCH_TOKEN_<n>` (and `BENCH_APP_TOKEN_<n>` on Slack)."""
    spec = {"name": f"bench{n}", "platform": platform, "token": f"${{BENCH_TOKEN_{n}}}", "api_base_url": url,
            "transport": TRANSPORTS[platform], "agent": "assistant", "binding": {"rate_limit": None}}
    if platform != "slack":
        return spec
    # 👀 on a top-level DM that waits: Slack's status line needs a thread, and a DM has none to show it under
    return spec | {"app_token": f"${{BENCH_APP_TOKEN_{n}}}", "binding": {"rate_limit": None, "reaction": True}}


def config(platform: str, url: str, bots: int) -> GatewayConfig:
    return GatewayConfig.model_validate({
        "agents": [{"name": "assistant", "model": "bench:instant", "instructions": "Answer briefly."}],
        "bots": [bot_spec(platform, url, n) for n in range(bots)],
        "server": {"host": "127.0.0.1", "port": 0},
    })


async def serve(args: argparse.Namespace) -> None:
    tokens = args.token.split(",")
    app_tokens = args.app_token.split(",") if args.app_token else []
    if args.platform == "slack" and len(app_tokens) != len(tokens):
        raise SystemExit(f"--app-token: {len(app_tokens)} app tokens for {len(tokens)} Slack apps")
    gateway_config = config(args.platform, args.url, len(tokens))
    secrets = SecretSource(environ={f"BENCH_TOKEN_{n}": token for n, token in enumerate(tokens)}
                           | {f"BENCH_APP_TOKEN_{n}": token for n, token in enumerate(app_tokens)})
    models = ModelResolver(gateway_config.models, secrets, fixed={"bench:instant": instant_model()})
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    settings = Settings(database_url=args.database_url, redis_url=None)
    tuning = dataclasses.replace(TUNING, poll_timeout=args.poll_timeout)
    async with Gateway(gateway_config, settings, secrets=secrets, models=models, tuning=tuning):
        print("ready", flush=True)
        spy = await sampled(os.environ.get("BENCH_PYSPY"))
        ready = memory()
        await stop.wait()
        if os.environ.get("BENCH_MEMORY"):
            print(f"memory: VmRSS at ready {ready['VmRSS']}, VmHWM at stop {memory()['VmHWM']}", file=sys.stderr)
            allocations(sys.stderr)
        if spy is not None:  # py-spy writes its stacks when interrupted
            spy.send_signal(signal.SIGINT)
            await spy.wait()


async def sampled(folder: str | None) -> asyncio.subprocess.Process | None:
    """With `BENCH_PYSPY=folder`: py-spy samples this process (collapsed stacks, native frames off) until it stops;
    its own CPU is counted in the process tree, so read the figures of such a run for the profile only."""
    if not folder:
        return None
    out = Path(folder) / f"gateway-{os.getpid()}.txt"
    return await asyncio.create_subprocess_exec(
        str(Path(sys.executable).with_name("py-spy")), "record", "--pid", str(os.getpid()), "--rate", "250",
        "--format", "raw", "--nonblocking", *os.environ.get("BENCH_PYSPY_FLAGS", "").split(), "-o", str(out),
        stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL)


def memory() -> dict[str, str]:
    """This process's memory lines of `/proc/self/status` (VmRSS, VmHWM, …)."""
    lines = Path("/proc/self/status").read_text().splitlines()
    return {key: value.strip() for key, _, value in (line.partition(":") for line in lines)}


def allocations(out: Any) -> None:
    """With `PYTHONTRACEMALLOC=1` as well: the 25 source lines holding the most memory still allocated."""
    if tracemalloc.is_tracing():
        for stat in tracemalloc.take_snapshot().statistics("lineno")[:25]:
            print(f"  {stat}", file=out)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").partition("\n")[0])
    parser.add_argument("--platform", choices=tuple(TRANSPORTS), default="telegram")
    parser.add_argument("--url", required=True)
    parser.add_argument("--token", required=True)
    parser.add_argument("--app-token", default="", help="Slack: each app's app-level token (xapp-…), comma-separated")
    parser.add_argument("--database-url", required=True)
    parser.add_argument("--poll-timeout", type=int, default=TUNING.poll_timeout,
                        help="seconds a Telegram long poll waits (idle bots: Telegram's usual 30)")
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO)
    asyncio.run(serve(args))


if __name__ == "__main__":
    main()
