"""``roofline fusion``: what epilogue / horizontal fusion, batching, flash attention or a
matmul chain order saves, as two plans side by side.

``add_parser(sub)`` adds it to the ``roofline`` parser (it sets ``func=run``).
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from ._common import FALLBACK_HARDWARE, resolve_hardware

__all__ = ["add_parser", "run"]


def _ints(text: str) -> list[int]:
    try:
        values = [int(v) for v in text.replace("x", ",").split(",") if v.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected comma-separated integers, got {text!r}") from None
    if not values:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers, got {text!r}")
    return values


def _follow_up(text: str) -> tuple[int, int]:
    parts = text.split(":")
    if len(parts) != 2 or not all(p.strip().isdigit() for p in parts):
        raise argparse.ArgumentTypeError(f"expected INDEX:N2 (e.g. 4:1024), got {text!r}")
    return int(parts[0]), int(parts[1])


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add the ``fusion`` subcommand to an ``argparse`` subparsers object; returns its parser."""
    p: argparse.ArgumentParser = subparsers.add_parser(
        "fusion",
        help="what fusing, batching or re-associating ops saves (two plans side by side)",
        description="Compare an unfused plan with a fused one: time, DRAM bytes, FLOPs and "
        "kernel launches, both under the same hardware and efficiency model.",
    )
    sub = p.add_subparsers(dest="transform", metavar="TRANSFORM", required=True)

    def common(q: argparse.ArgumentParser) -> None:
        q.add_argument("--dtype", default="bf16", help="element format; default: %(default)s")
        q.add_argument("--hardware", default=None,
                       help="accelerator; default: the detected GPU, else "
                   f"{FALLBACK_HARDWARE['roofline']}")
        q.add_argument("--efficiency", default="default",
                       help="default, constant, peak or torchao; default: %(default)s")
        q.add_argument("--format", choices=("table", "json"), default="table",
                       help="json: both plans with their kernels, SI units; default: table")
        q.set_defaults(func=run)

    q = sub.add_parser("epilogue", help="GEMM then an elementwise op vs the op in the epilogue")
    for name in ("m", "k", "n"):
        q.add_argument(name, type=int, metavar=name.upper())
    q.add_argument("--op", default="relu", help="name of the op; default: %(default)s")
    q.add_argument("--flops-per-element", type=float, default=1.0)
    q.add_argument("--extra-inputs", type=int, default=0,
                   help="other M x N tensors the op reads (1 for a residual add)")
    common(q)
    q = sub.add_parser("horizontal", help="GEMMs sharing an input vs one GEMM, N concatenated")
    q.add_argument("m", type=int, metavar="M")
    q.add_argument("k", type=int, metavar="K")
    q.add_argument("ns", type=_ints, metavar="N1,N2,...")
    q.add_argument("--follow-up", type=_follow_up, action="append", default=[],
                   metavar="INDEX:N2",
                   help="a second GEMM on output INDEX (to width N2); equal ones are batched")
    common(q)
    q = sub.add_parser("batch", help="COUNT same-shape GEMMs vs one batched GEMM")
    for name in ("m", "k", "n"):
        q.add_argument(name, type=int, metavar=name.upper())
    q.add_argument("--count", type=int, required=True)
    common(q)
    q = sub.add_parser("attention", help="materialized vs flash attention")
    for name in ("batch", "heads", "q_len", "kv_len", "head_dim"):
        q.add_argument(name, type=int, metavar=name.upper())
    q.add_argument("--kv-heads", type=int, default=None)
    q.add_argument("--causal", action="store_true")
    common(q)
    q = sub.add_parser("chain", help="every association of a matrix chain, best vs worst")
    q.add_argument("dims", type=_ints, metavar="D0,D1,...",
                   help="matrix i is D_i x D_(i+1)")
    q.add_argument("--names", default=None, help="comma-separated matrix names")
    common(q)
    return p


def run(args: argparse.Namespace) -> int:
    """Run ``roofline fusion TRANSFORM``; returns the exit status (library errors propagate)."""
    from .. import fusion

    hw = resolve_hardware(args.hardware, "roofline")
    kw: dict[str, Any] = {"dtype": args.dtype, "hardware": hw, "efficiency": args.efficiency}
    chain = None
    t = args.transform
    if t == "epilogue":
        c = fusion.epilogue_fusion(args.m, args.k, args.n, op=args.op,
                                   flops_per_element=args.flops_per_element,
                                   extra_inputs=args.extra_inputs, **kw)
    elif t == "horizontal":
        if args.follow_up:
            c = fusion.fuse_projections(args.m, args.k, args.ns, args.follow_up, **kw)
        else:
            c = fusion.horizontal_fusion(args.m, args.k, args.ns, **kw)
    elif t == "batch":
        c = fusion.batch_gemms(args.m, args.k, args.n, args.count, **kw)
    elif t == "attention":
        c = fusion.flash_attention(args.batch, args.heads, args.q_len, args.kv_len,
                                   args.head_dim, kv_heads=args.kv_heads, causal=args.causal,
                                   **kw)
    else:
        names = args.names.split(",") if args.names else None
        chain = fusion.matmul_chain(args.dims, names=names, **kw)
        c = chain.compare()
    if args.format == "json":
        data = c.to_dict()
        if chain is not None:
            data["orders"] = chain.rows()
        json.dump(data, sys.stdout, indent=2, allow_nan=False, default=float)
        sys.stdout.write("\n")
        return 0
    _print_table(c, chain)
    return 0


def _print_table(c: Any, chain: Any) -> None:
    from rich.table import Table
    from rich.text import Text

    from .._format import si
    from ._common import make_console

    console = make_console()
    table = Table(title=f"{c.title} on {c.baseline.hardware} "
                  f"(efficiency: {c.baseline.efficiency})", title_style="bold")
    table.add_column("plan")
    for col in ("time", "DRAM bytes", "FLOPs", "launches", "FLOP/B", "speedup"):
        table.add_column(col, justify="right")
    rows = [c.baseline, c.candidate]
    if chain is not None:
        rows = [p for _, p in reversed(chain.orders)]
    for p in rows:
        table.add_row(Text(p.name), si(p.time_s, "s"), si(p.bytes, "B"), si(p.flops, "FLOP"),
                      str(p.launches), f"{p.intensity:.4g}",
                      f"{c.baseline.time_s / p.time_s:.2f}x")
    style = "green" if c.saving_s > 0 else "red"
    table.add_row(Text("saving", style), Text(si(c.saving_s, "s"), style),
                  si(c.bytes_saved, "B"), "", str(c.baseline.launches - c.candidate.launches),
                  "", Text(f"{100 * c.saving:.1f} %", style))
    console.print(table)
    console.print(Text("Both plans: the package's op functions under one hardware and "
                       "efficiency model; kernels run back to back.", "dim"))
