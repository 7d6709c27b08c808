"""What `/metrics` shows: one registry per gateway, fed through this object's methods, never through globals."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Literal, get_args

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.exposition import generate_latest

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
LATENCY_BUCKETS = (0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 20.0, 40.0, 80.0, 160.0, 320.0)
"""Seconds: a placeholder is up in a fraction of one, a tool-heavy answer takes minutes."""
AckOutcome = Literal["accepted", "duplicate", "ignored", "rejected"]
"""What became of a payload a transport handed in, when it was acknowledged."""
ACK_OUTCOMES: tuple[AckOutcome, ...] = get_args(AckOutcome)
REFUSALS = ("allowlist", "rate_limit", "budget")
TURN_OUTCOMES = ("answered", "parked", "failed")
LEASE_CHANGES = ("acquired", "lost")
DEGRADED_REASONS = ("redis",)
RATINGS = ("good", "bad")
FIRING_KINDS = ("schedule", "reminder", "hook")
FIRING_OUTCOMES = ("fired", "late", "skipped")
"""The closed label sets, each bot's series set to 0 at start so every one shows before it first happens."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Backlog:
    """What is read from the database at scrape time, shared by every replica."""

    inbox_depth: int
    """Items waiting to be claimed (pending, or running under a lapsed lease)."""
    oldest_age: float
    """Seconds the oldest of them has waited; 0 when there is none."""
    approvals: Mapping[str, int] = field(default_factory=dict[str, int])
    """Approvals by status: pending, approved, denied, expired."""


