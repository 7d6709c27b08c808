"""The run-time half of `subagents`: the delegation tools, on subagents-pydantic-ai's toolset.

The library runs delegations, keeps background tasks and truncates `wait_tasks`; what is decided here:

- The mode is the author's. The library's `task` takes `mode` with a `sync` default, so "the model
  chose to wait" and "the model said nothing" are one call. `task` here has no `mode` argument unless
  a delegate runs in `auto`, and then it must be given.
- Ceilings answer as results: past `max_fanout`, `max_calls`, a delegate's own budget or timeout, the
  model reads a sentence and carries on. A delegate failure is a retry prompt within the one-retry budget.
- A gated tool inside a synchronous delegate parks the whole run with the delegate's own call on the
  card; approving resumes that delegate where it stopped (its state rides the approval's metadata). In a
  background delegation the gate refuses instead (`gateway/agents/assembly.py`), because nobody can be asked.
- A synchronous delegate's `ask_parent` (under `allow_questions`) parks the same way: the gateway's
  `ask_user` defers the call (`ask_in_chat`), the whole run parks on the `task` call with the question in
  its metadata, and the person's answer (or None when nobody answered) rides that metadata back; the
  delegate then continues in place with the answer as the result of its deferred `ask_parent` call.
- Every delegate model response is charged to the run through `DelegateMeter`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import Counter
from collections.abc import Callable, Generator
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from pydantic_ai import (
    DeferredToolRequests,
    DeferredToolResults,
    ModelMessagesTypeAdapter,
    ModelRetry,
    RunContext,
    UsageLimits,
)
from pydantic_ai.capabilities import AbstractCapability
from pydantic_ai.exceptions import ApprovalRequired, CallDeferred, UsageLimitExceeded
from pydantic_ai.settings import ModelSettings
from pydantic_ai.tools import DeferredToolApprovalResult, ToolDefinition
from pydantic_ai.toolsets import AbstractToolset, CombinedToolset
from pydantic_ai_harness.subagents import ModelOption
from subagents_pydantic_ai import (
    SubAgentConfig,
    SubAgentToolset,
    TaskStatus,
    create_subagent_toolset,
    current_subagent_state,
)

from capabilities.run import BuildContext, BuiltDelegate, DelegateBuilder, Delegates, DelegationFacts, RunDeps
from capabilities.run.tool_replies import described, function_toolset, retry_or_text
from capabilities.subagents import texts as delegation_text
from capabilities.subagents.agent_files import read_agent_files
from capabilities.subagents.config import (
    LIFECYCLE_TOOLS,
    MAX_DYNAMIC_SPECIALISTS,
    DelegateControls,
    Mode,
    SubagentsConfig,
    background_reachable,
)
from capabilities.subagents.questions import (
    ASK_PARENT,
    OffersChoices,
    answers_for,
    choices_of,
    is_delegation_state,
    questions_of,
)

log = logging.getLogger(__name__)

DELEGATE_REQUEST_LIMIT = 25
"""Model requests one delegation may make when its delegate sets no `usage_limits` of its own."""


class DelegateTimedOut(UsageLimitExceeded):
    """A delegate ran past its `timeout_seconds`: a budget spent, and reported to the parent like one."""


def timed_out_text(name: str, controls: DelegateControls) -> str:
    """What the parent model reads when a delegation ran out of time: its `on_failure`, else a sentence."""
    if controls.on_failure:
        return controls.on_failure
    return (f"{name!r} timed out: it ran past its limit of {controls.timeout_seconds:g} s before finishing. Decide "
            "from what you already have, hand it a smaller task, or do this part yourself.")


@dataclass
class DelegateMeter(AbstractCapability[Any]):
    """Charges each of a delegate's model responses to the run, and holds the whole delegation to its
    wall-clock budget: every step of the run, a model request or a tool that hangs, is cut off at the deadline."""

    charge: Callable[[Any], None]
    timeout_seconds: float | None = None
    timed_out: str = ""
    """What a background delegation that ran out of time reports (`check_task`, `wait_tasks`)."""
    deadline: float | None = None

    async def for_run(self, ctx: RunContext[Any]) -> DelegateMeter:
        if self.timeout_seconds is None:
            return self
        return replace(self, deadline=asyncio.get_running_loop().time() + self.timeout_seconds)

    async def wrap_node_run(self, ctx: RunContext[Any], *, node: Any, handler: Any) -> Any:
        if self.deadline is None:
            return await handler(node)
        remaining = self.deadline - asyncio.get_running_loop().time()
        try:
            if remaining <= 0:
                raise TimeoutError
            async with asyncio.timeout(remaining):
                return await handler(node)
        except TimeoutError:
            self._report_in_background()
            raise DelegateTimedOut(f"the delegation ran past its timeout of {self.timeout_seconds:g} s") from None

    def _report_in_background(self) -> None:
        """A background delegation's handle says it timed out, in words, before the library records the
        budget error (the first outcome recorded wins) that would read `usage limit exceeded`."""
        state = current_subagent_state()
        if state is None or state.task_manager is None or state.task_id is None:
            return
        handle = state.task_manager.handles.get(state.task_id)
        if handle is not None:
            handle.finish(TaskStatus.FAILED, error=self.timed_out or "timed out")

    async def wrap_model_request(self, ctx: RunContext[Any], *, request_context: Any, handler: Any) -> Any:
        response = await handler(request_context)
        self.charge(response.usage)
        return response


@dataclass(frozen=True, slots=True, kw_only=True)
class Delegate:
    name: str
    description: str
    built: BuiltDelegate
    controls: DelegateControls
    mode: Mode
    """The mode this delegate actually runs in: its own override, else the configured one."""


@dataclass
class Delegation(AbstractCapability[Any]):
    config: SubagentsConfig
    delegates: dict[str, Delegate]
    menu: dict[str, ModelOption]
    library: SubAgentToolset
    facts: DelegationFacts
    """What the gateway decided about this delegation; `facts.specialists` is the run's, shared on purpose."""
    depth: int
    """Levels of delegation this agent has: its delegates are built with one less."""
    calls: Counter[str] = field(default_factory=Counter[str])
    dynamic_modes: dict[str, Literal["sync", "async"]] = field(default_factory=dict[str, Literal["sync", "async"]])

    async def for_run(self, ctx: RunContext[Any]) -> Delegation:
        run = replace(self, calls=Counter(), dynamic_modes={})
        await run._restore_specialists(ctx)
        return run

    async def _restore_specialists(self, ctx: RunContext[Any]) -> None:
        """Registers again the specialists the model wrote earlier in this run, before it parked (#175): a run
        that parks is built again when it is continued, and the library's registry goes with the old build.
        They come back under create_agent's own rules (a configured model profile, no capabilities, at most
        MAX_DYNAMIC_SPECIALISTS); one that no longer passes them is dropped."""
        kept = self.facts.specialists
        for name, spec in list(kept.items()):
            mode, model = spec.get("mode"), str(spec.get("model", ""))
            if mode != "sync" and mode != "async":
                log.warning("specialist %r of a resumed run was not restored", name)
                continue
            restored = self._refuse_dynamic(name, model) is None
            if restored and not self.library.registry.exists(name):
                created = await self.library.create_agent(
                    ctx, name=name, description=str(spec.get("description", "")),
                    instructions=str(spec.get("instructions", "")), model=model, capabilities=None,
                    can_ask_questions=False)
                restored = created.startswith(f"Agent '{name}' created")
            if restored:
                self.dynamic_modes[name] = mode
            else:
                log.warning("specialist %r of a resumed run was not restored", name)
                del kept[name]

    def get_instructions(self) -> str:
        return delegation_text.instructions(self.config, list(self.delegates.values()), self.menu,
                                            sorted(self.facts.model_names))

    def get_toolset(self) -> AbstractToolset[Any]:
        tools: list[Callable[..., Any]] = [self.task]
        if self.config.allow_dynamic:
            tools += [self.create_agent, self.delegate]
        ours = function_toolset(tools, toolset_id="delegation").prepared(self._shape)
        toolsets: list[AbstractToolset[Any]] = [ours]
        if background_reachable(self.config):
            lifecycle = self.library.filtered(lambda _ctx, tool_def: tool_def.name in LIFECYCLE_TOOLS)
            toolsets.append(described(lifecycle, delegation_text.lifecycle_texts(self.config)))
        return CombinedToolset(toolsets)

    async def wrap_run(self, ctx: RunContext[Any], *, handler: Any) -> Any:
        try:
            return await handler()
        finally:  # a background delegation does not outlive the run that started it
            await self.library.cancel_run_tasks(ctx.run_id)

    async def _shape(self, _ctx: RunContext[Any], tool_defs: list[ToolDefinition]) -> list[ToolDefinition]:
        """`task` offers `mode` only where a delegate runs in `auto` (then it is required), and `model` only
        with a model menu (then as its keys)."""
        auto = any(d.mode == "auto" for d in self.delegates.values())
        shaped: list[ToolDefinition] = []
        for tool_def in tool_defs:
            if tool_def.name == "task":
                schema = dict(tool_def.parameters_json_schema)
                properties = dict(schema.get("properties", {}))
                required = [name for name in schema.get("required", []) if name in properties]
                if not auto:
                    properties.pop("mode", None)
                else:
                    properties["mode"] = {"description": properties["mode"].get("description"), "type": "string",
                                          "enum": ["sync", "async"]}
                    required = [*required, "mode"] if "mode" not in required else required
                if not self.menu:
                    properties.pop("model", None)
                else:
                    properties["model"] = {"description": properties["model"].get("description"), "type": "string",
                                           "enum": sorted(self.menu)}
                tool_def = replace(tool_def, parameters_json_schema={**schema, "properties": properties,
                                                                     "required": required})
            shaped.append(tool_def)
        return shaped

    async def task(self, ctx: RunContext[Any], description: str, subagent_type: str,
                   mode: Literal["sync", "async"] | None = None, model: str | None = None,
                   chat_trace_id: str | None = None) -> str:
        """Hand a self-contained piece of work to one of the delegates listed in your instructions.

        The delegate sees only `description`, never this conversation, and works on its own model with its
        own tools. Use it for work that a listed delegate does better or in parallel; for a specialist of
        your own making use create_agent or delegate, where offered.

        Args:
            description: The complete task: the goal, every fact the delegate needs, and the shape of the answer
                you want back. Nothing else from this conversation reaches it.
            subagent_type: The delegate's name, exactly as listed in your instructions.
            mode: Required for a delegate marked (auto): `sync` waits for its answer, `async` runs it in the
                background and returns a task id at once. Other delegates run in their listed mode.
            model: A key of the model menu in your instructions, to pick what this delegation runs on; omit
                it for the delegate's default. A delegate marked with (models: ...) accepts only those keys.
            chat_trace_id: Continue an earlier conversation with the same delegate in this run (the id an
                earlier answer ended with); omit it to start afresh.

        Returns:
            The delegate's whole answer when it runs synchronously, followed by a chat trace id line
            (`Chat Trace ID: <id>`); when it runs in the background, `Task started in background.` with the
            `Task ID: <id>` that wait_tasks and check_task take. When a ceiling is reached (delegations
            running at once, calls to this delegate, its budget or its timeout) or the delegate failed, one
            sentence saying so, to decide from.
        """
        state = ctx.tool_call_metadata if ctx.tool_call_approved else None
        if is_delegation_state(state):
            return await self._continue(ctx, state)
        delegate = self.delegates.get(subagent_type)
        dynamic_mode = self.dynamic_modes.get(subagent_type)
        if delegate is None and dynamic_mode is None:
            known = ", ".join([*self.delegates, *self.dynamic_modes]) or "none"
            return retry_or_text(ctx, f"There is no delegate {subagent_type!r}; use one of: {known}. A "
                                      "specialist made with create_agent lasts only for the run that made it.")
        resolved = dynamic_mode or (delegate.mode if delegate is not None else "sync")
        if resolved == "auto":
            if mode is None:
                return retry_or_text(ctx, f"{subagent_type!r} runs in the mode you choose: call task again with "
                                          "mode='sync' to wait for its answer or mode='async' to run it in the "
                                          "background.")
            resolved = mode
        option = self._option(ctx, delegate, model) if delegate is not None else None
        if isinstance(option, str):
            return option
        refused = self._ceiling(ctx, subagent_type, delegate)
        if refused is not None:
            return refused
        return await self._run(ctx, delegate, subagent_type, description, resolved, option,
                               lambda run_ctx: self.library.task(run_ctx, description, subagent_type, mode=resolved,
                                                                 chat_trace_id=chat_trace_id))

    async def create_agent(self, ctx: RunContext[Any], name: str, description: str, instructions: str, model: str,
                           mode: Literal["sync", "async"]) -> str:
        """Write a specialist of your own and keep it for the rest of this run, to hand it tasks with task.

        Use it when no listed delegate fits and you will hand the specialist more than one task; for a single
        task use delegate. The specialist gets no tools, no delegates and no memory of its own, and is gone in
        the next turn of the conversation: if task says it is unknown, create it again.

        Args:
            name: Its name for task's subagent_type: letters, digits and hyphens, not a listed delegate's.
            description: One sentence on what it does.
            instructions: Its instructions: role, method and the shape of its answers.
            model: One of the models listed in your instructions for specialists you write; nothing else runs.
            mode: `sync`: task waits for its answers. `async`: task runs it in the background and returns a task id.

        Returns:
            The line `Agent '<name>' created successfully.` with its model and description, or a line starting
            `Error` that says why not (a name taken or malformed, a model not offered, too many specialists).
        """
        refused = self._refuse_dynamic(name, model)
        if refused is not None:
            return refused
        created = await self.library.create_agent(ctx, name=name, description=description, instructions=instructions,
                                                  model=model, capabilities=None, can_ask_questions=False)
        if created.startswith(f"Agent '{name}' created"):
            self.dynamic_modes[name] = mode
            self.facts.specialists[name] = {"name": name, "description": description, "instructions": instructions,
                                              "model": model, "mode": mode}
        return created

    async def delegate(self, ctx: RunContext[Any], description: str, instructions: str, name: str, model: str,
                       mode: Literal["sync", "async"]) -> str:
        """Write a one-shot specialist and hand it one task in the same call.

        Use it for a single task no listed delegate fits; to hand one specialist several tasks, create it
        with create_agent. The specialist gets no tools of its own and sees only `description`.

        Args:
            description: The complete task, with every fact the specialist needs; nothing else reaches it.
            instructions: The specialist's instructions: role, method and the shape of its answer.
            name: A label for it in task listings: letters, digits and hyphens.
            model: One of the models listed in your instructions for specialists you write; nothing else runs.
            mode: `sync` waits for its answer; `async` runs it in the background and returns a task id.

        Returns:
            The same as task gives, the answer or `Task started in background.` with a `Task ID`; a line
            starting `Error` when the name or model is refused, or a sentence when a ceiling was reached.
        """
        refused = self._refuse_dynamic(name, model, keep=False) or self._ceiling(ctx, name, None)
        if refused is not None:
            return refused
        return await self._run(ctx, None, name, description, mode, None,
                               lambda run_ctx: self.library.delegate(run_ctx, description=description,
                                                                     instructions=instructions, name=name,
                                                                     model=model, capabilities=None,
                                                                     can_ask_questions=False, mode=mode))

    def _refuse_dynamic(self, name: str, model: str, *, keep: bool = True) -> str | None:
        if model not in self.facts.model_names:
            offered = ", ".join(sorted(self.facts.model_names)) or "none"
            return f"Error: {model!r} is not a model this organization has a profile for; use one of: {offered}."
        if name in self.delegates:
            return f"Error: {name!r} is already a listed delegate; hand it work with task, or pick another name."
        if keep and len(self.dynamic_modes) >= MAX_DYNAMIC_SPECIALISTS:
            return (f"Error: this run already keeps {MAX_DYNAMIC_SPECIALISTS} specialists; reuse one with task, "
                    "or use delegate for a one-shot task.")
        return None

    def _option(self, ctx: RunContext[Any], delegate: Delegate, key: str | None) -> ModelOption | str | None:
        """The menu entry a delegation runs on: the key given, else the delegate's first allowed key, else
        none (its own model). A key it may not use is the model's mistake, refused before anything is charged."""
        allowed = delegate.controls.models
        if key is None:
            return self.menu[allowed[0]] if allowed else None
        if key not in self.menu or (allowed and key not in allowed):
            valid = ", ".join(allowed or sorted(self.menu))
            return retry_or_text(ctx, f"{delegate.name!r} cannot run on model {key!r}; use one of: {valid}.")
        return self.menu[key]

    def _ceiling(self, ctx: RunContext[Any], name: str, delegate: Delegate | None) -> str | None:
        running = sum(1 for handle in self.library.task_manager.handles.values()
                      if handle.parent_run_id == ctx.run_id and not handle.is_finished)
        if running >= self.config.max_fanout:
            return (f"Not started: {running} delegations are already running, the most this agent runs at once. "
                    "Wait for one to finish (wait_tasks), or do this part yourself.")
        limit = delegate.controls.max_calls if delegate is not None else None
        if limit is not None and self.calls[name] >= limit:
            return (f"Not started: {name!r} has already been handed {limit} task(s) in this run, its limit. "
                    "Use what it returned, another delegate, or do this part yourself.")
        self.calls[name] += 1
        return None

    async def _run(self, ctx: RunContext[RunDeps], delegate: Delegate | None, name: str, description: str,
                   mode: Literal["sync", "async"], option: ModelOption | None,
                   start: Callable[[RunContext[Any]], Any]) -> str:
        """Start one delegation; a background one runs on deps that make its gates refuse rather than park."""
        run_ctx = ctx if mode == "sync" else replace(ctx, deps=ctx.deps.for_background())
        try:
            with self._on_model(delegate, option):
                return str(await start(run_ctx))
        except (ApprovalRequired, CallDeferred):
            state = self._suspension(ctx, delegate, description, option) if delegate is not None else None
            if state is None:  # nothing a person could be shown: refused, never parked on the bare `task` call
                return (f"{name!r} stopped for a decision that cannot be put to a person from here, so it produced "
                        "no answer. Do this part yourself, or leave it out and say so.")
            raise ApprovalRequired(metadata=state) from None
        except UsageLimitExceeded as exc:
            return self._budget_spent(name, delegate, exc)
        except ModelRetry as exc:
            return retry_or_text(ctx, str(exc))

    @contextlib.contextmanager
    def _on_model(self, delegate: Delegate | None, option: ModelOption | None) -> Generator[None, None, None]:
        if delegate is None or option is None:
            yield
            return
        with delegate.built.agent.override(model=option.model, model_settings=option.settings or {}):
            yield

    def _budget_spent(self, name: str, delegate: Delegate | None, exc: UsageLimitExceeded) -> str:
        if isinstance(exc, DelegateTimedOut) and delegate is not None:
            return timed_out_text(name, delegate.controls)
        if delegate is not None and delegate.controls.on_failure:
            return delegate.controls.on_failure
        return (f"{name!r} stopped before finishing: {exc}. Decide from what you already have, hand it a smaller "
                "task, or do this part yourself.")

    def _suspension(self, ctx: RunContext[Any], delegate: Delegate, description: str,
                    option: ModelOption | None) -> dict[str, Any] | None:
        """What resuming this delegate in place needs, and the calls a person is asked about; None when the
        library kept no parked calls to show (a suspension raised rather than returned)."""
        handle = next((h for h in reversed(self.library.task_manager.handles.values())
                       if h.parent_run_id == ctx.run_id and h.subagent_name == delegate.name
                       and h.description == description and h.deferred_requests is not None), None)
        requests = handle.deferred_requests if handle is not None else None
        if handle is None or requests is None or not (requests.approvals or questions_of(requests)):
            return None
        self.library.task_manager.handles.pop(handle.task_id, None)
        return suspension_state(delegate, handle.message_history or "[]", requests,
                                self._menu_key(option))

    def _menu_key(self, option: ModelOption | None) -> str | None:
        return next((key for key, entry in self.menu.items() if entry is option), None)

    async def _continue(self, ctx: RunContext[RunDeps], state: dict[str, Any]) -> str:
        """The approved call's delegate, resumed where it stopped: the person approved that call, not a rerun."""
        delegate = self.delegates.get(state["delegate"])
        if delegate is None:
            return f"{state['delegate']!r} is no longer a delegate of this agent; its approved call was not run."
        option = self.menu.get(state["model"]) if state.get("model") else None
        approvals: dict[str, DeferredToolApprovalResult | bool] = {
            call["tool_call_id"]: True for call in state["calls"]}
        metadata = {call["tool_call_id"]: call["metadata"] for call in state["calls"] if call.get("metadata")}
        try:
            with self._on_model(delegate, option):
                result = await delegate.built.agent.run(
                    message_history=ModelMessagesTypeAdapter.validate_json(state["history"]),
                    deferred_tool_results=DeferredToolResults(approvals=approvals, calls=answers_for(state),
                                                              metadata=metadata),
                    deps=ctx.deps.clone_for_subagent(), usage_limits=usage_limits(delegate.controls))
        except UsageLimitExceeded as exc:
            return self._budget_spent(delegate.name, delegate, exc)
        if isinstance(result.output, DeferredToolRequests):
            if not (result.output.approvals or questions_of(result.output)):
                return (f"{delegate.name!r} stopped for something that cannot be put to a person from here, so it "
                        "produced no answer. Do this part yourself, or leave it out and say so.")
            raise ApprovalRequired(metadata=suspension_state(delegate, result.all_messages_json().decode(),
                                                             result.output, state.get("model")))
        return str(result.output)


