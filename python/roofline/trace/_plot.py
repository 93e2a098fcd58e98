"""Bar chart of lost time (matplotlib's object API, imported only here)."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np

from .._mpl import new_figure, save

if TYPE_CHECKING:
    from ._report import TraceReport

__all__ = ["plot_losses"]


def plot_losses(rep: TraceReport, path: Any = None, by: str = "class", top: int = 10) -> Any:
    """Measured and predicted time per step of the ``top`` groups with the largest loss.

    Each bar is the measured time. Where the kernels were slower than the model, the model's
    part is blue and the rest (measured − model) red, "lost"; where they beat the model, the
    whole measured bar is green and a hollow outline reaches to the model's time, so a faster
    group is never drawn as lost. The legend sits below the axes, over no bar. The figure
    belongs to no pyplot state (the user's backend is never switched); it is saved to
    ``path`` when one is given.
    """
    df = rep.losses(by)
    df = df[[not math.isnan(v) for v in df["lost_s"]]].head(top).iloc[::-1]
    n = len(df)
    fig = new_figure((8, 0.45 * max(3, n) + 1.9), layout="constrained")
    ax = fig.add_subplot()
    names = [str(v)[:60] for v in df["name"]]
    measured = np.asarray(df["measured_s"], dtype=float) * 1e3
    predicted = np.asarray(df["predicted_s"], dtype=float) * 1e3
    y = np.arange(n)
    slow = measured >= predicted
    fast = ~slow
    ax.barh(y[slow], predicted[slow], color="tab:blue", label="model")
    ax.barh(y[slow], measured[slow] - predicted[slow], left=predicted[slow], color="tab:red",
            label="lost (measured − model)")
    if fast.any():
        ax.barh(y[fast], measured[fast], color="tab:green",
                label="measured, faster than the model")
        ax.barh(y[fast], predicted[fast], fill=False, edgecolor="tab:green", linestyle="--",
                label="model (beaten)")
    ax.set_yticks(y, names)
    ax.set_xlabel("ms per step")
    ax.set_title(f"{rep.source} on {rep.hardware}: lost time by {by}")
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.5 / max(3, n) - 0.12),
              ncol=2, fontsize=8, frameon=False)
    if path is not None:
        save(fig, path, dpi=120)
    return fig
