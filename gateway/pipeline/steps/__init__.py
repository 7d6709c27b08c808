"""The steps a claimed message passes, in order: each ends its delivery or hands it to the next (`step.py`).

Each is built once at start from `StepServices` (`services.py`), or left out where the deployment binds nothing it
serves (a delegate's question); the router walks them for every message (`gateway/pipeline/router.py`), skipping
one with nothing to do for the message's binding (open access, no rate limit, no budget: `ForOneSetting`).
An approval click takes no step: it decides a parked run (`ParkedRuns.on_click`).
"""

from __future__ import annotations

from collections.abc import Callable

from gateway.pipeline.steps.access import Access
from gateway.pipeline.steps.answer import Answer
from gateway.pipeline.steps.budget import Budget
from gateway.pipeline.steps.command import Command
from gateway.pipeline.steps.delegate_answer import delegate_answer
from gateway.pipeline.steps.rate_limit import RateLimit
from gateway.pipeline.steps.services import StepServices
from gateway.pipeline.steps.step import Step

STEPS: tuple[Callable[[StepServices], Step | None], ...] = (
    Access,          # people off the binding's allowlist are refused
    RateLimit,       # so is a person past the binding's rate limit
    Command,         # link, unlink, forget: answered without a model
    delegate_answer, # the answer to a delegate's open question resumes its parked run (where one may ask)
    Budget,          # a person, or the bot, at a limit of the binding's budget is refused (where one is set)
    Answer,          # everything else is a turn of the agent
)
FIRING_STEPS: tuple[Callable[[StepServices], Step | None], ...] = (
    Access,          # the person who set a reminder must still be allowed (an operator's firing has nobody to check)
    Budget,          # budgets hold for a scheduled run as for any turn
    Answer,          # the run: no rate limit, no command and no delegate's answer, since nobody wrote it
)
"""The steps of a run that starts without a message (`gateway/pipeline/firings.py`)."""
