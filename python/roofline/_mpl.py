"""matplotlib through its object API only: never ``pyplot``, never ``matplotlib.use``.

A figure made here belongs to no pyplot state machine, so saving it to a file never switches
the user's backend (a notebook's inline plots keep working) and nothing accumulates in
``pyplot``'s figure list. Jupyter still shows a returned figure (IPython's figure formatter).
"""

from __future__ import annotations

from typing import Any

__all__ = ["PLOT_INSTALL", "new_figure", "save"]

#: What to install when matplotlib is missing.
PLOT_INSTALL = "pip install roofline[plot]"


def new_figure(figsize: tuple[float, float], **kwargs: Any) -> Any:
    """A ``matplotlib.figure.Figure`` with an Agg canvas; ImportError names the install."""
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError as exc:
        raise ImportError(f"roofline plots need matplotlib: {PLOT_INSTALL}") from exc
    fig = Figure(figsize=figsize, **kwargs)
    FigureCanvasAgg(fig)
    return fig


def save(fig: Any, path: Any, **kwargs: Any) -> None:
    """Write ``fig`` to ``path`` (format from the suffix) without touching any backend."""
    fig.savefig(path, **kwargs)
