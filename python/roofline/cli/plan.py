"""``roofline plan``: search the parallel layouts of a training or serving job.

``add_parser(sub)`` adds it to the ``roofline`` parser (it sets ``func=run``).
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from .._format import si
from ._common import make_console

__all__ = ["add_parser", "run"]

_TRAIN_COLS = ("tp", "pp", "dp", "ep", "cp", "zero", "recompute", "offload_layers", "micro_batch",
               "grad_accum", "virtual_stages", "time_s", "tokens_per_s", "mfu",
               "bubble_fraction", "memory_gb", "pareto")
_SERVE_COLS = ("replicas", "tp", "ep", "batch", "tpot_s", "ttft_s", "tokens_per_s_per_gpu",
               "memory_gb", "max_batch", "pareto")


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add the ``plan`` subcommand to an ``argparse`` subparsers object; returns its parser."""
    p: argparse.ArgumentParser = subparsers.add_parser(
        "plan", help="search tp/pp/dp/ep/cp/ZeRO/recompute/offload layouts of a training or "
        "serving job",
        description="Rank the parallel layouts of a job that fit in memory (Pareto front "
        "marked) and report the minimum GPU count that fits.")
    p.add_argument("name", metavar="MODEL", help="built-in model name or a config.json path")
    p.add_argument("--gpus", type=int, required=True, help="GPUs of the job")
    p.add_argument("--hardware", default="H100 SXM", help="accelerator (default %(default)s)")
    p.add_argument("--phase", choices=("train", "decode", "prefill"), default="train")
    p.add_argument("--objective", choices=("throughput", "latency", "cost"),
                   default="throughput")
    p.add_argument("--seq-len", type=int, default=4096, help="sequence / prompt length")
    p.add_argument("--global-batch-tokens", type=int, default=None,
                   help="training tokens per step (default: seq-len x gpus)")
    p.add_argument("--output-len", type=int, default=512, help="serving: tokens generated")
    p.add_argument("--linear-recipe", default=None, help="float8 recipe, e.g. blockwise; serving "
                   "also takes weight-only w4a16 / w8a16")
    p.add_argument("--price", type=float, default=None, help="$ per GPU-hour")
    p.add_argument("--top", type=int, default=10, help="rows shown (table format)")
    p.add_argument("--format", choices=("table", "csv", "json"), default="table")
    p.set_defaults(func=run)
    return p


def run(args: argparse.Namespace) -> int:
    """Run ``roofline plan``; returns the exit status (library errors propagate)."""
    from pathlib import Path

    from .. import transformer

    cfg = (transformer.from_hf(args.name) if Path(args.name).exists()
           else transformer.config(args.name))
    df = transformer.plan(cfg, gpus=args.gpus, hardware=args.hardware, phase=args.phase,
                          objective=args.objective, seq_len=args.seq_len,
                          global_batch_tokens=args.global_batch_tokens,
                          output_len=args.output_len, linear_recipe=args.linear_recipe,
                          price_per_gpu_hour=args.price)
    cols = [c for c in (_TRAIN_COLS if args.phase == "train" else _SERVE_COLS)
            if c in df.columns] + [c for c in ("usd_per_m_tokens",) if c in df.columns]
    if args.format == "csv":
        df.to_csv(sys.stdout, index=False)
        return 0
    if args.format == "json":
        print(json.dumps({**{k: v for k, v in df.attrs.items()},
                          "rows": json.loads(df.to_json(orient="records"))}, indent=2))
        return 0
    from rich.table import Table

    a = df.attrs
    if df.empty:
        print(_none_fit(a, args.gpus), file=sys.stderr)
        return 1
    table = Table(title=f"{a['model']} {a['phase']} on {args.gpus} x {a['hardware']}: "
                  f"{len(df)} layouts fit, minimum {a['min_gpus']} GPUs, "
                  f"searched in {a['search_s']:.2f} s")
    for c in cols:
        table.add_column(c.replace("_", " "), justify="left" if c == "recompute" else "right")
    table.droppable = [c.replace("_", " ") for c in  # type: ignore[attr-defined]
                       ("pareto", "bubble_fraction", "hfu", "tokens_per_s", "mfu")]
    for _, row in df.head(args.top).iterrows():
        table.add_row(*(_cell(c, row[c]) for c in cols))
    make_console().print(table)
    return 0


def _none_fit(a: dict[str, Any], gpus: int) -> str:
    """Why no layout fits, from the planner's ``df.attrs`` (the leanest layout's memory)."""
    what = f"{a['model']} {a['phase']} on {gpus} x {a['hardware']}"
    if "leanest_bytes" not in a:
        return f"no layout of {what} fits in GPU memory"
    lay = a["leanest_layout"]
    shape = ", ".join(f"{k} {lay[k]}" for k in ("tp", "pp", "dp", "cp", "zero", "recompute",
                                                   "offload_layers", "micro_batch") if k in lay)
    more = (f"; the fewest GPUs that fit is {a['min_gpus']}" if a.get("min_gpus")
            else f"; more than {gpus} GPUs are needed (or a shorter sequence, or a smaller "
            "global batch)")
    return (f"no layout of {what} fits: the leanest ({shape}) needs "
            f"{si(a['leanest_bytes'], 'B')} per GPU, over the "
            f"{si(a['capacity_bytes'], 'B')} usable{more}")


def _cell(col: str, v: Any) -> str:
    if col in ("mfu", "bubble_fraction"):
        return f"{v:.1%}"
    if col.endswith("_s") and not col.startswith("tokens"):
        return f"{v * 1e3:,.1f} ms" if v < 1 else f"{v:,.2f} s"
    if col in ("tokens_per_s", "tokens_per_s_per_gpu"):
        return f"{v:,.0f}"
    if col in ("memory_gb", "usd_per_m_tokens"):
        return f"{v:,.2f}"
    if col == "pareto":
        return "*" if v else ""
    return str(v)
