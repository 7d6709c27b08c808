"""A scripted model for approval tests: each turn it deploys the service the person named, then answers with what the
tool returned; every request it was sent is kept, so a test reads what the model was told."""

from __future__ import annotations

from pydantic_ai import ModelMessage, ModelRequest
from pydantic_ai.messages import ToolReturnPart
from pydantic_ai.models.function import FunctionModel

from tests.support.scripted import last_prompt, stepped


class Deployer:
    """`deploy <service>` in a message → one `deploy_service(service=…)` call, then `done: <its result>`."""

    def __init__(self) -> None:
        self.requests: list[list[ModelMessage]] = []
        self.model: FunctionModel = stepped(self._step)
        self._calls = 0

    def _step(self, messages: list[ModelMessage]) -> tuple[str, dict[str, object], str] | str:
        self.requests.append(list(messages))
        last = messages[-1]
        returned = [p for p in last.parts if isinstance(p, ToolReturnPart)] if isinstance(last, ModelRequest) else []
        if returned:
            return f"done: {returned[-1].content}"
        self._calls += 1
        return "deploy_service", {"service": last_prompt(messages).split()[-1]}, f"call-{self._calls}"

    def tool_results(self) -> list[str]:
        """The text of every tool result the model was sent, in order, once each."""
        seen: dict[str, str] = {}
        for messages in self.requests:
            for message in messages:
                if isinstance(message, ModelRequest):
                    for part in message.parts:
                        if isinstance(part, ToolReturnPart):
                            seen.setdefault(part.tool_call_id, str(part.content))
        return list(seen.values())
