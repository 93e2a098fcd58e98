"""Charts: the roofline with ops on it, float8 speedup heatmaps, per-op breakdowns.

Needs matplotlib (an optional dependency: ``pip install roofline[plot]``), imported only here.
Figures are made with matplotlib's object API, never ``pyplot``: the user's backend is never
switched, and a figure is shown by returning it in a notebook or saved with ``fig.savefig``.
Every function returns a ``matplotlib.figure.Figure`` (``fig.savefig("out.png")``) and draws
into ``ax`` when one is given.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ._format import si
from ._mpl import new_figure
from .estimate import Estimate, HardwareMismatchWarning
from .float8.layer import linear as float8_linear
from .hardware import PEAK_CLASSES, HardwareLike
from .hardware import hardware as _hardware

__all__ = ["breakdown_chart", "float8_heatmap", "roofline_chart"]


def _figure(ax: Any, size: tuple[float, float]) -> tuple[Any, Any]:
    """``ax``'s figure, else a new object-API figure (never pyplot: no backend switch)."""
    if ax is not None:
        return ax.figure, ax
    fig = new_figure(size, layout="constrained")
    return fig, fig.add_subplot()


def _named(fn: str, ops: Any) -> list[tuple[str, Estimate[Any]]]:
    if ops is None:
        return []
    items = list(ops.items()) if isinstance(ops, Mapping) else [
        (getattr(e, "label", "") or f"op {i}", e) for i, e in enumerate(ops)]
    out = []
    for name, e in items:
        if not isinstance(e, Estimate):
            raise TypeError(f"{fn}: ops must hold Estimates, got {type(e).__name__} for {name!r}")
        if len(e.shape) > 1:
            raise ValueError(f"{fn}: ops must be scalar estimates or 1-D sweeps, got shape "
                             f"{e.shape} for {name!r}")
        out.append((str(name), e))
    return out


