"""``roofline explain-trace``: a PyTorch profiler trace against the roofline, op by op.

``add_parser(sub)`` adds it to the ``roofline`` parser (it sets ``func=run``).
"""

from __future__ import annotations

import argparse
import math
import sys
from typing import Any

from .._format import si
from ._common import CLIError, literal, make_console, print_json, require_matplotlib

__all__ = ["add_parser", "run"]


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add the ``explain-trace`` subcommand to an argparse subparsers object."""
    p: argparse.ArgumentParser = subparsers.add_parser(
        "explain-trace",
        help="explain a PyTorch profiler trace kernel by kernel against the roofline",
        description="Read a Kineto chrome trace (prof.export_chrome_trace, .json or .json.gz; "
        "record_shapes=True), link every GPU kernel to the aten op that launched it, price "
        "each op with the model and rank where the measured time exceeds it.",
    )
    p.add_argument("trace", metavar="TRACE", help="chrome trace file (.json or .json.gz)")
    p.add_argument("--hardware", metavar="NAME", default=None,
                   help="accelerator to price on; default: the trace's device")
    p.add_argument("--efficiency", default="default",
                   help="default, peak, constant or torchao; default: %(default)s")
    p.add_argument("--iterations", type=int, default=None,
                   help="steps in the trace; default: detected (ProfilerStep#N, else a "
                   "repeated top-level op sequence, else 1)")
    p.add_argument("--prior-load", type=float, default=None, metavar="L",
                   help="load of the GPU's power limiter before the trace's first kernel, "
                   "in [0, 1] (0: idle before, 1: running flat out); default: "
                   "rl.trace.explain's")
    p.add_argument("--format", choices=("table", "csv", "json"), default="table",
                   help="csv: the per-op table; json: the whole report; default: table")
    p.add_argument("--top", type=int, default=15, metavar="N",
                   help="rows of the per-op and loss tables (table format); default: %(default)s")
    p.add_argument("--plot", metavar="OUT.png", default=None,
                   help="also save a bar chart of lost time by class")
    p.set_defaults(func=run)
    return p


def _cell(value: Any, kind: str = "s") -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    if kind == "%":
        return f"{value:.0f} %"
    if kind == "n":
        return f"{value:g}"
    if kind == "rate":
        return si(float(value), "B/s")
    if kind == "flops":
        return si(float(value), "FLOP/s")
    return si(float(value), "s")


def run(args: argparse.Namespace) -> int:
    """Run ``roofline explain-trace``; returns the exit status."""
    from ..trace import explain

    if args.top is not None and args.top < 1:
        raise CLIError(f"--top must be a positive integer, got {args.top}")
    if args.plot:
        require_matplotlib("--plot")
    kw = {} if args.prior_load is None else {"prior_load": args.prior_load}
    rep = explain(args.trace, hardware=args.hardware, efficiency=args.efficiency,
                  iterations=args.iterations, **kw)
    if args.plot:
        rep.plot(args.plot)
    if args.format == "json":
        print_json(rep.to_dict())
        return 0
    ops = rep.by_op()
    if args.format == "csv":
        ops.to_csv(sys.stdout, index=False, lineterminator="\n")
        return 0

    from rich.table import Table

    console = make_console()
    console.print(literal(rep.summary().split("\n- ")[0].split("\nnote:")[0], "bold"))
    table = Table(title=f"per op (per step; top {args.top} by measured time)",
                  title_style="bold")
    for col in ("op", "class", "calls", "measured", "model", "% of model", "% of roofline",
                "achieved", "lost"):
        table.add_column(col, justify="left" if col in ("op", "class") else "right")
    table.droppable = ["% of roofline", "achieved", "class", "calls"]  # type: ignore[attr-defined]
    for row in ops.head(args.top).itertuples(index=False):
        achieved = (_cell(row.achieved_flops_per_s, "flops")
                    if row.kind in ("gemm", "attention") else
                    _cell(row.achieved_bytes_per_s, "rate"))
        lost = row.lost_s
        style = "red" if isinstance(lost, float) and lost > 0.05 * row.measured_s else ""
        table.add_row(literal(str(row.name)[:90]), literal(row.kind),
                      literal(_cell(row.calls, "n")), literal(_cell(row.measured_s)),
                      literal(_cell(row.predicted_s)), literal(_cell(row.pct_of_model, "%")),
                      literal(_cell(row.pct_of_roofline, "%")), literal(achieved),
                      literal(_cell(lost), style))
    console.print(table)
    losses = Table(title="lost time (measured - model) by class, per step", title_style="bold")
    for col in ("class", "measured", "model", "lost", "% of loss", "% of step", "kernels"):
        losses.add_column(col, justify="left" if col == "class" else "right")
    for row in rep.losses("class").head(args.top).itertuples(index=False):
        losses.add_row(literal(row.name), literal(_cell(row.measured_s)),
                       literal(_cell(row.predicted_s)), literal(_cell(row.lost_s)),
                       literal(_cell(row.pct_of_lost, "%")), literal(_cell(row.pct_of_step, "%")),
                       literal(_cell(row.kernels, "n")))
    console.print(losses)
    for line in rep.opportunities():
        console.print(literal(f"- {line}"))
    for note in rep.notes:
        console.print(literal(f"note: {note}", "dim"))
    console.print(literal("Times per step. model = the roofline model's prediction (efficiency: "
                          f"{rep.efficiency}); roofline = datasheet peaks; lost = measured - "
                          "model. Full detail: --format json.", "dim"))
    return 0
