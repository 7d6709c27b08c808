"""The `subagents` config: the catalog's settings and the harness SubAgents controls, validated at apply time."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

Mode = Literal["sync", "async", "auto"]
Effort = Literal["minimal", "low", "medium", "high", "xhigh"]

TASK_TOOLS = ("task",)
LIFECYCLE_TOOLS = ("check_task", "wait_tasks", "list_active_tasks", "send_message_to_subagent", "soft_cancel_task",
                   "hard_cancel_task")
DYNAMIC_TOOLS = ("create_agent", "delegate")
NEVER_OFFERED = ("answer_subagent",)
MAX_DYNAMIC_SPECIALISTS = 5
"""How many specialists one run may keep with `create_agent`."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)


class Budget(_Strict):
    """A delegate's own budget per delegation; reaching it is a soft outcome the parent model reads."""

    request_limit: int | None = Field(default=None, ge=1, le=200)
    tool_calls_limit: int | None = Field(default=None, ge=1, le=500)
    total_tokens_limit: int | None = Field(default=None, ge=1)


class DelegateControls(_Strict):
    """How one delegate runs (the harness's per-`SubAgent` controls); unset fields keep the defaults."""

    mode: Mode | None = None
    """Overrides the configured mode for this delegate (one slow researcher in the background)."""
    description: str | None = None
    """Replaces the description the delegate is listed with."""
    models: list[str] = Field(default_factory=list)
    """Keys of `models` this delegate may run on; the first is its default. Empty: any key, else its own model."""
    usage_limits: Budget | None = None
    timeout_seconds: float | None = Field(default=None, gt=0, le=3600)
    max_calls: int | None = Field(default=None, ge=1, le=100)
    """Delegations to this delegate per run."""
    on_failure: str | None = Field(default=None, min_length=1)
    """Returned to the parent as the tool result when the delegate fails, times out or runs out of budget."""
    contain_errors: bool | None = None
    """A crash of this delegate becomes a retry prompt for the parent instead of ending the run."""


class Specialist(DelegateControls):
    """A delegate defined inside this agent: reviewed, versioned and billed with it."""

    name: str = Field(pattern=r"^[A-Za-z0-9_-]{1,64}$")
    description: str = Field(min_length=1)  # type: ignore[assignment]
    instructions: str = Field(min_length=1)
    model: str = Field(min_length=1)
    """A model profile name or a model string; a specialist that names no model is refused."""


class MenuOption(_Strict):
    model: str = Field(min_length=1)
    """A model profile name or a model string."""
    description: str | None = None
    """When to pick this entry, shown to the model next to its key."""
    effort: Effort | None = None
    """Thinking effort for delegations routed here (same model, more thinking is a menu entry of its own)."""


class FileOverride(_Strict):
    model: str | None = None
    """Runs this agent file on another model than the delegating agent's."""
    effort: Effort | None = None


class SubagentsConfig(_Strict):
    inline: list[Specialist] = Field(default_factory=list[Specialist])
    """Specialists defined inside this agent."""
    mode: Mode = "sync"
    """`sync`: task waits for the answer. `async`: it returns a task id. `auto`: the model decides per task."""
    allow_questions: bool = False
    """A synchronous delegate may ask the parent agent's person."""
    allow_dynamic: bool = False
    """The model may write specialists itself (create_agent, delegate), on a configured model profile."""
    max_depth: int = Field(default=1, le=3)
    """Levels of delegation including this agent's own: 1 means its delegates do not delegate."""
    max_fanout: int = Field(default=3, ge=1, le=10)
    """Delegations running at once; past it, task says so instead of starting another."""
    max_result_chars: int = Field(default=2000, ge=200, le=20000)
    """wait_tasks shows a finished result up to this many characters, marked when cut."""
    share_with_delegates: list[str] = Field(default_factory=list)
    """Capability ids this agent binds that its delegates get too (never `subagents`)."""
    models: dict[str, str | MenuOption] = Field(default_factory=dict)
    """A model menu: task gains a `model` argument naming one of these keys."""
    delegates: dict[str, DelegateControls] = Field(default_factory=dict)
    """Controls for pinned agents and agent files, by delegate name."""
    agent_folders: list[str] = Field(default_factory=list)
    """Folders of Markdown delegate definitions (front matter `name`, `description`; the body instructs)."""
    agent_overrides: dict[str, FileOverride] = Field(default_factory=dict)
    """Model and effort for agent files, by name (they run on this agent's model otherwise)."""
    contain_errors: bool = True
    """Default for every delegate: a crash becomes a retry prompt for the parent instead of ending the run."""

    @field_validator("max_depth")
    @classmethod
    def _no_zero_depth(cls, value: int) -> int:
        if value < 1:
            raise ValueError(f"{value} is not a depth (1 to 3); to switch delegation off, disable the binding "
                             "(enabled: false)")
        return value

    def controls(self, name: str) -> DelegateControls:
        inline = next((s for s in self.inline if s.name == name), None)
        return inline if inline is not None else self.delegates.get(name, DelegateControls())

    def names_delegates(self) -> bool:
        return bool(self.inline or self.delegates or self.agent_folders or self.agent_overrides)


def background_reachable(config: SubagentsConfig) -> bool:
    """Whether any delegation can run in the background: the six task-lifecycle tools need a task id."""
    modes = {config.mode, *(s.mode for s in config.inline), *(c.mode for c in config.delegates.values())}
    return bool(modes & {"async", "auto"}) or config.allow_dynamic


def offered(config: SubagentsConfig) -> tuple[str, ...]:
    return (TASK_TOOLS + (LIFECYCLE_TOOLS if background_reachable(config) else ())
            + (DYNAMIC_TOOLS if config.allow_dynamic else ()))