def roofline_chart(
    hardware: HardwareLike = None,
    ops: Sequence[Estimate[Any]] | Mapping[str, Estimate[Any]] | None = None,
    *,
    dtypes: Sequence[str] = ("bf16", "fp8"),
    measured: Sequence[float] | Mapping[str, float] | None = None,
    ax: Any = None,
    title: str | None = None,
) -> Any:
    """The roofline of an accelerator, one line per dtype class, with ops as points.

    Parameters
    ----------
    hardware : Hardware or str, optional
        Accelerator (default: detected / ``rl.set_default_hardware``).
    ops : sequence or mapping of Estimate, optional
        Scalar estimates drawn at (intensity, FLOPs / predicted time), labelled by their
        ``label`` or the mapping key, each label placed clear of the other labels, the roofs
        and the legend; 1-D array estimates (a sweep) drawn as a line in the legend. An
        estimate of other hardware than the chart's warns (HardwareMismatchWarning).
    dtypes : sequence of str
        Peak classes to draw (``fp64 fp32 tf32 bf16 fp8 int8 fp4``); classes the hardware
        lacks are skipped.
    measured : sequence or mapping of float, optional
        Measured seconds of the scalar ops (same order, or the same keys): drawn as hollow
        points at FLOPs / measured time, each joined to its model point by a dotted line.
    ax : matplotlib Axes, optional
        Draw here instead of a new figure.

    Returns
    -------
    matplotlib.figure.Figure

    Notes
    -----
    The y axis is in TFLOP/s. Each roof is ``min(peak, bandwidth · intensity)`` with datasheet
    peaks; the ridge point
    ``peak / bandwidth`` is marked. Points below the roof show how far the model (or the
    measurement) sits under the plain roofline.
    """
    fn = "roofline_chart"
    hw = _hardware(hardware)
    classes = [d for d in dtypes if d in PEAK_CLASSES]
    bad = [d for d in dtypes if d not in PEAK_CLASSES]
    if bad:
        raise ValueError(f"{fn}: dtypes must be among {', '.join(PEAK_CLASSES)}, got {bad[0]!r}")
    named = _named(fn, ops)
    meas: list[float | None] = [None] * len(named)
    if measured is not None:
        if isinstance(measured, Mapping):
            unknown = [k for k in measured if k not in dict(named)]
            if unknown:
                raise ValueError(f"{fn}: measured has keys that are not ops: {unknown}")
            meas = [measured.get(n) for n, _ in named]
        else:
            meas = list(measured)
            if len(meas) != len(named):
                raise ValueError(f"{fn}: measured has {len(meas)} times for {len(named)} ops")
        for m in meas:
            if m is not None and not (np.isfinite(m) and m > 0):
                raise ValueError(f"{fn}: measured times must be positive seconds, got {m!r}")
    for name, e in named:
        if e.hardware and e.hardware != hw.name:
            warnings.warn(f"{fn}: {name!r} was estimated on {e.hardware}, the chart shows "
                          f"{hw.name}", HardwareMismatchWarning, stacklevel=2)
        if e.shape != () and meas[[n for n, _ in named].index(name)] is not None:
            raise ValueError(f"{fn}: measured times are for scalar ops, got one for the sweep "
                             f"{name!r}")
    fig, ax = _figure(ax, (7.5, 5.0))
    bw = hw.mem_bytes_per_s
    tera = 1e12
    intens = [float(v) for _, e in named for v in np.ravel(e.intensity) if np.isfinite(v)]
    ridges = [hw.ridge_point(c) for c in classes if getattr(hw, f"{c}_flops_per_s")]
    lo = min([*intens, *ridges, 1.0]) / 4
    hi = max([*intens, *ridges, 1.0]) * 4
    x = np.logspace(np.log10(lo), np.log10(hi), 256)
    import matplotlib as mpl

    colors = mpl.rcParams["axes.prop_cycle"].by_key()["color"]
    roofs = []
    texts: list[Any] = []
    ridge_labels: list[tuple[str, float, float, str]] = []
    for i, c in enumerate(classes):
        peak = getattr(hw, f"{c}_flops_per_s")
        if not peak:
            continue
        color = colors[i % len(colors)]
        (line,) = ax.plot(x, np.minimum(peak, bw * x) / tera, color=color, lw=2,
                          label=f"{c}: {si(peak, 'FLOP/s')}")
        roofs.append(line)
        ridge = peak / bw
        ax.plot([ridge], [peak / tera], "o", color=color, ms=5)
        ridge_labels.append((f"ridge {ridge:.0f} FLOP/B", ridge, peak / tera, color))
    points: list[tuple[str, float, float, str]] = []
    sweeps: list[Any] = []
    for k, ((name, e), m) in enumerate(zip(named, meas, strict=True)):
        it = np.ravel(np.asarray(e.intensity, dtype=float))
        fl = np.ravel(np.asarray(e.flops, dtype=float))
        ts = np.ravel(np.asarray(e.time_s, dtype=float))
        ok = np.isfinite(it) & (fl > 0)
        if not ok.any():
            continue
        y = fl[ok] / ts[ok] / tera
        if e.shape != ():  # a sweep: a line through its points, labelled at its end
            order = np.argsort(it[ok])
            color = colors[(len(classes) + k) % len(colors)]
            (sweep,) = ax.plot(it[ok][order], y[order], "-", color=color, lw=1.5, marker=".",
                               ms=4, label=name)
            sweeps.append(sweep)
            continue
        i_op, y_op = float(it[0]), float(y[0])
        ax.plot([i_op], [y_op], "D", color="black", ms=5)
        points.append((name, i_op, y_op, "black"))
        if m is not None:
            ym = float(fl[0]) / m / tera
            ax.plot([i_op], [ym], "o", mfc="none", mec="crimson", ms=7)
            ax.plot([i_op, i_op], [ym, y_op], ":", color="crimson", lw=1)  # measured -> model
    if any(m is not None for m in meas):
        ax.plot([], [], "D", color="black", ms=5, label="model")
        ax.plot([], [], "o", mfc="none", mec="crimson", label="measured")
    elif points:
        ax.plot([], [], "D", color="black", ms=5, label="model")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("arithmetic intensity (FLOP/byte)")
    ax.set_ylabel("TFLOP/s")
    ax.set_title(title or f"Roofline: {hw.name} ({si(bw, 'B/s')})")
    ax.grid(True, which="both", alpha=0.25)
    ax.legend(loc="lower right", fontsize=8)
    _place_labels(ax, ridge_labels + points, texts, roofs + sweeps)
    return fig