class GatewayMetrics:
    """Series by bot and platform, by model, by outcome: never by chat or user, so cardinality stays small."""

    def __init__(self, platforms: Mapping[str, str], agents: Mapping[str, str] | None = None) -> None:
        """`platforms` is each bot's platform, by bot name; `agents` the agent each bot answers with, whose spending
        series start at 0."""
        self._platforms = dict(platforms)
        self._agents = dict(agents or {})
        self._holding: dict[str, bool] = {}
        self.holding_changed = asyncio.Event()
        """Set when this replica takes or loses a bot's transport (its heartbeat says so at once)."""
        self.registry = CollectorRegistry(auto_describe=True)
        bot = ["bot", "platform"]
        self._received = Counter("gateway_messages_received", "Payloads a transport or webhook handed in.", bot,
                                 registry=self.registry)
        self._acked = Counter("gateway_messages_acked", "Payloads made durable (or dropped) and acknowledged, "
                              "by outcome: accepted, duplicate, ignored, rejected.", [*bot, "outcome"],
                              registry=self.registry)
        self._answered = Counter("gateway_messages_answered", "Messages answered: turns that ended in an answer, "
                                 "and parked runs that did once resumed.", bot, registry=self.registry)
        self._refused = Counter("gateway_messages_refused", "Messages refused before any model run, by reason: "
                                "allowlist, rate_limit, budget.", [*bot, "reason"], registry=self.registry)
        self._turns = Counter("gateway_turns", "Turns run, by outcome: answered, parked, failed.", [*bot, "outcome"],
                              registry=self.registry)
        self._first_post = Histogram("gateway_turn_first_post_seconds", "From the turn's start to its first sign "
                                     "in the chat (the placeholder, or typing where the first post waits for "
                                     "text).", bot, buckets=LATENCY_BUCKETS,
                                     registry=self.registry)
        self._final = Histogram("gateway_turn_final_text_seconds", "From the turn's start to the final text "
                                "(answer, waiting line or failure notice) in the chat.", bot,
                                buckets=LATENCY_BUCKETS, registry=self.registry)
        self._model_requests = Counter("gateway_model_requests", "Requests to the model, by model.", ["model"],
                                       registry=self.registry)
        self._tokens = Counter("gateway_model_tokens", "Tokens used, by model and kind: input, output.",
                               ["model", "kind"], registry=self.registry)
        spender = ["bot", "agent"]
        self._spent = Counter("gateway_spend_usd", "US dollars runs cost, as genai-prices prices each model response "
                              "(runs it cannot price add nothing here; see gateway_runs_unpriced), by bot and agent.",
                              spender, registry=self.registry)
        self._unpriced = Counter("gateway_runs_unpriced", "Runs (and resumes) that made model requests genai-prices "
                                 "could price none of, by bot and agent.", spender, registry=self.registry)
        self._spent_tokens = Counter("gateway_agent_tokens", "Tokens runs used, by bot, agent and kind: input, output.",
                                     [*spender, "kind"], registry=self.registry)
        self._feedback = Counter("gateway_answer_feedback", "👍 (good) and 👎 (bad) clicks on answers recorded, by "
                                 "bot, agent and rating; a person's changed mind counts again.", [*spender, "rating"],
                                 registry=self.registry)
        self._connected = Gauge("gateway_transport_connected", "1 while this replica holds the bot's transport "
                                "(or its webhook bot is signed in), else 0.", bot, registry=self.registry)
        self._lease_changes = Counter("gateway_transport_lease_changes", "Times this replica took or lost a bot's "
                                      "transport lease, by change: acquired, lost.", [*bot, "change"],
                                      registry=self.registry)
        self._depth = Gauge("gateway_inbox_depth", "Inbox items waiting to be claimed.", registry=self.registry)
        self._oldest = Gauge("gateway_inbox_oldest_age_seconds", "Seconds the oldest claimable inbox item has "
                             "waited.", registry=self.registry)
        self._approvals = Gauge("gateway_approvals", "Approvals in the database by status: pending, approved, "
                                "denied, expired.", ["status"], registry=self.registry)
        self._api_trouble = Counter("gateway_platform_api_trouble", "Platform API calls that got a 429 "
                                    "(rate_limited) or failed (error), by the platform's method name.",
                                    ["platform", "method", "kind"], registry=self.registry)
        self._signed_in = Gauge("gateway_bot_signed_in", "1 while the platform accepts the bot's token on this "
                                "replica, 0 when it refused it (a revoked token) or has not answered yet.", bot,
                                registry=self.registry)
        self._degraded = Gauge("gateway_degraded", "1 while this replica serves without a dependency, by reason: "
                               "redis (the in-process fallback serves); it stays ready meanwhile.", ["reason"],
                               registry=self.registry)
        self._firings = Counter("gateway_firings", "Runs started without a message, stored once across replicas, by "
                                "kind (schedule, reminder, hook) and outcome: fired (on time), late (due while no "
                                "replica ran), skipped (missed, and its schedule says skip).",
                                [*bot, "kind", "outcome"], registry=self.registry)
        for reason in DEGRADED_REASONS:
            self._degraded.labels(reason)
        for name in self._platforms:
            self._start_at_zero(name)
        for name, agent in self._agents.items():
            for series in (self._spent, self._unpriced):
                series.labels(name, agent)
            for kind in ("input", "output"):
                self._spent_tokens.labels(name, agent, kind)
            for rating in RATINGS:
                self._feedback.labels(name, agent, rating)

    def _start_at_zero(self, bot: str) -> None:
        labels = self._of(bot)
        for series in (self._received, self._answered, self._first_post, self._final, self._connected,
                       self._signed_in):
            series.labels(*labels)
        for series, values in ((self._acked, ACK_OUTCOMES), (self._refused, REFUSALS), (self._turns, TURN_OUTCOMES),
                               (self._lease_changes, LEASE_CHANGES)):
            for value in values:
                series.labels(*labels, value)
        for kind in FIRING_KINDS:
            for outcome in FIRING_OUTCOMES:
                self._firings.labels(*labels, kind, outcome)

    def received(self, bot: str) -> None:
        self._received.labels(*self._of(bot)).inc()

    def acked(self, bot: str, outcome: AckOutcome) -> None:
        self._acked.labels(*self._of(bot), outcome).inc()

    def refused(self, bot: str, reason: str) -> None:
        self._refused.labels(*self._of(bot), reason).inc()

    def turn(self, bot: str, outcome: str, *, first_post: float | None, final: float) -> None:
        """One finished turn; `first_post` and `final` are seconds from its start."""
        labels = self._of(bot)
        self._turns.labels(*labels, outcome).inc()
        if outcome == "answered":
            self._answered.labels(*labels).inc()
        if first_post is not None:
            self._first_post.labels(*labels).observe(first_post)
        self._final.labels(*labels).observe(final)

    def resumed(self, bot: str, *, answered: bool) -> None:
        """A parked run continued after its decisions; its turn was counted when it parked."""
        if answered:
            self._answered.labels(*self._of(bot)).inc()

    def model_used(self, model: str, *, requests: int, input_tokens: int, output_tokens: int) -> None:
        self._model_requests.labels(model).inc(requests)
        self._tokens.labels(model, "input").inc(input_tokens)
        self._tokens.labels(model, "output").inc(output_tokens)

    def spent(self, bot: str, agent: str, *, requests: int, input_tokens: int, output_tokens: int,
              cost: Decimal | None) -> None:
        """What a run (or a resume, beyond what it had spent when it parked) cost; `cost` None: not priced."""
        self._spent_tokens.labels(bot, agent, "input").inc(input_tokens)
        self._spent_tokens.labels(bot, agent, "output").inc(output_tokens)
        if cost is not None:
            self._spent.labels(bot, agent).inc(float(cost))
        elif requests:
            self._unpriced.labels(bot, agent).inc()

    def rated(self, bot: str, agent: str, rating: str) -> None:
        """A 👍 (`good`) or 👎 (`bad`) on one of the agent's answers, stored with its run."""
        self._feedback.labels(bot, agent, rating).inc()

    def fired(self, bot: str, kind: str, outcome: str) -> None:
        """A firing this replica stored (`fired`, `late`), or a missed one it skipped: counted once, by the replica
        whose write won."""
        self._firings.labels(*self._of(bot), kind, outcome).inc()

    def transport(self, bot: str, *, connected: bool) -> None:
        self._connected.labels(*self._of(bot)).set(1 if connected else 0)
        if self._holding.get(bot) != connected:
            self._holding[bot] = connected
            self.holding_changed.set()

    def holding(self) -> list[str]:
        """The bots whose transport this replica holds now (the console's replica list says so)."""
        return sorted(bot for bot, held in self._holding.items() if held)

    def lease_changed(self, bot: str, change: str) -> None:
        self._lease_changes.labels(*self._of(bot), change).inc()

    def degraded(self, reasons: Mapping[str, bool]) -> None:
        """Whether this replica is degraded, by reason (`DEGRADED_REASONS`)."""
        for reason, down in reasons.items():
            self._degraded.labels(reason).set(1 if down else 0)

    def api_trouble(self, platform: str, method: str, kind: str) -> None:
        """An adapter's `ApiTrouble`, once bound to its platform."""
        self._api_trouble.labels(platform, method, kind).inc()

    def render(self, backlog: Backlog, signed_in: Mapping[str, bool]) -> bytes:
        """The exposition text, with the database's figures and each bot's sign-in (what `/readyz` names) as of
        now."""
        for bot, accepted in signed_in.items():
            self._signed_in.labels(*self._of(bot)).set(1 if accepted else 0)
        self._depth.set(backlog.inbox_depth)
        self._oldest.set(backlog.oldest_age)
        for status in ("pending", "approved", "denied", "expired", *backlog.approvals):
            self._approvals.labels(status).set(backlog.approvals.get(status, 0))
        return generate_latest(self.registry)

    def _of(self, bot: str) -> tuple[str, str]:
        return bot, self._platforms.get(bot, "unknown")