def suspension_state(delegate: Delegate, history: str, requests: DeferredToolRequests | None,
                     model: str | None) -> dict[str, Any]:
    approvals = requests.approvals if requests is not None else []
    metadata = requests.metadata if requests is not None else {}
    calls = [{"tool_call_id": call.tool_call_id, "tool_name": call.tool_name,
              "tool_id": delegate.built.stable_id(call.tool_name), "args": call.args_as_dict(),
              "metadata": metadata.get(call.tool_call_id)} for call in approvals]
    questions = [{"tool_call_id": call.tool_call_id,
                  "question": str(call.args_as_dict().get("question", "")) if call.tool_name == ASK_PARENT else None,
                  "choices": choices_of(call.args_as_dict()) if call.tool_name == ASK_PARENT else []}
                 for call in (requests.calls if requests is not None else [])]
    return {"delegate": delegate.name, "history": history, "model": model, "calls": calls, "questions": questions}


def usage_limits(controls: DelegateControls) -> UsageLimits:
    budget = controls.usage_limits
    if budget is None:
        return UsageLimits(request_limit=DELEGATE_REQUEST_LIMIT)
    return UsageLimits(request_limit=budget.request_limit, tool_calls_limit=budget.tool_calls_limit,
                       total_tokens_limit=budget.total_tokens_limit)


