"""👍 / 👎 on an answer: a verified click recorded with its run, one rating per person and run, counted in `/metrics`.

A click is a platform's verified payload (Slack's signature or Socket Mode, Mattermost's HMAC context, Telegram's
secret token or polling); the run it names is taken only when it was answered by the same bot in the conversation of
the message clicked, so a click cannot rate another chat's run. It never starts a turn, and it is taken into the
conversation's at-once lane: it does not wait behind a turn that runs there.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Literal

from sqlalchemy import Connection, select

from adapters.base import ApprovalClick
from adapters.protocols import Cards
from gateway.pipeline.metrics import GatewayMetrics
from storage.db import Database, insert_for
from storage.tables import CONVERSATIONS, RUNS, utcnow
from storage.tables import RUN_FEEDBACK as FEEDBACK

log = logging.getLogger(__name__)

Rating = Literal["good", "bad"]
THANKS: dict[Rating, str] = {"good": "Thanks: noted 👍.", "bad": "Thanks: noted 👎."}
NOT_HERE = "That feedback could not be recorded: the answer is not one of this conversation's."


@dataclass(frozen=True, slots=True, kw_only=True)
class Rated:
    """A rating stored: for whom it counts in `/metrics`."""

    bot_name: str
    agent_name: str
    rating: Rating


class RunFeedback:
    def __init__(self, db: Database, metrics: GatewayMetrics) -> None:
        self._db = db
        self._metrics = metrics

    async def on_click(self, adapter: Cards, click: ApprovalClick, *, bot_name: str) -> None:
        """Store the click's rating (replacing the clicker's earlier one), count it, and tell the clicker; a click
        naming a run outside its conversation stores nothing and is refused."""
        rating: Rating = "good" if click.verb == "thumbs_up" else "bad"
        rated = await self._db.run(lambda connection: rate(connection, click, rating, bot_name=bot_name))
        if rated is None:
            log.warning("bot %r: a feedback click named a run outside its conversation; refused", bot_name)
            await adapter.answer_click(click, NOT_HERE, refused=True)
            return
        self._metrics.rated(rated.bot_name, rated.agent_name, rated.rating)
        await adapter.answer_click(click, THANKS[rating])


def rate(connection: Connection, click: ApprovalClick, rating: Rating, *, bot_name: str) -> Rated | None:
    """Upsert the clicker's rating of the run the click names; None when that run is not the bot's in the clicked
    message's conversation."""
    run_id = int(click.approval_id) if click.approval_id.isdigit() and len(click.approval_id) < 19 else None
    if run_id is None:
        return None
    found = connection.execute(
        select(RUNS.c.agent_name).join(CONVERSATIONS, CONVERSATIONS.c.id == RUNS.c.conversation_id)
        .where(RUNS.c.id == run_id, RUNS.c.bot_name == bot_name,
               CONVERSATIONS.c.key == click.card.address.conversation_key)).first()
    if found is None:
        return None
    who = click.clicker
    values = {"voter_name": who.display_name[:256], "rating": rating, "rated_at": utcnow()}
    insert = insert_for(connection.dialect.name)
    connection.execute(insert(FEEDBACK).values(
        run_id=run_id, voter_id=f"{who.platform}:{who.workspace}:{who.platform_user_id}"[:256], **values)
        .on_conflict_do_update(index_elements=["run_id", "voter_id"], set_=values))
    return Rated(bot_name=bot_name, agent_name=str(found.agent_name), rating=rating)
