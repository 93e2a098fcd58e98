"""Predicted against measured kernel time, log-log, one color per family (matplotlib, lazily)."""

from __future__ import annotations

from pathlib import Path

from .compare import Comparison

__all__ = ["plot_comparisons"]


def plot_comparisons(comparisons: list[tuple[str, Comparison]], path: Path, model: str) -> Path:
    """Write a PNG of predicted vs measured seconds with the y = x line; returns ``path``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    if not comparisons:
        raise ValueError("validate: nothing to plot (no row could be predicted)")
    families = sorted({c.family for _, c in comparisons})
    cmap = plt.get_cmap("tab20", max(len(families), 1))
    fig, ax = plt.subplots(figsize=(8, 7), dpi=110)
    for i, fam in enumerate(families):
        pts = [(c.measured_s, c.predicted_s) for _, c in comparisons if c.family == fam]
        ax.scatter([p[0] for p in pts], [p[1] for p in pts], s=12, color=cmap(i), label=fam,
                   alpha=0.8)
    lo = min(min(c.measured_s, c.predicted_s) for _, c in comparisons)
    hi = max(max(c.measured_s, c.predicted_s) for _, c in comparisons)
    ax.plot([lo, hi], [lo, hi], color="black", linewidth=1, label="y = x")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("measured time (s)")
    ax.set_ylabel(f"predicted time (s), model: {model}")
    ax.set_title("roofline validate: predicted vs measured")
    ax.legend(fontsize=6, ncol=2, loc="upper left")
    ax.grid(True, which="both", alpha=0.2)
    fig.tight_layout()
    fig.savefig(path, format="png")
    plt.close(fig)
    return path
