"""Predicted against measured kernel time, one scatter plot per shared measurement file.

Uses the row functions of ``benchmarks/validate.py`` (every ``rows_*`` function there: the
same rows and the same predictions as the accuracy table) and writes
``docs/img/accuracy_<file>.png``. Run::

    python benchmarks/plot_accuracy.py [--data data/measurements] [--out docs/img]

Each plot shows the default (calibrated) model as filled markers, one colour per op family,
and the datasheet roofline (``"peak"``) as grey crosses, against the identity line and a
±20 % band; the title gives the median absolute error of both.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import matplotlib
import matplotlib.ticker

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import validate  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


def all_rows(data: Path) -> list[tuple[str, str, float, dict[str, float]]]:
    """Every (file, family, measured_s, {preset: predicted_s}) row validate.py models."""
    rows: list[tuple[str, str, float, dict[str, float]]] = []
    for name in sorted(dir(validate)):
        fn = getattr(validate, name)
        if name.startswith("rows_") and callable(fn):
            rows.extend(fn(data))
    return rows


def _stem(file: str) -> str:
    """File name for a plot: 'x.jsonl [a b]' -> 'x_a_b'."""
    base, _, area = file.partition(" [")
    stem = Path(base).stem
    if area:
        stem += "_" + "".join(ch if ch.isalnum() else "_" for ch in area.rstrip("]"))
    return stem.strip("_").replace("__", "_")


def _usable(rows: list[tuple[str, float, dict[str, float]]]
            ) -> list[tuple[str, float, dict[str, float]]]:
    """Rows with a measured value and a prediction for the default and peak presets."""
    return [(f, m, p) for f, m, p in rows
            if np.isfinite(m) and m > 0 and "default" in p and "peak" in p]


def plot_ratios(file: str, rows: list[tuple[str, float, dict[str, float]]], out: Path) -> Path:
    """Files whose rows are headline rates (measured = 1, predicted = a time ratio)."""
    fig, ax = plt.subplots(figsize=(5.2, 3.2))
    x = np.arange(len(rows))
    ax.bar(x - 0.2, [p["default"] for _, _, p in rows], 0.4, label="model (default)")
    ax.bar(x + 0.2, [p["peak"] for _, _, p in rows], 0.4, color="0.7",
           label="datasheet roofline")
    ax.axhline(1.0, color="0.3", lw=0.8)
    ax.axhspan(1 / 1.2, 1.2, color="0.92", zorder=0)
    ax.set_xticks(x, [f"{f} {i + 1}" for i, (f, _, _) in enumerate(rows)], fontsize=7,
                  rotation=10)
    ax.set_ylabel("predicted / measured time")
    ax.set_title(f"{file}\n(headline maxima: rate of the best modeled shape)", fontsize=9)
    ax.legend(fontsize=7, frameon=False)
    fig.tight_layout()
    path = out / f"accuracy_{_stem(file)}.png"
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def plot_file(file: str, rows: list[tuple[str, float, dict[str, float]]], out: Path) -> Path:
    """Write one scatter plot (or a ratio bar chart for headline files); returns its path."""
    rows = _usable(rows)
    if all(m == 1.0 for _, m, _ in rows):
        return plot_ratios(file, rows, out)
    fig, ax = plt.subplots(figsize=(5.2, 4.6))
    meas_all = np.array([m for _, m, _ in rows]) * 1e6
    lo, hi = meas_all.min() / 1.6, meas_all.max() * 1.6
    for _, _, pred in rows:  # the roofline of tiny kernels can be far below: clipped below
        lo = min(lo, pred["default"] * 1e6 / 1.6)
        hi = max(hi, pred["default"] * 1e6 * 1.6)
    grid = np.geomspace(lo, hi, 50)
    ax.fill_between(grid, grid / 1.2, grid * 1.2, color="0.9", label="±20 %")
    ax.plot(grid, grid, color="0.4", lw=0.8)
    peak = np.maximum(np.array([p["peak"] for _, _, p in rows]) * 1e6, lo * 1.05)
    ax.scatter(meas_all, peak, marker="x", s=18, color="0.6", lw=0.8, label="datasheet roofline")
    families = sorted({f for f, _, _ in rows})
    for fam in families:
        sel = [(m, p) for f, m, p in rows if f == fam]
        ref = fam.startswith("reference:")  # implementations the model does not claim
        ax.scatter([m * 1e6 for m, _ in sel], [p["default"] * 1e6 for _, p in sel],
                   s=10 if ref else 16, alpha=0.45 if ref else 0.85,
                   marker="^" if ref else "o", label=f"{fam} ({len(sel)})")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(lo, hi)
    ax.set_ylim(lo, hi)
    for axis in (ax.xaxis, ax.yaxis):  # major ticks only: minor labels collide on short ranges
        axis.set_minor_formatter(matplotlib.ticker.NullFormatter())
    ax.set_xlabel("measured kernel time (µs)")
    ax.set_ylabel("predicted kernel time (µs)")
    claimed = [(m, p) for f, m, p in rows if not f.startswith("reference:")] or [
        (m, p) for _, m, p in rows]
    err = {k: float(np.median([abs(p[k] / m - 1) for m, p in claimed]))
           for k in ("default", "peak")}
    ax.set_title(f"{file}\nmedian error: model {err['default']:.1%}, "
                 f"datasheet roofline {err['peak']:.1%}", fontsize=9)
    ax.legend(fontsize=7, loc="upper left", frameon=False)
    ax.grid(True, which="major", lw=0.3, color="0.8")
    fig.tight_layout()
    path = out / f"accuracy_{_stem(file)}.png"
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path,
                        default=ROOT / "data" / "measurements")
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "img")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    by_file: dict[str, list[tuple[str, float, dict[str, Any]]]] = {}
    for file, family, meas, pred in all_rows(args.data):
        by_file.setdefault(file, []).append((family, meas, pred))
    for file, rows in sorted(by_file.items()):
        path = plot_file(file, rows, args.out)
        n = len(_usable(rows))
        print(f"{path} ({n} rows with a value, {path.stat().st_size / 1e3:.0f} kB)")


if __name__ == "__main__":
    main()