def build_delegation(context: BuildContext[SubagentsConfig]) -> Delegation | None:
    """The capability for one run, or None when there is nothing to delegate to or no level left to do it."""
    config = context.config
    gateway = context.run.delegates
    if gateway is None:
        return None
    facts, builder = gateway.facts, gateway.builder
    depth = config.max_depth if facts.depth_left is None else min(config.max_depth, facts.depth_left)
    if depth < 1:  # at the limit a delegate is built without delegation, not with a tool that only refuses
        return None
    delegates = _delegates(config, gateway, depth)
    if not delegates and not config.allow_dynamic:
        return None
    menu = {key: _menu_option(builder, entry) for key, entry in config.models.items()}
    library = create_subagent_toolset(
        subagents=[_library_config(config, facts, delegate) for delegate in delegates.values()],
        include_general_purpose=False, max_nesting_depth=depth,
        usage_limits=lambda _ctx, sub: usage_limits(config.controls(sub["name"])),
        delegation_configuration="persisted_and_oneshot" if config.allow_dynamic else "default",
        allowed_models=sorted(facts.model_names) if config.allow_dynamic else None,
        default_agent_factory=_dynamic_factory(builder) if config.allow_dynamic else None,
        max_agents=MAX_DYNAMIC_SPECIALISTS, max_result_chars=config.max_result_chars,
        ask_user=facts.ask_user if config.allow_questions else None, contain_errors=config.contain_errors)
    return Delegation(config=config, delegates=delegates, menu=menu, library=library, facts=facts, depth=depth)


