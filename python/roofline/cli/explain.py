"""``roofline explain``: a measured kernel time against its roofline and the model.

``add_parser(sub)`` adds it to the ``roofline`` parser; each op subcommand sets ``func`` to
its runner. Output: a table (rich) or ``--format json`` (SI units).
"""

from __future__ import annotations

import argparse
import sys
import warnings
from typing import Any

import numpy as np

from .._format import si
from ..explain import ImpossibleMeasurementWarning, explain, pct_text
from ..ops.attention import attention
from ..ops.gemm import gemm
from ._common import (
    CLIError,
    add_hardware_options,
    count,
    literal,
    make_console,
    meta,
    print_json,
    resolve_hardware,
    write_csv,
)

__all__ = ["add_parser"]


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--measured-us", type=float, required=True, metavar="T",
                   help="measured kernel time in microseconds; a time more than 10 %% under "
                   "the datasheet roofline is impossible: flagged, and the exit status is 1")
    p.add_argument("--dtype", default="bf16",
                   help="input format (bf16, fp16, fp8, ...); default: %(default)s")
    add_hardware_options(p)
    p.add_argument("--format", choices=("table", "csv", "json"), default="table",
                   help="csv / json: every field in SI units (percentages as 0-100; csv: one "
                   "row); default: table")


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add ``explain gemm`` and ``explain attention`` to an argparse subparsers object."""
    p: argparse.ArgumentParser = subparsers.add_parser(
        "explain",
        help="a measured kernel time against its roofline and the model's prediction",
        description="Achieved FLOP/s and bytes/s of a measured kernel, % of the datasheet "
        "peaks, % of the model's prediction, the bound, and a plain-language reading.",
    )
    sub = p.add_subparsers(dest="explain_op", metavar="OP", required=True)
    g = sub.add_parser("gemm", help="C = A @ B, A of shape (batch, M, K), B (batch, K, N)",
                       description="Explain a measured GEMM (A is M x K, B is K x N).")
    g.add_argument("m", type=count("M"), metavar="M")
    g.add_argument("k", type=count("K"), metavar="K")
    g.add_argument("n", type=count("N"), metavar="N")
    g.add_argument("--out-dtype", default=None,
                   help="output format; default: bf16 for 8/4-bit inputs, else the input's")
    g.add_argument("--batch", type=int, default=1,
                   help="independent GEMMs in one kernel (bmm, or equal-sized MoE experts)")
    _common(g)
    g.set_defaults(func=_run_gemm)

    a = sub.add_parser(
        "attention", help="one attention call (MHA/GQA/MQA/absorbed MLA, decode or prefill)",
        description="Explain a measured attention kernel. FlashMLA decode on H800, for "
        "example: roofline explain attention 64 128 1 4096 576 --kv-heads 1 --v-head-dim 512 "
        "--shared-kv --measured-us 240 --hardware H800",
    )
    for name, what in (("batch", "sequences"), ("heads", "query heads"),
                       ("q_len", "queries per sequence (1 for decode)"),
                       ("kv_len", "keys per sequence (cached tokens)"),
                       ("head_dim", "query/key head dimension")):
        a.add_argument(name, type=count(name.upper()), metavar=name.upper(), help=what)
    a.add_argument("--kv-heads", type=int, default=None, help="default: HEADS (MHA)")
    a.add_argument("--v-head-dim", type=int, default=None, help="default: HEAD_DIM")
    a.add_argument("--shared-kv", action="store_true",
                   help="V is a slice of K (absorbed MLA: the latent cache is read once)")
    a.add_argument("--causal", action="store_true", help="causal mask (bottom-right aligned)")
    a.add_argument("--materialized", action="store_true",
                   help="scores through DRAM instead of one flash kernel")
    a.add_argument("--backward", action="store_true", help="the backward pass alone")
    _common(a)
    a.set_defaults(func=_run_attention)
    return p


def _run_gemm(args: argparse.Namespace) -> int:
    hw = resolve_hardware(args.hardware, args.table)
    e = gemm(args.m, args.k, args.n, dtype=args.dtype, hardware=hw, batch=args.batch,
             out_dtype=args.out_dtype, efficiency=args.efficiency)
    return _show(args, e, hw)


def _run_attention(args: argparse.Namespace) -> int:
    hw = resolve_hardware(args.hardware, args.table)
    e = attention(args.batch, args.heads, args.q_len, args.kv_len, args.head_dim,
                  kv_heads=args.kv_heads, v_head_dim=args.v_head_dim,
                  shared_kv=args.shared_kv, causal=args.causal, flash=not args.materialized,
                  backward=args.backward, dtype=args.dtype, hardware=hw,
                  efficiency=args.efficiency)
    return _show(args, e, hw)


def _show(args: argparse.Namespace, e: Any, hw: Any) -> int:
    t = args.measured_us
    if not np.isfinite(t) or t <= 0:
        raise CLIError(f"--measured-us must be a positive number of microseconds, got {t!r}")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ImpossibleMeasurementWarning)  # said below, once
        x = explain(e, t * 1e-6, hardware=hw)
    status = _impossible(x, t)
    if args.format in ("json", "csv"):
        doc = meta(args, hw, op=args.explain_op, dtype=args.dtype)
        doc.update({k: (v.item() if hasattr(v, "item") else v) for k, v in x.to_dict().items()})
        doc["hardware"] = hw.name
        if args.format == "csv":
            write_csv([doc], list(doc))
        else:
            print_json(doc)
        return status

    from rich.table import Table

    table = Table(title=f"{x.label} on {x.hardware}: measured against modeled "
                  f"(efficiency: {args.efficiency})", title_style="bold")
    table.add_column("quantity")
    table.add_column("value", justify="right")
    table.add_column("note")
    cls = x.peak_class
    rows = [
        ("FLOPs", si(float(x.flops), "FLOP"), "matrix products, 2 per multiply-add"),
        ("bytes", si(float(x.bytes), "B"), "DRAM reads + writes, each operand once"),
        ("measured", si(float(x.measured_s), "s"), ""),
        ("predicted", si(float(x.predicted_s), "s"),
         f"{pct_text(float(x.pct_of_model))} of it reached"),
        ("roofline", si(float(x.roofline_s), "s"),
         f"datasheet speed of light; {pct_text(float(x.pct_of_roofline))} of it reached"
         + (" (IMPOSSIBLE)" if x.beats_roofline else "")),
        ("achieved FLOP/s", si(float(x.achieved_flops_per_s), "FLOP/s"),
         f"{pct_text(float(x.pct_of_peak_flops))} of the dense {cls} peak "
         f"({si(x.peak_flops_per_s, 'FLOP/s')}); model: {x.model_pct_of_peak_flops:.1f} %"),
        ("achieved bytes/s", si(float(x.achieved_bytes_per_s), "B/s"),
         f"{pct_text(float(x.pct_of_peak_bandwidth))} of {si(x.mem_bytes_per_s, 'B/s')}; "
         f"model: {x.model_pct_of_peak_bandwidth:.1f} %"),
        ("bound", str(x.bound), "under the model"),
    ]
    for name, value, note in rows:
        table.add_row(literal(name), literal(value), literal(note, "dim"))
    console = make_console()
    console.print(table)
    console.print(literal(str(x.reading)))
    return status


def _impossible(x: Any, measured_us: float) -> int:
    """1 (after a ``warning:`` line on stderr) when the measurement beats the roofline."""
    if not x.beats_roofline:
        return 0
    print(f"warning: --measured-us {measured_us:g} is faster than the datasheet roofline "
          f"allows ({si(float(x.roofline_s), 's')} at peak): check the timing and its units "
          "(microseconds); exit status 1", file=sys.stderr)
    return 1
