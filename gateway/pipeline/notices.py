"""What a failed turn says in the chat, and what the operator is told: a set-up the operator must fix is told
apart from an outage that passes, so nobody is asked to try again what cannot work."""

from __future__ import annotations

from pydantic_ai.exceptions import (
    AgentRunError,
    ModelAPIError,
    ModelAuthenticationError,
    ModelHTTPError,
    ModelNotFoundError,
    ModelQuotaExceededError,
    ModelRequestTimeout,
    ModelTimeoutError,
    UsageLimitExceeded,
    UserError,
)

from capabilities.run import SetupFault
from gateway.config.schema import ConfigError

OPERATOR_HAS_DETAILS = "The operator can find the details in the gateway's log."
OPERATOR_TOLD = "The operator has been told; trying again will not help until it is fixed."
SEND_CUT_OFF = ("I was restarted while sending my answer to your last message. If you don't see it above, please "
                "send your message again.")
"""Said by the retry of a turn whose answer was being sent when its process died: Telegram cannot say whether it
arrived, and sending it again could show it twice."""
FIRING_SENT_AGAIN = "(Sent again: I was restarted while sending this, so it may be above already.)"
"""Heads a scheduled post or reminder posted again by the retry of an attempt that died sending it."""
EXPLAINED_FAILURES = (AgentRunError, UserError, ConfigError, SetupFault, TimeoutError)
"""Failures whose one log line says it all (the model, its set-up, a limit); anything else gets a traceback."""
TIMEOUTS = (TimeoutError, ModelRequestTimeout, ModelTimeoutError)
"""A deadline of the model's (`gateway/agents/deadlines.py`) or of one attempt's connection ran out."""
_KEY_REFUSED = ("the provider refused the key: check the API key the model uses (the provider's environment "
                "variable, or the profile's api_key) and that it may use this model; `gateway doctor` asks the "
                "provider")
_MODEL_UNKNOWN = ("the provider does not know this model, or the profile's base_url is wrong: fix the agent's model "
                  "or the profile's model and base_url; `gateway doctor` asks the provider")
_NO_QUOTA = "the provider account is out of credits or quota: top it up or raise its limit"
_SET_UP = "run `gateway check` where the gateway runs, fix what it names, and restart"


def setup_fix(exc: BaseException) -> str | None:
    """The fix when `exc` is a set-up only the operator can correct (a refused key, an unknown model, no quota,
    a missing setting); None when it is an outage that passes, or something else."""
    status = exc.status_code if isinstance(exc, ModelHTTPError) else None
    if isinstance(exc, ModelAuthenticationError) or status in (401, 403):
        return _KEY_REFUSED
    if isinstance(exc, ModelNotFoundError) or status == 404:
        return _MODEL_UNKNOWN
    if isinstance(exc, ModelQuotaExceededError):
        return _NO_QUOTA
    if isinstance(exc, UserError | ConfigError | SetupFault):
        return _SET_UP
    return None


def failure_notice(exc: BaseException) -> str:
    """A short reply for the chat: what kind of failure it was and whether trying again can help, without
    internals or secrets; the operator finds the rest in the log."""
    if setup_fix(exc) is not None:
        return f"Sorry, I cannot answer: this bot is not set up correctly (a configuration problem). {OPERATOR_TOLD}"
    if isinstance(exc, TIMEOUTS):
        return f"Sorry, the model took too long to answer. Please try again in a moment. {OPERATOR_HAS_DETAILS}"
    if isinstance(exc, ModelAPIError):
        return (f"Sorry, the model could not answer right now ({type(exc).__name__}). Please try again in a "
                f"moment. {OPERATOR_HAS_DETAILS}")
    if isinstance(exc, UsageLimitExceeded):
        return ("Sorry, this needed more model requests than one answer may use (a usage limit). Try asking for "
                f"less at once. {OPERATOR_HAS_DETAILS}")
    if isinstance(exc, AgentRunError):
        return (f"Sorry, the model's answer could not be used ({type(exc).__name__}). Please try again. "
                f"{OPERATOR_HAS_DETAILS}")
    return f"Sorry, something went wrong on our side while answering (an internal error). {OPERATOR_HAS_DETAILS}"
