"""The report of :func:`roofline.trace.explain`: per kernel, per op, per module, and losses.

Times of the aggregated views (``by_op``, ``by_module``, ``by_class``, ``losses``) are per
step (the trace's totals divided by :attr:`TraceReport.iterations`), so they add up to
:attr:`TraceReport.measured_s`. ``kernels()`` lists every GPU event of the trace (all steps).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .._checks import flag, positive_float, positive_int
from .._errors import ArgumentValueError
from .._format import si
from ._hints import describe, hint

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["TraceReport"]

_SUMS = ("measured_s", "predicted_s", "roofline_s", "flops", "bytes")
_BY = {"class": "kind", "kind": "kind", "op": "op_label", "module": "module"}


def _nan_sum(values: list[float]) -> float:
    priced = [v for v in values if not math.isnan(v)]
    return math.fsum(priced) if priced else math.nan


def _per_step_count(count: int, steps: int) -> int | float:
    """``count / steps``, an ``int`` when it divides evenly (a count shows as ``1``, not
    ``1.0``; a table column of whole counts stays integer)."""
    return count // steps if count % steps == 0 else count / steps


def _pct(num: float, den: float) -> float:
    return 100.0 * num / den if den > 0 and not math.isnan(num) else math.nan


def _gross(groups: list[dict[str, Any]]) -> float:
    """Sum of the positive losses of a grouping (what ``pct_of_lost`` is a share of)."""
    return math.fsum(a["lost_s"] for a in groups
                     if not math.isnan(a["lost_s"]) and a["lost_s"] > 0)


@dataclass
class TraceReport:
    """A profiler trace explained against the roofline, kernel by kernel.

    Attributes
    ----------
    source, hardware : str
        Where the trace came from; the accelerator it is priced on.
    iterations : int
        Steps the trace holds, and the rule that found them (:attr:`iteration_rule`).
    measured_s : float
        GPU time per step: kernel + memcpy + memset durations / iterations.
    predicted_s : float
        The model's time per step for the priced kernels (unpriced ones add nothing; their
        measured time is :attr:`unpriced_s`).
    priced_measured_s, unpriced_s : float
        Measured time per step of the priced and of the unpriced kernels.
    priced_fraction : float
        ``priced_measured_s / measured_s``.
    op_error : float
        Time-weighted per-op error over the priced ops (``sum |predicted - measured| /
        sum measured`` per (op, shapes)): how right the per-op prices are, not only the total.
    launches : float
        GPU events per step.
    idle_s, span_s : float
        Per step: GPU idle time between kernels inside a step (host-bound stretches), and the
        time from the step's first kernel start to its last kernel end.
    """

    source: str
    hardware: str
    efficiency: str
    iterations: int
    iteration_rule: str
    rows: list[dict[str, Any]] = field(repr=False)
    notes: list[str] = field(default_factory=list, repr=False)
    #: the power limiter's clock (fraction of boost) of each GEMM / attention row, by row
    #: index; kept beside the rows, not in them (a 22nd key would double each row's dict)
    clocks: dict[int, float] = field(default_factory=dict, repr=False)

    # ----------------------------------------------------------------- totals

    def _per_step(self, values: list[float]) -> float:
        return _nan_sum(values) / self.iterations if values else 0.0

    @property
    def measured_s(self) -> float:
        return math.fsum(r["measured_s"] for r in self.rows) / self.iterations

    @property
    def predicted_s(self) -> float:
        total = _nan_sum([r["predicted_s"] for r in self.rows])
        return 0.0 if math.isnan(total) else total / self.iterations

    @property
    def priced_measured_s(self) -> float:
        return math.fsum(r["measured_s"] for r in self.rows if r["priced"]) / self.iterations

    @property
    def unpriced_s(self) -> float:
        return self.measured_s - self.priced_measured_s

    @property
    def priced_fraction(self) -> float:
        m = self.measured_s
        return self.priced_measured_s / m if m > 0 else 0.0

    @property
    def lost_s(self) -> float:
        """Measured minus predicted time per step, over the priced kernels."""
        return self.priced_measured_s - self.predicted_s

    @property
    def op_error(self) -> float:
        """Time-weighted per-op error of the model over the priced ops:
        ``sum_op |predicted_op - measured_op| / sum_op measured_op``, one term per (op,
        shapes) row of :meth:`by_op` (its priced kernels). Unlike ``|lost_s| /
        priced_measured_s``, errors of opposite sign do not cancel. NaN with nothing priced."""
        num, den = [], []
        for g in self._group("op_label"):
            if g["priced_measured_s"] > 0 and math.isfinite(g["predicted_s"]):
                num.append(abs(g["predicted_s"] - g["priced_measured_s"]))
                den.append(g["priced_measured_s"])
        return math.fsum(num) / math.fsum(den) if den else math.nan

    def _op_error_text(self) -> str:
        """:attr:`op_error` for display: a percentage, or why there is none."""
        err = self.op_error
        return "n/a (no kernel priced)" if math.isnan(err) else f"{100 * err:.1f} %"

    @property
    def launches(self) -> float:
        return len(self.rows) / self.iterations

    @property
    def idle_s(self) -> float:
        return math.fsum(r["gap_before_s"] for r in self.rows
                         if not r["first_in_step"]) / self.iterations

    @property
    def span_s(self) -> float:
        spans = []
        for it in range(self.iterations):
            rs = [r for r in self.rows if r["iteration"] == it]
            if rs:
                spans.append(max(r["start_s"] + r["measured_s"] for r in rs)
                             - min(r["start_s"] for r in rs))
        return math.fsum(spans) / max(1, len(spans))

    # ----------------------------------------------------------------- tables

    def kernels(self) -> pd.DataFrame:
        """One row per GPU event (every step), in start order.

        Columns: ``name``, ``kind``, ``op``, ``shapes``, ``module``, ``region``, ``iteration``,
        ``stream``, ``start_s`` (from the first event), ``measured_s``, ``predicted_s`` (NaN
        where not priced), ``roofline_s``, ``flops``, ``bytes``, ``achieved_flops_per_s``,
        ``achieved_bytes_per_s``, ``pct_of_roofline``, ``pct_of_model``, ``lost_s``,
        ``gap_before_s``, ``bound``, ``priced``, ``how`` (the ``rl.*`` call, or why unpriced),
        ``clock`` (GEMM and attention kernels: the fraction of the boost clock the power
        limiter's load sets for it, ``1 - (1 - f) L``; NaN for the others).
        """
        import pandas as pd

        cols = ["name", "kind", "op", "shapes", "module", "region", "iteration", "stream",
                "start_s", "measured_s", "predicted_s", "roofline_s", "flops", "bytes",
                "achieved_flops_per_s", "achieved_bytes_per_s", "pct_of_roofline",
                "pct_of_model", "lost_s", "gap_before_s", "bound", "priced", "how", "clock"]
        out = []
        clocks = self.clocks
        for i, r in enumerate(self.rows):
            row = {c: r.get(c) for c in cols}
            row.update(self._rates(r))
            row["clock"] = clocks.get(i, math.nan)
            out.append(row)
        return pd.DataFrame(out, columns=cols)

    @staticmethod
    def _rates(r: dict[str, Any]) -> dict[str, float]:
        m = r["measured_s"]
        return {
            "achieved_flops_per_s": r["flops"] / m if m > 0 else math.nan,
            "achieved_bytes_per_s": r["bytes"] / m if m > 0 else math.nan,
            "pct_of_roofline": _pct(r["roofline_s"], m),
            "pct_of_model": _pct(r["predicted_s"], m),
            "lost_s": m - r["predicted_s"],
        }

    def _group(self, key: str) -> list[dict[str, Any]]:
        groups: dict[Any, list[dict[str, Any]]] = {}
        for r in self.rows:
            groups.setdefault(r[key], []).append(r)
        out = []
        n = self.iterations
        for name, rs in groups.items():
            agg: dict[str, Any] = {"name": name}
            if key == "op_label":
                agg["op"], agg["shapes"] = rs[0]["op"], rs[0]["shapes"]
            agg["kind"] = max({r["kind"] for r in rs},
                              key=lambda k: sum(r["measured_s"] for r in rs if r["kind"] == k))
            agg["calls"] = _per_step_count(len({r["op_uid"] for r in rs}), n)
            agg["kernels"] = _per_step_count(len(rs), n)
            agg["measured_s"] = math.fsum(r["measured_s"] for r in rs) / n
            priced = [r for r in rs if r["priced"]]
            agg["priced_measured_s"] = math.fsum(r["measured_s"] for r in priced) / n
            for c in _SUMS[1:]:
                agg[c] = _nan_sum([r[c] for r in priced]) / n if priced else math.nan
            pm = agg["priced_measured_s"]
            agg["achieved_flops_per_s"] = agg["flops"] / pm if pm > 0 else math.nan
            agg["achieved_bytes_per_s"] = agg["bytes"] / pm if pm > 0 else math.nan
            agg["pct_of_roofline"] = _pct(agg["roofline_s"], pm)
            agg["pct_of_model"] = _pct(agg["predicted_s"], pm)
            agg["lost_s"] = pm - agg["predicted_s"] if priced else math.nan
            agg["pct_of_step"] = _pct(agg["measured_s"], self.measured_s)
            agg["bound"] = max(priced, key=lambda r: r["measured_s"])["bound"] if priced else ""
            agg["how"] = (max(rs, key=lambda r: r["measured_s"])["how"]
                          if key == "op_label" else "")
            out.append(agg)
        out.sort(key=lambda a: -a["measured_s"])
        return out

    def _frame(self, key: str) -> pd.DataFrame:
        import pandas as pd

        return pd.DataFrame(self._group(key))

    def to_pandas(self) -> pd.DataFrame:
        """The report's table: :meth:`by_op` (per step, one row per (op, shapes)); the
        groupings :meth:`by_module`, :meth:`by_class` and the per-event :meth:`kernels` are
        its other views."""
        return self.by_op()

    def _repr_html_(self) -> str:
        from .._html import result_html

        return result_html(f"{self.source} on {self.hardware}: {self.iterations} step(s)", [
            ("GPU time per step", si(self.measured_s, "s")),
            ("priced kernels", f"{si(self.priced_measured_s, 's')} "
                               f"({100 * self.priced_fraction:.1f} %)"),
            ("model", si(self.predicted_s, "s")),
            ("lost (measured - model)", si(self.lost_s, "s")),
            ("per-op error (time-weighted)", self._op_error_text()),
            ("idle between kernels", si(self.idle_s, "s")),
            ("GPU events per step", f"{self.launches:g}"),
        ], self.to_pandas())

    def by_op(self) -> pd.DataFrame:
        """Per step, one row per (op, shapes): calls, kernels, measured and predicted time,
        roofline time, FLOPs, bytes, achieved rates, % of roofline and of the model, lost time.
        Sorted by measured time."""
        return self._frame("op_label")

    def by_module(self) -> pd.DataFrame:
        """Per step, one row per module (or top-level region when the trace has no module
        annotations), same columns as :meth:`by_op`."""
        return self._frame("module")

    def by_class(self) -> pd.DataFrame:
        """Per step, one row per kernel class (gemm, attention, copy, ...)."""
        return self._frame("kind")

    def losses(self, by: str = "class") -> pd.DataFrame:
        """Lost time (measured − predicted, per step) ranked, largest first.

        Parameters
        ----------
        by : {"class", "op", "module"}
            Grouping. Unpriced groups come last with NaN loss.

        Returns
        -------
        pandas.DataFrame
            Columns ``name``, ``measured_s``, ``predicted_s``, ``lost_s``, ``pct_of_lost``
            (share of the sum of the positive losses of this grouping), ``pct_of_step``
            (share of the step's GPU time), ``kernels``.
        """
        import pandas as pd

        if not isinstance(by, str) or by not in _BY:
            raise ArgumentValueError("TraceReport.losses", "by", f"must be one of "
                                     f"{sorted(_BY)}, got {by!r}")
        rows = self._ranked(_BY[by])
        total = _gross(rows)
        out = [{"name": a["name"], "kind": a["kind"], "measured_s": a["measured_s"],
                "predicted_s": a["predicted_s"], "lost_s": a["lost_s"],
                "pct_of_lost": _pct(a["lost_s"], total), "pct_of_step": a["pct_of_step"],
                "kernels": a["kernels"]} for a in rows]
        return pd.DataFrame(out)

    def _ranked(self, key: str) -> list[dict[str, Any]]:
        groups = self._group(key)
        return sorted(groups, key=lambda a: (math.isnan(a["lost_s"]),
                                             -(0.0 if math.isnan(a["lost_s"]) else a["lost_s"])))

    def gaps(self, min_s: float = 5e-6) -> pd.DataFrame:
        """GPU idle stretches inside a step of at least ``min_s`` (host-bound: the GPU waited
        for the CPU), largest first, with the op whose kernel ended the wait."""
        import pandas as pd

        min_s = positive_float("TraceReport.gaps", "min_s", min_s, allow_zero=True)
        rs = [r for r in self.rows if not r["first_in_step"] and r["gap_before_s"] >= min_s]
        rs.sort(key=lambda r: -r["gap_before_s"])
        return pd.DataFrame([{"iteration": r["iteration"], "start_s": r["start_s"],
                              "gap_s": r["gap_before_s"], "next_kernel": r["name"],
                              "next_op": r["op"], "module": r["module"]} for r in rs],
                            columns=["iteration", "start_s", "gap_s", "next_kernel", "next_op",
                                     "module"])

    # ----------------------------------------------------------------- words

    def opportunities(self, top: int = 3) -> list[str]:
        """The largest losses by op, in plain words, e.g. ``"cat copies (aten::cat): 6.3 ms
        of 8.0 ms per step, 79 % of the loss; a static cache removes them"``."""
        # a slice bound otherwise: -1 silently dropped the last line, 1.5 raised a TypeError
        top = positive_int("TraceReport.opportunities", "top", top)
        step = self.measured_s
        ranked = self._ranked("op_label")
        total = _gross(ranked)
        out = []
        for a in ranked[:top]:
            if math.isnan(a["lost_s"]) or a["lost_s"] <= 0:
                break
            what = describe(a["op"], a["kind"])
            advice = hint(a["op"], a["kind"], a["bound"])
            if "dropout_p=" in a["how"]:
                advice = ("it runs with dropout (its random bits are priced on the integer "
                          "pipe; attention without dropout skips them); " + advice)
            out.append(
                f"{what} ({a['name']}): {si(a['measured_s'], 's')} of {si(step, 's')} per "
                f"step, {si(a['lost_s'], 's')} above the model "
                f"({_pct(a['lost_s'], total):.0f} % of the loss); {advice}"
            )
        if self.unpriced_s > 0.05 * step:
            share = 100 - 100 * self.priced_fraction
            out.append(f"{si(self.unpriced_s, 's')} per step ({share:.0f} %) is unpriced "
                       "(see kernels()['how'] for why)")
        idle = self.idle_s
        if idle > 0.1 * step:
            out.append(f"the GPU idles {si(idle, 's')} per step between kernels: host-bound "
                       "(launch overhead or CPU work); CUDA graphs or torch.compile help")
        return out

    def summary(self) -> str:
        """Totals and the top opportunities as a few lines of text."""
        lines = [
            f"{self.source} on {self.hardware}: {self.iterations} step(s) "
            f"({self.iteration_rule}), {self.launches:g} GPU events per step",
            f"GPU time {si(self.measured_s, 's')} per step; priced kernels "
            f"{si(self.priced_measured_s, 's')} ({100 * self.priced_fraction:.1f} %), model "
            f"{si(self.predicted_s, 's')}, lost {si(self.lost_s, 's')}; idle between kernels "
            f"{si(self.idle_s, 's')}",
            f"per-op error {self._op_error_text()} (time-weighted over the priced ops; "
            "errors of opposite sign do not cancel)",
        ]
        lines += [f"- {s}" for s in self.opportunities()]
        lines += [f"note: {n}" for n in self.notes]
        return "\n".join(lines)

    def __repr__(self) -> str:
        return (f"TraceReport({self.source} on {self.hardware}: {self.iterations} step(s), "
                f"measured {si(self.measured_s, 's')}/step, predicted "
                f"{si(self.predicted_s, 's')} for {100 * self.priced_fraction:.1f} % priced, "
                f"lost {si(self.lost_s, 's')})")

    # ----------------------------------------------------------------- export

    def to_dict(self, kernels: bool = True) -> dict[str, Any]:
        """Everything as plain JSON-ready values (NaN becomes None)."""
        kernels = flag("TraceReport.to_dict", "kernels", kernels)
        def clean(v: Any) -> Any:
            if isinstance(v, float) and math.isnan(v):
                return None
            if isinstance(v, dict):
                return {k: clean(x) for k, x in v.items()}
            if isinstance(v, list):
                return [clean(x) for x in v]
            if hasattr(v, "item"):
                return clean(v.item())
            return v

        def records(df: Any) -> list[dict[str, Any]]:
            return [clean(r) for r in df.to_dict(orient="records")]

        doc: dict[str, Any] = {
            "source": self.source, "hardware": self.hardware, "efficiency": self.efficiency,
            "iterations": self.iterations, "iteration_rule": self.iteration_rule,
            "measured_s": self.measured_s, "predicted_s": self.predicted_s,
            "priced_measured_s": self.priced_measured_s, "unpriced_s": self.unpriced_s,
            "priced_fraction": self.priced_fraction, "lost_s": self.lost_s,
            "launches": self.launches, "idle_s": self.idle_s, "span_s": self.span_s,
            "opportunities": self.opportunities(), "notes": list(self.notes),
            "losses_by_class": records(self.losses("class")),
            "by_op": records(self.by_op()), "by_module": records(self.by_module()),
        }
        if kernels:
            doc["kernels"] = records(self.kernels())
        return dict(clean(doc))

    def plot(self, path: Any = None, by: str = "class", top: int = 10) -> Any:
        """Horizontal bars of lost time per step (measured − predicted) by class / op / module;
        saved to ``path`` when given. Returns the matplotlib figure."""
        from ._plot import plot_losses

        return plot_losses(self, path=path, by=by, top=top)
