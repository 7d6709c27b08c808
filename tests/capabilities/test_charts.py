"""`charts`: `create_chart` renders the numbers it is given to a PNG and hands it to the run's outbox; a call
with nothing to draw comes back as a retry that names what is missing, and the caps hold."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest
from pydantic_ai import ModelMessage, ModelRequest
from pydantic_ai.messages import RetryPromptPart, ToolReturnPart

from capabilities.charts.build import MAX_POINTS, MAX_SERIES
from capabilities.charts.render import ChartData, render_png
from capabilities.run import FileRefused
from tests.support.capability_runs import MemoryOutbox, assembled, binding_with, run
from tests.support.scripted import stepped

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
MONTHS = ["Jan", "Feb", "Mar"]
SALES = {"key": "sales", "values": [3, 5, 4], "label": "Sales"}


def draws(args: dict[str, Any]) -> Any:
    """Calls `create_chart` with `args` until it returns (a retry counts as not returned), then answers."""

    def step(messages: list[ModelMessage]) -> tuple[str, dict[str, object], str] | str:
        parts = [p for m in messages if isinstance(m, ModelRequest) for p in m.parts if isinstance(p, ToolReturnPart)]
        returned = [p for p in parts if p.outcome != "retried"]
        calls = len(parts)
        if returned:
            return f"answered: {returned[-1].content}"
        return "create_chart", args, f"call-{calls + 1}"
    return stepped(step)


async def chart_run(args: dict[str, Any], outbox: Any = None) -> tuple[list[str], str, MemoryOutbox]:
    """The retry prompts the call got, the final answer, and what reached the outbox."""
    kept = outbox or MemoryOutbox()
    binding = binding_with([{"id": "charts"}])
    result = await run(assembled(binding, draws(args), outbox=kept), "chart it", binding=binding)
    retries = [str(p.content) for m in result.all_messages() if isinstance(m, ModelRequest) for p in m.parts
               if isinstance(p, RetryPromptPart | ToolReturnPart) and getattr(p, "outcome", "retried") == "retried"]
    return retries, result.output, kept


def chart(**changes: Any) -> dict[str, Any]:
    return {"chart_type": "bar", "title": "Sales", "x_values": MONTHS, "series": [SALES], **changes}


async def test_a_chart_is_rendered_to_png_and_handed_to_the_outbox() -> None:
    retries, answer, outbox = await chart_run(chart(title="Sales by month"))
    [(name, data, mime, _caption)] = outbox.files
    assert (retries, name, mime, data[:8]) == ([], "sales-by-month.png", "image/png", PNG_SIGNATURE)
    assert "on its way to the user" in answer


@dataclass(frozen=True, slots=True, kw_only=True)
class Case:
    id: str
    args: dict[str, Any]
    names: str
    """What the retry prompt must say."""


RULES = (
    Case(id="empty-axis", args=chart(x_values=[]), names="x_values is empty"),
    Case(id="no-series", args=chart(series=[]), names="series is empty"),
    Case(id="short-series", args=chart(series=[{**SALES, "values": [3, 5]}]),
         names="Series 'sales' has 2 values but x_values has 3 points"),
    Case(id="long-series", args=chart(series=[{**SALES, "values": [3, 5, 4, 9]}]),
         names="Series 'sales' has 4 values but x_values has 3 points"),
    Case(id="too-many-points", args=chart(x_values=list(range(MAX_POINTS + 1)),
                                          series=[{"key": "s", "values": [1] * (MAX_POINTS + 1)}]),
         names=f"at most {MAX_POINTS}"),
    Case(id="too-many-series", args=chart(series=[{"key": f"s{i}", "values": [1, 2, 3]}
                                                  for i in range(MAX_SERIES + 1)]),
         names=f"at most {MAX_SERIES}"),
    Case(id="duplicate-keys", args=chart(series=[SALES, SALES]), names="its own non-empty key"),
    Case(id="empty-title", args=chart(title=" "), names="title of 1 to 200"),
    Case(id="pie-of-two-series", args=chart(chart_type="pie", series=[SALES, {**SALES, "key": "b"}]),
         names="A pie shows one series"),
    Case(id="pie-with-negatives", args=chart(chart_type="pie", series=[{**SALES, "values": [3, -1, 2]}]),
         names="non-negative"),
    Case(id="scatter-of-categories", args=chart(chart_type="scatter"), names="numeric x_values"),
)


@pytest.mark.parametrize("case", [pytest.param(case, id=case.id) for case in RULES])
async def test_a_chart_with_nothing_right_to_draw_is_a_retry_naming_what_is_missing(case: Case) -> None:
    retries, answer, outbox = await chart_run(case.args)
    assert retries and case.names in retries[0]
    assert outbox.files == [], "nothing was drawn or posted"
    assert case.names in answer, "the last attempt answers with the message instead of ending the run"


@pytest.mark.parametrize("chart_type", ["line", "bar", "pie", "area", "scatter"])
def test_every_chart_type_renders_a_chat_sized_png(chart_type: str) -> None:
    x_values: tuple[str | float, ...] = (1.0, 2.0, 3.0) if chart_type == "scatter" else tuple(MONTHS)
    png = render_png(ChartData(chart_type=chart_type, title="Sales", x_values=x_values,  # type: ignore[arg-type]
                               series=(("Sales", (3.0, 5.0, 4.0)),)))
    assert png[:8] == PNG_SIGNATURE
    width, height = int.from_bytes(png[16:20], "big"), int.from_bytes(png[20:24], "big")
    assert (width, height) == (1200, 675)
    assert len(png) < 200_000


class RefusingOutbox:
    async def post_file(self, *, name: str, data: bytes, mime_type: str | None, caption: str | None = None) -> None:
        raise FileRefused(f"{name} is 12.0 MB, larger than the 10.0 MB allowed here")


async def test_a_chart_the_chat_cannot_take_is_said_as_text_not_retried() -> None:
    retries, answer, _outbox = await chart_run(chart(), outbox=RefusingOutbox())
    assert retries == []
    assert "The chart was drawn but not sent: sales.png is 12.0 MB" in answer