def _delegates(config: SubagentsConfig, gateway: Delegates, depth: int) -> dict[str, Delegate]:
    facts, builder = gateway.facts, gateway.builder
    share = [capability for capability in config.share_with_delegates if capability != "subagents"]
    built: dict[str, tuple[str, BuiltDelegate]] = {}
    for specialist in config.inline:
        built[specialist.name] = (specialist.description, builder.build_specialist(
            name=specialist.name, instructions=specialist.instructions, model=specialist.model, share=share,
            extra=_extras(config, builder, specialist.name, specialist)))
    for name in facts.pinned:
        if name not in built:
            built[name] = (builder.agent_description(name) or "", builder.build_agent(
                name, depth_left=depth - 1, share=share, extra=_extras(config, builder, name, config.controls(name))))
    for file in read_agent_files(config.agent_folders):
        if file.name not in built:
            override = config.agent_overrides.get(file.name)
            effort = override.effort if override is not None else None
            built[file.name] = (file.description, builder.build_specialist(
                name=file.name, instructions=file.instructions, share=share,
                model=(override.model if override is not None else None) or facts.parent_model,
                model_settings=ModelSettings(thinking=effort) if effort else None,
                extra=_extras(config, builder, file.name, config.controls(file.name))))
    return {name: Delegate(name=name, description=config.controls(name).description or description, built=agent,
                           controls=config.controls(name), mode=config.controls(name).mode or config.mode)
            for name, (description, agent) in built.items()}