#: Offsets (points) tried in turn for an op's label: right, above, below, left, further out.
_OFFSETS = [(6, 4), (6, -12), (-6, 4), (-6, -12), (6, 14), (6, -22), (-6, 14), (-6, -22),
            (6, 26), (6, -34), (-6, 26), (-6, -34)]


def _place_labels(ax: Any, points: list[tuple[str, float, float, str]], placed: list[Any],
                  roofs: list[Any]) -> None:
    """Label each op point at the first offset whose text box overlaps no other label, roof
    line or the legend (else the least crowded one)."""
    fig = ax.figure
    renderer = fig.canvas.get_renderer()
    boxes = [t.get_window_extent(renderer) for t in placed]
    legend = ax.get_legend()
    if legend is not None:
        boxes.append(legend.get_window_extent(renderer))
    roof_px = [ax.transData.transform(np.column_stack(r.get_data())) for r in roofs]

    def crowding(bb: Any) -> int:
        hits = sum(bb.overlaps(b) for b in boxes)
        for xy in roof_px:
            inside = ((xy[:, 0] >= bb.x0 - 2) & (xy[:, 0] <= bb.x1 + 2)
                      & (xy[:, 1] >= bb.y0 - 2) & (xy[:, 1] <= bb.y1 + 2))
            hits += int(inside.any())
        return int(hits)

    for name, xi, yi, color in points:
        best = None
        for dx, dy in _OFFSETS:
            t = ax.annotate(name, (xi, yi), textcoords="offset points", xytext=(dx, dy),
                            fontsize=8, ha="left" if dx > 0 else "right", color=color)
            bb = t.get_window_extent(renderer)
            score = crowding(bb)
            if best is None or score < best[0]:
                if best is not None:
                    best[1].remove()
                best = (score, t, bb)
            else:
                t.remove()
            if score == 0:
                break
        if best is not None:
            boxes.append(best[2])


def float8_heatmap(
    recipe: str = "tensorwise",
    hardware: HardwareLike = None,
    *,
    m: Sequence[int] | None = None,
    kn: Sequence[int] | None = None,
    mode: str = "training",
    efficiency: Any = "default",
    ax: Any = None,
    annotate: bool = True,
) -> Any:
    """Float8 speedup of a linear over a grid of M (rows) and K = N (columns).

    Parameters
    ----------
    recipe, hardware, mode, efficiency
        As for :func:`roofline.float8.linear`.
    m, kn : sequence of int, optional
        Token counts and square weight sizes; default powers of two 1024..16384 (M) and
        1024..16384 (K = N), as in torchao's float8 README figures.
    annotate : bool
        Write the speedup in each cell.

    Returns
    -------
    matplotlib.figure.Figure

    Notes
    -----
    One vectorised :func:`roofline.float8.linear` call over the grid; the color scale is
    centred on 1.0 (red: slower in float8, blue: faster).
    """
    ms = np.asarray([2**i for i in range(10, 15)] if m is None else list(m))
    kns = np.asarray([2**i for i in range(10, 15)] if kn is None else list(kn))
    r = float8_linear(ms[:, None], kns[None, :], kns[None, :], recipe=recipe,
                      hardware=hardware, mode=mode, efficiency=efficiency)
    sp = np.asarray(r.speedup, dtype=float)
    fig, ax = _figure(ax, (1.1 * len(kns) + 2.5, 0.7 * len(ms) + 1.8))
    from matplotlib.colors import TwoSlopeNorm

    span = max(abs(float(sp.max()) - 1.0), abs(1.0 - float(sp.min())), 0.05)
    norm = TwoSlopeNorm(vcenter=1.0, vmin=1.0 - span, vmax=1.0 + span)
    im = ax.imshow(sp, cmap="RdBu", norm=norm, origin="lower", aspect="auto")
    ax.set_xticks(range(len(kns)), [str(int(v)) for v in kns])
    ax.set_yticks(range(len(ms)), [str(int(v)) for v in ms])
    ax.set_xlabel("K = N")
    ax.set_ylabel("M")
    if annotate:
        for i in range(sp.shape[0]):
            for j in range(sp.shape[1]):
                ax.text(j, i, f"{sp[i, j]:.2f}", ha="center", va="center", fontsize=8,
                        color="white" if abs(sp[i, j] - 1.0) > 0.6 * span else "black")
    fig.colorbar(im, ax=ax, label="speedup (bf16 time / float8 time)")
    ax.set_title(f"float8 {r.recipe} {r.mode} speedup on {r.hardware}")
    return fig


