"""`charts`: `create_chart` draws numbers the model already has as a PNG and posts it into the thread.

It fetches, computes and aggregates nothing. The numbers arrive as columns (one `x_values` list, one
`values` list per series), which a JSON Schema can describe; a chart with nothing to draw (an empty axis,
no series, a series whose length does not match the axis) comes back as a retry naming what is missing,
since a frame around no data reads as "no trend" and would be kept in the conversation. Rendering is
matplotlib's Agg canvas in a worker thread (`charts_render.py`), never on the event loop; the picture goes
through the run's outbox, which posts it once the run answers.
"""

from __future__ import annotations

from capabilities.registry import CapabilityDef, Deferred, ToolInfo

CAPABILITY = CapabilityDef(
    id="charts", name="Charts", category="analysis",
    description="Draws charts from numbers the agent already has and posts them into the conversation as pictures.",
    tools=(ToolInfo(id="create_chart", summary="Draw a chart from numbers you already have, so the user can see "
                                               "them."),),
    build=Deferred("capabilities.charts.build:build"), posts_files=True)
