"""The tools and builder of `charts`, imported with its first build; its declaration (config, tools,
scopes) is `capabilities/charts/__init__.py`."""

from __future__ import annotations

import asyncio
import math
import re
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field
from pydantic_ai import RunContext
from pydantic_ai.capabilities import Capability

from capabilities.charts.render import ChartData, render_png
from capabilities.registry import NoConfig
from capabilities.run import BuildContext, FileRefused, Outbox
from capabilities.run.tool_replies import function_toolset, retry_or_text

MAX_POINTS = 500
"""Points on the axis, per chart."""
MAX_SERIES = 12
MAX_TITLE = 200
MAX_LABEL = 80
ChartType = Literal["line", "bar", "pie", "area", "scatter"]


class Series(BaseModel):
    """One line, set of bars, or slice set: a number for every point of the axis."""

    model_config = ConfigDict(extra="forbid")

    key: str = Field(description="A short id for the series, unique in this chart, e.g. 'revenue'.")
    values: list[float] = Field(description="One number per x value, in the same order; exactly as many as "
                                            "x_values has.")
    label: str | None = Field(default=None, description="The name shown in the legend; the key when left out.")


class ChartStyle(BaseModel):
    """How the chart looks; every field is optional."""

    model_config = ConfigDict(extra="forbid")

    x_label: str | None = Field(default=None, description="The x axis' title, e.g. 'Month'.")
    y_label: str | None = Field(default=None, description="The y axis' title, e.g. 'Revenue (EUR)'.")
    stacked: bool = Field(default=False, description="Stack the series of a bar or area chart on each other.")
    legend: bool | None = Field(default=None, description="Show the legend; by default only with two or more "
                                                          "series (always for a pie).")
    grid: bool = Field(default=True, description="Light guide lines behind the data.")


@dataclass(frozen=True, slots=True, kw_only=True)
class ChartTools:
    """`create_chart`, posting through one run's outbox."""

    outbox: Outbox

    async def create_chart(self, ctx: RunContext[Any], chart_type: ChartType, title: str,
                           x_values: list[str | float], series: list[Series],
                           style: ChartStyle | None = None) -> str:
        """Draw a chart from numbers you already have, so the user sees them as a picture in this chat.

        Use it when a trend, a comparison or a share reads better as a picture than as a table. It renders only
        the numbers you pass: it fetches, computes and aggregates nothing, so work the numbers out first. For a
        picture of something to be drawn (not plotted), this is the wrong tool.

        Args:
            chart_type: `line` or `area` for a trend over the axis, `bar` to compare categories, `pie` for the
                shares of one whole (exactly one series, no negative numbers), `scatter` for two numeric
                variables (numeric x values).
            title: What the chart shows, at most 200 characters, e.g. 'Monthly sales, 2025'.
            x_values: The points of the axis, in order: category names or numbers (dates as text such as
                '2025-03'); at least 1, at most 500.
            series: The data, one entry per line/bar group/slice set, each with exactly one number per x value;
                at least 1, at most 12.
            style: Axis titles, stacking, legend and grid; leave it out for sensible defaults.

        Returns:
            A line saying the chart (its type, title, how many series and points) is on its way to the user as a
            picture in this conversation; or, when the chat cannot take it, a line saying why it was not sent.
        """
        problem = _problem(chart_type, title, x_values, series)
        if problem is not None:
            return retry_or_text(ctx, problem)
        look = style or ChartStyle()
        chart = ChartData(chart_type=chart_type, title=title.strip(), x_values=tuple(x_values),
                          series=tuple((s.label or s.key, tuple(s.values)) for s in series),
                          x_label=look.x_label, y_label=look.y_label, stacked=look.stacked,
                          legend=look.legend, grid=look.grid)
        png = await asyncio.to_thread(render_png, chart)
        try:
            await self.outbox.post_file(name=f"{_slug(chart.title)}.png", data=png, mime_type="image/png")
        except FileRefused as refused:
            return f"The chart was drawn but not sent: {refused}"
        return (f"The {chart_type} chart '{chart.title}' ({len(series)} series, {len(x_values)} points) is on its "
                "way to the user as a picture in this conversation. Do not repeat its numbers as a table unless "
                "asked; refer to it in your answer instead.")


def _problem(chart_type: str, title: str, x_values: list[str | float], series: list[Series]) -> str | None:
    """What is missing or wrong in a call, as a retry prompt that says what a correct call has; None: drawable."""
    if not title.strip() or len(title) > MAX_TITLE:
        return f"Give the chart a title of 1 to {MAX_TITLE} characters saying what it shows."
    if not x_values:
        return ("x_values is empty: the axis needs at least one point. Pass the categories or x numbers, one per "
                "data point, e.g. ['Jan', 'Feb', 'Mar'].")
    if len(x_values) > MAX_POINTS:
        return (f"x_values has {len(x_values)} points; a chart takes at most {MAX_POINTS}. Aggregate the data "
                "(by week or month, say) or show a slice of it.")
    if not series:
        return ("series is empty: the chart needs at least one series, e.g. [{'key': 'sales', 'values': [3, 5, 4]}] "
                "with one number per x value.")
    if len(series) > MAX_SERIES:
        return f"{len(series)} series is too many to read; a chart takes at most {MAX_SERIES}. Keep the main ones."
    keys = [s.key for s in series]
    if len(set(keys)) != len(keys) or any(not key.strip() for key in keys):
        return "Every series needs its own non-empty key; two series here share one or have none."
    for entry in series:
        if len(entry.values) != len(x_values):
            return (f"Series '{entry.key}' has {len(entry.values)} values but x_values has {len(x_values)} points: "
                    "give exactly one number per x value, in the same order.")
        if not all(math.isfinite(v) for v in entry.values):
            return f"Series '{entry.key}' holds a value that is not a finite number; pass plain numbers only."
        if entry.label is not None and len(entry.label) > MAX_LABEL:
            return f"The label of series '{entry.key}' is longer than {MAX_LABEL} characters; shorten it."
    return _type_problem(chart_type, x_values, series)


def _type_problem(chart_type: str, x_values: list[str | float], series: list[Series]) -> str | None:
    if chart_type == "pie":
        if len(series) != 1:
            return f"A pie shows one series (the shares of one whole); this call has {len(series)}. Use a bar chart."
        if any(v < 0 for v in series[0].values) or sum(series[0].values) <= 0:
            return "A pie needs non-negative numbers that add up to more than zero; use a bar chart for these."
    if chart_type == "scatter" and not all(isinstance(x, int | float) for x in x_values):
        return "A scatter chart needs numeric x_values; for categories use a bar or line chart."
    return None


def _slug(title: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-")[:60] or "chart"


def build(context: BuildContext[NoConfig]) -> Capability[Any]:
    tools = ChartTools(outbox=context.outbox)
    return Capability(toolsets=[function_toolset([tools.create_chart], toolset_id="charts")])