def _breakdown_series(fn: str, report: Any, by: str) -> Any:
    import pandas as pd

    if isinstance(report, pd.DataFrame):
        table = report
    elif callable(getattr(report, "to_pandas", None)):
        table = report.to_pandas()
    else:
        raise TypeError(
            f"{fn}: report must be a roofline.torch estimate, an rl.transformer estimate or a "
            f"pandas DataFrame, got {type(report).__name__}"
        )
    if "time_s" not in table.columns:
        raise ValueError(f"{fn}: the table has no time_s column")
    if by not in table.columns:
        raise ValueError(
            f"{fn}: by must be a column of the table ({', '.join(map(str, table.columns))}), "
            f"got {by!r}"
        )
    return table.groupby(by)["time_s"].sum().sort_values(ascending=False)


def breakdown_chart(
    report: Any,
    by: str = "op",
    *,
    top: int = 15,
    ax: Any = None,
    title: str | None = None,
) -> Any:
    """Horizontal bars of time per op (or module, kind, block) of a model estimate.

    Parameters
    ----------
    report : TorchEstimate, ModelEstimate or pandas.DataFrame
        ``roofline.torch.estimate(...)``, ``rl.transformer.estimate(...)`` or any table with
        a ``time_s`` column.
    by : str
        Column to group by: ``"op"``, ``"kind"``, ``"module"`` (torch) or ``"block"``
        (transformer).
    top : int
        Bars shown; the rest are summed into one "other" bar.

    Returns
    -------
    matplotlib.figure.Figure

    Notes
    -----
    Bar lengths are summed predicted times; each bar is labelled with its time and share of
    the total.
    """
    fn = "breakdown_chart"
    if isinstance(top, bool) or not isinstance(top, int) or top < 1:
        raise ValueError(f"{fn}: top must be a positive integer, got {top!r}")
    s = _breakdown_series(fn, report, by)
    total = float(s.sum())
    if len(s) > top:
        other = float(s.iloc[top:].sum())
        s = s.iloc[:top]
        s.loc[f"other ({len(s)}+)"] = other
    fig, ax = _figure(ax, (8.0, 0.35 * len(s) + 1.5))
    labels = [str(k) for k in s.index][::-1]
    values = s.to_numpy(dtype=float)[::-1]
    ax.barh(labels, values * 1e6, color="steelblue")
    for y, v in enumerate(values):
        ax.text(v * 1e6, y, f" {si(v, 's')} ({v / max(total, 1e-300):.0%})", va="center",
                fontsize=8)
    ax.set_xlabel("predicted time (µs)")
    ax.set_xlim(0, float(values.max()) * 1e6 * 1.3 if len(values) else 1)
    ax.set_title(title or f"Time by {by}: total {si(total, 's')}")
    return fig
