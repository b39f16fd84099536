"""A matplotlib figure for a page or a file, drawn off-screen: the one place the report extra's
matplotlib is imported (`pip install s2s[report]`), only when a figure is made."""

from __future__ import annotations

from typing import TYPE_CHECKING

from seq2seq.errors import EvaluateError

if TYPE_CHECKING:
    from matplotlib.figure import Figure


def new_figure(width: float, height: float) -> Figure:
    """A matplotlib figure drawn by the Agg backend (no display, no global pyplot state).

    Its texts are shown literally: sentences and file names often hold `$`, which matplotlib would
    otherwise read as math (and fail on, or render as something else).
    """
    try:
        import matplotlib
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError:
        raise EvaluateError("--report needs matplotlib: pip install 's2s[report]'") from None
    matplotlib.rcParams["text.parse_math"] = False
    figure = Figure(figsize=(width, height), layout="constrained")
    FigureCanvasAgg(figure)
    return figure