def _extras(config: SubagentsConfig, builder: DelegateBuilder, name: str,
            controls: DelegateControls) -> list[AbstractCapability[Any]]:
    """A delegate's own capabilities: the meter, and under `allow_questions` the options its questions may offer."""
    meter = _meter(builder, name, controls)
    return [meter, OffersChoices()] if config.allow_questions else [meter]


def _meter(builder: DelegateBuilder, name: str, controls: DelegateControls) -> DelegateMeter:
    timed_out = timed_out_text(name, controls) if controls.timeout_seconds is not None else ""
    return DelegateMeter(charge=builder.charge, timeout_seconds=controls.timeout_seconds, timed_out=timed_out)


def _menu_option(builder: DelegateBuilder, entry: Any) -> ModelOption:
    if isinstance(entry, str):
        return ModelOption(builder.resolve_model(entry))
    settings = ModelSettings(thinking=entry.effort) if entry.effort else None
    return ModelOption(builder.resolve_model(entry.model), description=entry.description, settings=settings)


def _library_config(config: SubagentsConfig, facts: DelegationFacts, delegate: Delegate) -> SubAgentConfig:
    """A pre-built delegate for the library; it asks questions only when it runs synchronously, the author
    allowed it and the run has somebody to ask."""
    sub = SubAgentConfig(name=delegate.name, description=delegate.description, instructions="",
                         agent=delegate.built.agent,
                         can_ask_questions=config.allow_questions and delegate.mode == "sync"
                         and facts.ask_user is not None)
    if delegate.controls.on_failure is not None:
        sub["on_failure"] = delegate.controls.on_failure
    if delegate.controls.contain_errors is not None:
        sub["contain_errors"] = delegate.controls.contain_errors
    return sub


def _dynamic_factory(builder: DelegateBuilder) -> Callable[[SubAgentConfig], Any]:
    """A model-written specialist, built like an inline one: on a configured profile, metered, nothing shared."""

    def build(sub: SubAgentConfig) -> Any:
        return builder.build_specialist(name=sub["name"], instructions=sub["instructions"], model=str(sub.get("model")),
                                        share=(), extra=[DelegateMeter(charge=builder.charge)]).agent
    return build
