"""``roofline gemm``: the predicted time of one GEMM and the roofline terms behind it."""

from __future__ import annotations

import argparse
from typing import Any

from .. import _core
from .._dtypes import dtype as parse_dtype
from .._errors import ArgumentValueError
from .._format import percent, si
from ..ops.gemm import gemm
from ..ops.weight_only_gemm import weight_only_gemm
from ._common import (
    add_hardware_options,
    count,
    literal,
    make_console,
    meta,
    peak,
    print_json,
    resolve_hardware,
    write_csv,
)

__all__ = ["add_parser", "run"]


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add the ``gemm`` subcommand to an ``argparse`` subparsers object; returns its parser."""
    p: argparse.ArgumentParser = subparsers.add_parser(
        "gemm",
        help="predicted time of one GEMM and the roofline terms behind it",
        description="Estimate C = A @ B with A of shape (batch, M, K) and B (batch, K, N).",
    )
    p.add_argument("m", type=count("M"), metavar="M", help="rows of A and C")
    p.add_argument("k", type=count("K"), metavar="K", help="columns of A, rows of B")
    p.add_argument("n", type=count("N"), metavar="N", help="columns of B and C")
    p.add_argument("--dtype", default="bf16",
                   help="input format: bf16, fp16, fp32, tf32, fp8, e5m2, int8, fp4, mxfp8, "
                   "mxfp4, nvfp4, fp8_block_1x128, ...; default: %(default)s")
    p.add_argument("--batch", type=count("--batch"), default=1,
                   help="GEMMs in one batched kernel (bmm)")
    p.add_argument("--weight-dtype", default=None,
                   help="weight-only quantized B (int4, int8): a Marlin GEMM of --dtype (bf16 "
                   "/ fp16) activations, rl.weight_only_gemm")
    p.add_argument("--group-size", type=int, default=128,
                   help="with --weight-dtype: rows of B sharing one scale (0: per column); "
                   "default: %(default)s")
    add_hardware_options(p)
    p.add_argument("--format", choices=("table", "csv", "json"), default="table",
                   help="csv / json: every field in SI units (one csv row); default: table")
    p.set_defaults(func=run)
    return p


def run(args: argparse.Namespace) -> int:
    """Run ``roofline gemm``; returns the exit status."""
    peak_class = str(_core.peak_class(parse_dtype("gemm", args.dtype)).name)
    hw = resolve_hardware(args.hardware, args.table)
    if args.weight_dtype is not None:
        if args.batch != 1:
            raise ArgumentValueError("gemm", "--batch", f"must be 1 with --weight-dtype (one "
                                     f"weight-only GEMM), got {args.batch}")
        e = weight_only_gemm(args.m, args.k, args.n, args.weight_dtype, args.dtype, hw,
                             group_size=args.group_size, efficiency=args.efficiency)
    else:
        e = gemm(
            args.m, args.k, args.n, dtype=args.dtype, hardware=hw, batch=args.batch,
            efficiency=args.efficiency,
        )
    time_s, flops = float(e.time_s), float(e.flops)
    achieved = flops / time_s if time_s > 0 else 0.0
    top = peak(hw, peak_class)
    if args.format in ("json", "csv"):
        data: dict[str, Any] = meta(args, hw, m=args.m, k=args.k, n=args.n, batch=args.batch,
                                    dtype=args.dtype)
        if args.weight_dtype is not None:
            data.update(weight_dtype=args.weight_dtype, group_size=args.group_size)
        data.update(e.to_dict())
        data["hardware"] = hw.name
        data["intensity"] = float(data["intensity"])
        data["achieved_flops_per_s"] = achieved
        data["peak_class"] = peak_class
        data["peak_flops_per_s"] = top
        if args.format == "csv":
            write_csv([data], list(data))
        else:
            print_json(data)
        return 0

    from rich.table import Table

    shape = f"{args.m}x{args.k}x{args.n}"
    if args.batch != 1:
        shape = f"{args.batch}x{shape}"
    if args.weight_dtype is not None:
        shape += f" x {args.weight_dtype} weights (group {args.group_size})"
    table = Table(
        title=f"gemm {shape} {args.dtype} on {hw.name} (efficiency: {args.efficiency})",
        title_style="bold",
    )
    table.add_column("quantity")
    table.add_column("value", justify="right")
    table.add_column("note")
    ridge = top / hw.mem_bytes_per_s if top else None
    bound = str(e.bound)
    bound_style = {"compute": "green", "memory": "yellow", "overhead": "red"}.get(bound, "")
    rows: list[tuple[str, str, str, str]] = [
        ("FLOPs", si(flops, "FLOP"), "2 x batch x M x K x N", ""),
        ("bytes", si(float(e.bytes), "B"), "DRAM reads + writes", ""),
        ("intensity", f"{float(e.intensity):.4g} FLOP/B",
         f"ridge point {ridge:.4g} FLOP/B ({peak_class})" if ridge else "", ""),
        ("compute", si(float(e.compute_s), "s"), f"at the achievable {peak_class} peak", ""),
        ("memory", si(float(e.memory_s), "s"), "at the achievable bandwidth", ""),
        ("overhead", si(float(e.overhead_s), "s"), "time above max(compute, memory)", ""),
        ("predicted time", si(time_s, "s"), "", "bold"),
        ("bound", bound, "", bound_style),
        ("achieved", si(achieved, "FLOP/s"),
         f"{percent(achieved / top)} of the dense {peak_class} peak "
         f"({si(top, 'FLOP/s')})" if top else "", ""),
    ]
    for name, value, note, style in rows:
        table.add_row(literal(name), literal(value, style), literal(note, "dim"))
    console = make_console()
    console.print(table)
    console.print(literal(f"A is M x K, B is K x N; each operand crosses DRAM once. "
                          f"{_model_note(args.efficiency)}", "dim"))
    return 0


def _model_note(efficiency: str) -> str:
    """The formula behind a GEMM's time under ``efficiency`` (docs/model.md), in one line."""
    from ..efficiency import is_shape_aware

    if not is_shape_aware(efficiency):
        return ("time = max(compute, memory, launch floor), compute and memory at constant "
                "fractions of the peaks.")
    from .._params.packaged import calibration as data

    p = float(data()["params"]["overlap_p"])
    return (f"time = (compute^{p:g} + memory^{p:g})^(1/{p:g}) + the library's fixed time per "
            "call, for the best of 12 CTA tiles x split-K factors (tile and wave "
            "quantization on the SMs); see docs/model.md.")
