"""``roofline float8``: torchao's float8 roofline table (bf16 against float8 time of a linear
layer, per shape) with a speedup column."""

from __future__ import annotations

import argparse
import difflib
import re
from collections.abc import Sequence
from typing import Any

from .. import float8
from .._format import ratio, si, si_or_missing
from ..hardware import Hardware
from ._common import (
    CLIError,
    add_hardware_options,
    literal,
    make_console,
    meta,
    mode,
    peak,
    print_json,
    resolve_hardware,
    write_csv,
)

__all__ = ["FLOAT8_COLUMNS", "add_parser", "run"]

#: Columns of ``roofline float8 --format csv|json`` (torchao's names, as rl.float8.sweep).
FLOAT8_COLUMNS = ("name", "fwd_M", "fwd_K", "fwd_N", "r_bf16_gemm_s", "r_fp8_gemm_s",
                  "r_fp8_ovhd_s", "r_fp8_gemm_and_ovhd_s", "r_fp8_gemm_and_ovhd_spdp")


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add the ``float8`` subcommand to an ``argparse`` subparsers object; returns its parser."""
    recipes = float8.recipe_names()
    p: argparse.ArgumentParser = subparsers.add_parser(
        "float8",
        help="float8 speedup of linear layers over a set of shapes (torchao's roofline table)",
        description="bf16 against float8 (or MX / NVFP4 / blockwise) time of a linear layer "
        "y = x @ w (x: M x K, w: K x N) for each shape, with the speedup.",
    )
    p.add_argument(
        "--recipe",
        default="tensorwise",
        metavar="RECIPE",
        help=f"float8 recipe: {', '.join(recipes)}; default: %(default)s",
    )
    p.add_argument(
        "--shapes",
        nargs="+",
        default=["pow2"],
        metavar="SHAPES",
        help=f"a shape set ({', '.join(float8.SHAPE_SETS)}; default pow2) or explicit "
        "M,K,N triples separated by spaces or semicolons, e.g. "
        "\"4096,4096,4096;8192,8192,8192\"",
    )
    p.add_argument("--mode", type=mode, choices=("training", "inference"), default="training",
                   help="training (or train): 3 GEMMs + casts of input, weight, grad_output; "
                   "inference: the forward GEMM + the activation cast; default: %(default)s")
    p.add_argument("--fuse-with-prev", action="store_true",
                   help="the bf16 read of activations / gradients fuses into the previous op")
    add_hardware_options(p)
    p.add_argument("--format", choices=("table", "csv", "json"), default="table",
                   help="csv/json: torchao's column names, times in seconds; default: table")
    p.set_defaults(func=run)
    return p


def _parse_shapes(tokens: Sequence[str]) -> str | list[tuple[int, int, int]]:
    """A shape-set name, or ``M,K,N`` triples separated by spaces or semicolons."""
    sets = list(float8.SHAPE_SETS)
    text = " ".join(tokens).strip()
    if text.lower() in sets:
        return text.lower()
    # "4096, 4096, 4096" and "4096x4096x4096" are one triple each.
    joined = re.sub(r"\s*([,xX])\s*", r"\1", text)
    parts = [p for p in re.split(r"[;\s]+", joined) if p]
    shapes: list[tuple[int, int, int]] = []
    for part in parts:
        dims = re.split(r"[,xX]", part)
        if len(dims) != 3 or not all(d.isdigit() for d in dims):
            hint = ""
            if len(parts) == 1 and "," not in part:
                close = difflib.get_close_matches(part.lower(), sets, n=1, cutoff=0.6)
                hint = f"; did you mean {close[0]!r}?" if close else ""
            raise CLIError(
                f"--shapes: expected a shape set ({', '.join(sets)}) or M,K,N triples of "
                f"positive integers separated by spaces or semicolons, got {part!r}{hint}"
            )
        shapes.append((int(dims[0]), int(dims[1]), int(dims[2])))
    if not shapes:
        raise CLIError(f"--shapes: no shapes given (a shape set: {', '.join(sets)}; or M,K,N)")
    return shapes


def _lowp_class(recipe: str) -> str:
    """Peak class the recipe's low-precision GEMMs run at."""
    return "fp4" if "fp4" in recipe.lower() else "fp8"


