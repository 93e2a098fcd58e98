"""Predicted against measured kernel time, log-log, one style per family (matplotlib's object
API, imported lazily)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .._mpl import new_figure, save
from .compare import Comparison

__all__ = ["family_styles", "plot_comparisons"]

#: Ten tab10 colours times eight marker shapes: 80 distinct (colour, marker) pairs.
_MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*")


def family_styles(families: list[str]) -> dict[str, tuple[Any, str]]:
    """A distinct (colour, marker) pair for each family, for up to 80 families (then repeats).

    Family ``i`` gets colour ``i % 10`` of tab10 and marker ``(i // 10) % 8``: neighbours in
    sorted order differ in colour, and two families share a colour only with different
    markers.
    """
    from matplotlib import colormaps

    cmap = colormaps["tab10"]
    return {f: (cmap(i % 10), _MARKERS[(i // 10) % len(_MARKERS)])
            for i, f in enumerate(families)}


def plot_comparisons(comparisons: list[tuple[str, Comparison]], path: Path, model: str) -> Path:
    """Write a PNG of predicted vs measured seconds with the y = x line; returns ``path``.

    The figure is made with matplotlib's object API: the user's backend is never switched.
    """
    if not comparisons:
        raise ValueError("validate: nothing to plot (no row could be predicted)")
    families = sorted({c.family for _, c in comparisons})
    styles = family_styles(families)
    fig = new_figure((10, 7), dpi=110, layout="constrained")
    ax = fig.add_subplot()
    for fam in families:
        pts = [(c.measured_s, c.predicted_s) for _, c in comparisons if c.family == fam]
        color, marker = styles[fam]
        ax.scatter([p[0] for p in pts], [p[1] for p in pts], s=14, color=color, marker=marker,
                   label=fam, alpha=0.8)
    lo = min(min(c.measured_s, c.predicted_s) for _, c in comparisons)
    hi = max(max(c.measured_s, c.predicted_s) for _, c in comparisons)
    ax.plot([lo, hi], [lo, hi], color="black", linewidth=1, label="y = x")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("measured time (s)")
    ax.set_ylabel(f"predicted time (s), model: {model}")
    ax.set_title("roofline validate: predicted vs measured")
    ax.legend(fontsize=6, ncol=1 + len(families) // 25, loc="upper left",
              bbox_to_anchor=(1.01, 1.0), frameon=False)
    ax.grid(True, which="both", alpha=0.2)
    save(fig, path, format="png")
    return path
