"""Bar chart of lost time (matplotlib, imported only here)."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ._report import TraceReport

__all__ = ["plot_losses"]


def plot_losses(rep: TraceReport, path: Any = None, by: str = "class", top: int = 10) -> Any:
    """Measured and predicted time per step of the ``top`` groups with the largest loss."""
    import matplotlib

    if path is not None:
        matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    df = rep.losses(by)
    df = df[[not math.isnan(v) for v in df["lost_s"]]].head(top).iloc[::-1]
    fig, ax = plt.subplots(figsize=(8, 0.45 * max(3, len(df)) + 1.2))
    names = [str(n)[:60] for n in df["name"]]
    ax.barh(names, df["predicted_s"] * 1e3, color="tab:blue", label="model")
    ax.barh(names, df["lost_s"] * 1e3, left=df["predicted_s"] * 1e3, color="tab:red",
            label="lost (measured − model)")
    ax.set_xlabel("ms per step")
    ax.set_title(f"{rep.source} on {rep.hardware}: lost time by {by}")
    ax.legend(loc="lower right")
    fig.tight_layout()
    if path is not None:
        fig.savefig(path, dpi=120)
    return fig
