"""Draws one chart as PNG bytes with matplotlib's Agg canvas, sized to read well in a chat thread.

A `Figure` on its own `FigureCanvasAgg`, never `pyplot`: pyplot keeps global figure state and picks a GUI
backend, while a bare figure is safe to draw in a worker thread (`asyncio.to_thread`) beside others. The look
is quiet on purpose: a left-aligned title, no box, light horizontal guides, direct colours that stay apart.
"""

# matplotlib's stubs leave `**kwargs` unannotated, so each drawing method with keyword styling reads as partly
# unknown; this module is where the product meets matplotlib, and it calls nothing else.
# pyright: reportUnknownMemberType=false

from __future__ import annotations

import io
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal, cast

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.patches import Wedge
    from matplotlib.text import Text

SIZE = (8.0, 4.5)
"""Inches: a 16:9 picture, which chat clients show wide without cropping."""
DPI = 150
"""1200 by 675 pixels: sharp on a phone, small enough to post (tens of KB)."""
PALETTE = ("#4C78A8", "#F58518", "#54A24B", "#E45756", "#72B7B2", "#B279A2",
           "#EECA3B", "#9D755D", "#FF9DA6", "#BAB0AC", "#1F4E79", "#8C6D31")
"""Tableau-like colours in an order that keeps neighbours apart; twelve, one per series at most."""
INK = "#333333"
FAINT = "#DDDDDD"
MAX_TICK_LABELS = 12
"""Category labels shown on the x axis; with more points, every n-th is shown."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ChartData:
    """A chart checked by `create_chart`: every series has one finite number per x value."""

    chart_type: Literal["line", "bar", "pie", "area", "scatter"]
    title: str
    x_values: tuple[str | float, ...]
    series: tuple[tuple[str, tuple[float, ...]], ...]
    """(legend label, values) per series."""
    x_label: str | None = None
    y_label: str | None = None
    stacked: bool = False
    legend: bool | None = None
    grid: bool = True


def render_png(chart: ChartData) -> bytes:
    """The chart as PNG bytes (blocking: call it in a thread)."""
    # matplotlib takes most of a second to import: loaded by the first chart, not by every process that lists
    # the capabilities (`gateway check`, the CLI, each replica's start).
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    figure = Figure(figsize=SIZE, dpi=DPI, facecolor="white")
    FigureCanvasAgg(figure)
    axes = figure.add_subplot()
    if chart.chart_type == "pie":  # a donut sits centred: its title goes to the picture's corner, not the ring's
        _pie(axes, chart)
        figure.suptitle(chart.title, x=0.03, ha="left", fontsize=14, fontweight="bold", color=INK)
    else:
        _cartesian(axes, chart)
        axes.set_title(chart.title, loc="left", fontsize=14, fontweight="bold", color=INK, pad=14)
    figure.tight_layout()
    out = io.BytesIO()
    figure.savefig(out, format="png", dpi=DPI, metadata={"Software": None})
    return out.getvalue()


def _cartesian(axes: Axes, chart: ChartData) -> None:
    numeric = all(isinstance(x, int | float) for x in chart.x_values)
    positions: Sequence[float] = [float(x) for x in chart.x_values] if numeric and chart.chart_type != "bar" \
        else list(range(len(chart.x_values)))
    draw = {"line": _lines, "area": _areas, "bar": _bars, "scatter": _points}[chart.chart_type]
    draw(axes, chart, positions)
    if not (numeric and chart.chart_type != "bar"):
        _category_ticks(axes, chart.x_values)
    _frame(axes, chart)
    shown = chart.legend if chart.legend is not None else len(chart.series) > 1
    if shown:
        axes.legend(frameon=False, fontsize=9, loc="upper left", bbox_to_anchor=(1.0, 1.0), labelcolor=INK)


def _lines(axes: Axes, chart: ChartData, positions: Sequence[float]) -> None:
    marker = "o" if len(positions) <= 24 else None
    for index, (label, values) in enumerate(chart.series):
        axes.plot(positions, values, label=label, color=_colour(index), linewidth=2.2, marker=marker, markersize=4)


def _areas(axes: Axes, chart: ChartData, positions: Sequence[float]) -> None:
    if chart.stacked:
        axes.stackplot(positions, *[values for _label, values in chart.series],
                       labels=[label for label, _values in chart.series],
                       colors=[_colour(i) for i in range(len(chart.series))], alpha=0.85)
        return
    for index, (label, values) in enumerate(chart.series):
        axes.fill_between(positions, values, color=_colour(index), alpha=0.25)
        axes.plot(positions, values, label=label, color=_colour(index), linewidth=2)


def _bars(axes: Axes, chart: ChartData, positions: Sequence[float]) -> None:
    count = len(chart.series)
    if chart.stacked:
        bottoms = [0.0] * len(positions)
        for index, (label, values) in enumerate(chart.series):
            axes.bar(positions, values, 0.7, bottom=bottoms, label=label, color=_colour(index))
            bottoms = [b + v for b, v in zip(bottoms, values, strict=True)]
        return
    width = 0.8 / count
    for index, (label, values) in enumerate(chart.series):
        offset = (index - (count - 1) / 2) * width
        axes.bar([p + offset for p in positions], values, width * 0.92, label=label, color=_colour(index))


def _points(axes: Axes, chart: ChartData, positions: Sequence[float]) -> None:
    for index, (label, values) in enumerate(chart.series):
        axes.scatter(positions, values, label=label, color=_colour(index), s=28, alpha=0.85, edgecolors="white",
                     linewidths=0.5)


def _pie(axes: Axes, chart: ChartData) -> None:
    """A donut: the shares read as percentages on the ring, the names in the legend beside it."""
    _label, values = chart.series[0]
    names = [str(x) for x in chart.x_values]
    # With `autopct`, matplotlib 3.10 returns (wedges, texts, autotexts) and 3.11 a container that unpacks as that
    # tuple; the 3.11 stubs type the container as a bare tuple.
    wedges, _texts, autotexts = cast("tuple[list[Wedge], list[Text], list[Text]]", axes.pie(
        values, colors=[_colour(i) for i in range(len(values))], startangle=90, counterclock=False,
        autopct=lambda share: f"{share:.0f}%" if share >= 4 else "", pctdistance=0.78,
        wedgeprops={"width": 0.42, "edgecolor": "white", "linewidth": 1.5}))
    for text in autotexts:
        text.set_color("white")
        text.set_fontsize(9)
        text.set_fontweight("bold")
    axes.set_aspect("equal")
    if chart.legend is not False:
        axes.legend(wedges, names, frameon=False, fontsize=9, loc="center left", bbox_to_anchor=(1.0, 0.5),
                    labelcolor=INK)


def _category_ticks(axes: Axes, labels: Sequence[str | float]) -> None:
    step = max(1, -(-len(labels) // MAX_TICK_LABELS))
    shown = range(0, len(labels), step)
    axes.set_xticks(list(shown), [_short(labels[i]) for i in shown])
    if max((len(_short(labels[i])) for i in shown), default=0) * len(shown) > 70:
        for tick in axes.get_xticklabels():
            tick.set_rotation(30)
            tick.set_horizontalalignment("right")


def _frame(axes: Axes, chart: ChartData) -> None:
    from matplotlib.ticker import FuncFormatter, MaxNLocator  # loaded with the figure, see `render_png`

    for side in ("top", "right"):
        axes.spines[side].set_visible(False)
    for side in ("left", "bottom"):
        axes.spines[side].set_color(FAINT)
    axes.tick_params(colors=INK, labelsize=9, length=0, pad=6)
    axes.yaxis.set_major_locator(MaxNLocator(nbins=6))
    axes.yaxis.set_major_formatter(FuncFormatter(_tick_label))
    if chart.grid:
        axes.grid(axis="y", color=FAINT, linewidth=0.8)
        axes.set_axisbelow(True)
    if chart.x_label:
        axes.set_xlabel(chart.x_label, color=INK, fontsize=10, labelpad=8)
    if chart.y_label:
        axes.set_ylabel(chart.y_label, color=INK, fontsize=10, labelpad=8)
    if chart.chart_type in ("bar", "area") and min(min(v) for _l, v in chart.series) >= 0:
        axes.set_ylim(bottom=0)


def _tick_label(value: float, _position: int | None) -> str:
    return _number(value)


def _number(value: float) -> str:
    """1200 → '1.2k', 3_400_000 → '3.4M': tick labels that stay short."""
    for size, suffix in ((1e9, "B"), (1e6, "M"), (1e3, "k")):
        if abs(value) >= size:
            return f"{value / size:.1f}".rstrip("0").rstrip(".") + suffix
    return f"{value:.2f}".rstrip("0").rstrip(".") if value % 1 else f"{value:.0f}"


def _short(label: str | float) -> str:
    text = str(label)
    return text if len(text) <= 16 else text[:15] + "…"


def _colour(index: int) -> str:
    return PALETTE[index % len(PALETTE)]