def _rows(args: argparse.Namespace, hw: Hardware) -> list[dict[str, Any]]:
    """The rows of ``rl.float8.sweep`` (same columns and values), without pandas."""
    from ..float8.sweep import shape_table as _shape_table

    names, table = _shape_table(_parse_shapes(args.shapes))
    r = float8.linear(table[:, 0], table[:, 1], table[:, 2], args.recipe, hw,
                      args.mode, args.fuse_with_prev, efficiency=args.efficiency)
    cols = (r.bf16_s, r.fp8_gemm_s, r.fp8_overhead_s, r.fp8_s, r.gpu_speedup)  # torchao's
    return [
        dict(zip(FLOAT8_COLUMNS, (name, int(row[0]), int(row[1]), int(row[2]),
                                  *(float(c[i]) for c in cols)), strict=True))
        for i, (name, row) in enumerate(zip(names, table, strict=True))
    ]


def run(args: argparse.Namespace) -> int:
    """Run ``roofline float8``; returns the exit status."""
    _parse_shapes(args.shapes)  # a bad --shapes fails before hardware detection
    hw = resolve_hardware(args.hardware, args.table)
    rows = _rows(args, hw)
    if args.format == "csv":
        write_csv(rows, FLOAT8_COLUMNS)
        return 0
    if args.format == "json":
        print_json({**meta(args, hw, recipe=args.recipe.strip().lower(), mode=args.mode,
                              fuse_with_prev=args.fuse_with_prev), "rows": rows})
        return 0

    from rich.table import Table

    recipe = args.recipe.strip().lower()
    lp = _lowp_class(recipe)
    fused = ", fused with previous op" if args.fuse_with_prev else ""
    title = (
        f"float8 {recipe} ({args.mode}{fused}) on {hw.name}: "
        f"bf16 {si_or_missing(peak(hw, 'bf16'), 'FLOP/s')}, "
        f"{lp} {si_or_missing(peak(hw, lp), 'FLOP/s')}, "
        f"memory {si(hw.mem_bytes_per_s, 'B/s')}"
    )
    gemms = "3 GEMMs (fwd + bwd)" if args.mode == "training" else "1 GEMM (fwd)"
    caption = (
        f"Time of one linear y = x @ w (x: M x K, w: K x N): {gemms}. "
        f"speedup = bf16 GEMMs / {lp} total. Efficiency model: {args.efficiency}."
    )
    table = Table()
    names = [str(row["name"]) for row in rows]
    show_names = names != [str(i) for i in range(len(names))]
    if show_names:
        table.add_column("name")
    for col in ("M", "K", "N", "bf16 GEMMs", f"{lp} GEMMs", f"{lp} overhead", f"{lp} total",
                "speedup"):
        table.add_column(col, justify="right")
    for row in rows:
        speedup = float(row["r_fp8_gemm_and_ovhd_spdp"])
        style = "green" if speedup > 1.0 else "red" if speedup < 1.0 else ""
        cells = [
            str(row["fwd_M"]),
            str(row["fwd_K"]),
            str(row["fwd_N"]),
            si(row["r_bf16_gemm_s"], "s"),
            si(row["r_fp8_gemm_s"], "s"),
            si(row["r_fp8_ovhd_s"], "s"),
            si(row["r_fp8_gemm_and_ovhd_s"], "s"),
        ]
        lead = [literal(row["name"])] if show_names else []
        table.add_row(*lead, *map(literal, cells), literal(ratio(speedup), style))
    console = make_console()
    console.print(literal(title, "bold"))
    console.print(table)
    console.print(literal(caption, "dim"))
    return 0
