"""What the model is told about delegation: the delegates, the mode this run uses, the ceilings.

Written here rather than taken from the library: one list of the delegates (the library would add a
second in `task`'s description), and only what this deployment enforces.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pydantic_ai_harness.subagents import ModelOption

from capabilities.run.tool_replies import ToolText
from capabilities.subagents.config import SubagentsConfig

MODE_SENTENCES = {
    "sync": "`task` waits for the delegate and returns its answer.",
    "async": "`task` starts the delegate in the background and returns a task id at once; collect the result "
             "with wait_tasks or check_task before you answer.",
    "auto": "For each task you choose with `mode`: `sync` waits for the answer, `async` runs the delegate in the "
            "background and returns a task id.",
}
MARKS = {"sync": "waits: task returns its answer", "async": "runs in the background: task returns a task id",
         "auto": "auto: pass mode"}


def instructions(config: SubagentsConfig, delegates: Sequence[Any], menu: Mapping[str, ModelOption],
                 dynamic_models: Sequence[str]) -> str:
    lines = ["## Delegation",
             "You can hand self-contained work to a delegate with `task`. A delegate sees only the description you "
             "give it, never this conversation, so put everything it needs into it.",
             MODE_SENTENCES[config.mode]]
    if delegates:
        lines += ["", "Delegates:"]
        for delegate in delegates:
            marks = [MARKS[delegate.mode]] if delegate.mode != config.mode else []
            if delegate.controls.models:
                marks.append(f"models: {', '.join(delegate.controls.models)}")
            described = f"- {delegate.name}: {delegate.description}" if delegate.description else f"- {delegate.name}"
            lines.append(described + (f" ({'; '.join(marks)})" if marks else ""))
    if menu:
        lines += ["", "Model menu (pass a key as `model` to choose what a delegation runs on):"]
        lines += [f"- {key}" + (f": {option.description}" if option.description else "")
                  for key, option in menu.items()]
    lines += ["", f"At most {config.max_fanout} delegations run at once; past that, task says so instead of starting "
                  "another: wait for one to finish, or do the work yourself."]
    if config.allow_dynamic:
        lines += ["", "You may also write a specialist yourself: create_agent keeps one for this run (hand it tasks "
                      "with task), delegate runs one for a single task. It gets no tools and runs on one of these "
                      f"models: {', '.join(dynamic_models) or 'none'}."]
    return "\n".join(lines)


def lifecycle_texts(config: SubagentsConfig) -> dict[str, ToolText]:
    task_id = "The id task returned when it started the delegation in the background."
    not_found = "`Error: Task '<id>' not found` for an id this run did not start"
    finished = "a line saying it had already finished (read its outcome with check_task)"
    return {
        "check_task": ToolText(
            summary="Show one background delegation's status by its task id, and its complete result once it has "
                    "finished. Use it to look at one task without waiting; to wait for several use wait_tasks.",
            returns="Lines `Task:`, `Subagent:`, `Status:` (pending, running, retrying, completed, failed, "
                    "cancelled or deferred) and `Description:`, then the full untruncated `Result:` when completed, "
                    "`Error:` when failed, `Outcome:` when cancelled or deferred, or `Running for: <s>s`; or "
                    f"{not_found}.",
            args={"task_id": task_id}),
        "wait_tasks": ToolText(
            summary="Wait until background delegations finish, then show each one's outcome. Use it when you "
                    "cannot go on without their results; to look without waiting use check_task.",
            returns="`Task results (mode=..., N/M finished, ...):` then one entry per id: `COMPLETED` with its "
                    f"result cut at {config.max_result_chars} characters and a marker naming check_task, which "
                    "returns the whole text; `FAILED`, `CANCELLED` or `DEFERRED` with the reason; the status of one "
                    "still running when the timeout passed; or `not found`.",
            args={"task_ids": "Ids task returned; an id this run did not start is reported as not found.",
                  "timeout": "Seconds to wait at most (default 300); tasks still running then are reported as "
                             "running, not stopped.",
                  "mode": "`all` (default) waits for every task; `any` returns as soon as one has finished."}),
        "list_active_tasks": ToolText(
            summary="List this run's background delegations that have not finished yet, to find a task id or see "
                    "what is still running.",
            returns="`Active background tasks:` then one line per task: `- <id>: <delegate> (<status>) - <start of "
                    "its description>...`; or `No active background tasks.`"),
        "send_message_to_subagent": ToolText(
            summary="Send a running background delegation an extra instruction, applied at its next step without "
                    "losing its progress. Use it to steer; to stop one use soft_cancel_task.",
            returns="`Message delivered to task '<id>'; ...`; or `Error: Task '<id>' is not accepting messages "
                    f"(status: ...)` once it has stopped running; or {not_found}.",
            args={"task_id": task_id, "message": "The instruction, as you would add it to the task's description."}),
        "soft_cancel_task": ToolText(
            summary="Ask a background delegation to stop at its next step. Prefer it to hard_cancel_task; either way "
                    "the work it has not delivered is lost.",
            returns=f"`Cancellation requested for task '<id>'`; or {finished}; or {not_found}.",
            args={"task_id": task_id}),
        "hard_cancel_task": ToolText(
            summary="Stop a background delegation at once, discarding its partial work. Use it only when "
                    "soft_cancel_task did not stop it.",
            returns=f"`Task '<id>' has been cancelled`; or {finished}; or {not_found}.",
            args={"task_id": task_id}),
    }
