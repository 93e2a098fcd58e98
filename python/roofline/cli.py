"""The ``roofline`` command line: float8 sweeps, GEMM estimates and the hardware database.

``roofline float8`` prints torchao's float8 roofline table (bf16 against float8 time of a
linear layer, per shape) with a speedup column; ``roofline gemm`` explains one GEMM;
``roofline hardware list|show`` browses the database. Tables use rich (imported only
when a table is printed); ``--format csv|json`` prints machine-readable SI values and
nothing else on stdout. Bad input prints one ``error: ...`` line on stderr and exits 2.
"""

from __future__ import annotations

import argparse
import csv
import dataclasses
import difflib
import json
import os
import re
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import roofline
from roofline._format import MISSING, percent, ratio, scaled, si, si_or_missing
from roofline.efficiency import PRESETS
from roofline.hardware import ENV_VAR, PEAK_CLASSES, TABLES, Hardware

if TYPE_CHECKING:
    from rich.console import Console
    from rich.text import Text

#: Hardware used when none is named, no GPU is detected and no default is set.
FALLBACK_HARDWARE = {"roofline": "H100 SXM", "torchao": "NVIDIA H100"}

#: Exit status for bad input (as argparse uses).
USAGE_ERROR = 2


class CLIError(Exception):
    """Bad command-line input; the message is printed as ``error: <message>``."""


class _Parser(argparse.ArgumentParser):
    """An ArgumentParser that raises :class:`CLIError` instead of printing usage and exiting."""

    def error(self, message: str) -> Any:  # type: ignore[override]
        raise CLIError(f"{message} (see '{self.prog} --help')")


# ------------------------------------------------------------------------- helpers


def _note(message: str) -> None:
    print(f"note: {message}", file=sys.stderr)


def _one_line(message: str) -> str:
    return " ".join(message.split())


def _message(exc: BaseException) -> str:
    """The readable message of an exception (a plain KeyError's str() adds quotes)."""
    if isinstance(exc, KeyError) and exc.args:
        return str(exc.args[0])
    return str(exc)


def _console() -> Console:
    """A rich console on stdout; wide when stdout is not a terminal, so tables never wrap."""
    from rich.console import Console

    wide = "COLUMNS" not in os.environ and not _isatty(sys.stdout)
    return Console(width=240 if wide else None, highlight=False)


def _isatty(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


def _text(value: object, style: str = "") -> Text:
    """A table cell taken literally (no rich markup in database strings)."""
    from rich.text import Text

    return Text(str(value), style=style)


def _print_json(data: Any) -> None:
    json.dump(data, sys.stdout, indent=2, allow_nan=False)
    sys.stdout.write("\n")


def _plain(value: Any) -> Any:
    """A numpy scalar as the Python number ``json`` can write."""
    return value.item() if hasattr(value, "item") else value


def _resolve_hardware(name: str | None, table: str) -> Hardware:
    """``--hardware`` (a name, or a ``.json`` file in ``Hardware.to_dict()`` form), else the
    detected GPU / ``set_default_hardware`` / ``ROOFLINE_HARDWARE``, else the fallback with a
    note on stderr."""
    if name is not None and name.lower().endswith(".json"):
        try:
            return Hardware.from_file(name)
        except OSError as exc:
            raise CLIError(f"--hardware: cannot read {name}: {exc.strerror or exc}") from None
    try:
        return roofline.hardware(name, table=table)
    except KeyError as exc:  # unknown, generic or ambiguous name (also a detected GPU's)
        listing = "roofline hardware list" + (" --table torchao" if table == "torchao" else "")
        raise CLIError(f"{_message(exc)} ('{listing}' shows the names.)") from None
    except RuntimeError:  # HardwareNotSpecifiedError: no GPU, no default, no ROOFLINE_HARDWARE
        if name is not None:
            raise
        fallback = FALLBACK_HARDWARE[table]
        _note(
            f"no GPU detected and no default set; using {fallback} "
            f"(pass --hardware or set {ENV_VAR})"
        )
        return roofline.hardware(fallback, table=table)


def _peak(hw: Hardware, peak_class: str) -> float | None:
    value: float | None = getattr(hw, f"{peak_class}_flops_per_s")
    return value


def _add_hardware_options(p: argparse.ArgumentParser, efficiency: bool = True) -> None:
    p.add_argument(
        "--hardware",
        metavar="NAME",
        help="accelerator name or alias (see 'roofline hardware list'), or a JSON file in "
        "Hardware.to_dict() form; default: the detected GPU, else ROOFLINE_HARDWARE, "
        f"else {FALLBACK_HARDWARE['roofline']}",
    )
    p.add_argument(
        "--table",
        choices=TABLES,
        default="roofline",
        help="hardware table to look NAME up in: this project's database (default) or "
        "torchao's own table (for 1:1 comparisons with torchao)",
    )
    if efficiency:
        p.add_argument(
            "--efficiency",
            choices=PRESETS,
            default="default",
            help="efficiency model: 'default' (shape-aware), 'peak' (datasheet roofline) "
            "or 'torchao' (torchao's constants and byte counts); default: %(default)s",
        )


# ------------------------------------------------------------------------- float8


def _parse_shapes(tokens: Sequence[str]) -> str | list[tuple[int, int, int]]:
    """A shape-set name, or ``M,K,N`` triples separated by spaces or semicolons."""
    sets = list(roofline.float8.SHAPE_SETS)
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


def _cmd_float8(args: argparse.Namespace) -> int:
    shapes = _parse_shapes(args.shapes)
    hw = _resolve_hardware(args.hardware, args.table)
    df = roofline.float8.sweep(
        shapes,
        recipe=args.recipe,
        hardware=hw,
        mode=args.mode,
        fuse_with_prev=args.fuse_with_prev,
        efficiency=args.efficiency,
        columns="torchao",
    )
    if args.format == "csv":
        df.to_csv(sys.stdout, index=False, lineterminator="\n")
        return 0
    if args.format == "json":
        records = df.to_dict(orient="records")
        _print_json([{key: _plain(value) for key, value in row.items()} for row in records])
        return 0

    from rich.table import Table

    recipe = args.recipe.strip().lower()
    lp = _lowp_class(recipe)
    fused = ", fused with previous op" if args.fuse_with_prev else ""
    title = (
        f"float8 {recipe} ({args.mode}{fused}) on {hw.name}: "
        f"bf16 {si_or_missing(_peak(hw, 'bf16'), 'FLOP/s')}, "
        f"{lp} {si_or_missing(_peak(hw, lp), 'FLOP/s')}, "
        f"memory {si(hw.mem_bytes_per_s, 'B/s')}"
    )
    gemms = "3 GEMMs (fwd + bwd)" if args.mode == "training" else "1 GEMM (fwd)"
    caption = (
        f"Time of one linear y = x @ w (x: M x K, w: K x N): {gemms}. "
        f"speedup = bf16 GEMMs / {lp} total. Efficiency model: {args.efficiency}."
    )
    table = Table()
    names = [str(v) for v in df["name"]]
    show_names = names != [str(i) for i in range(len(names))]
    if show_names:
        table.add_column("name")
    for col in ("M", "K", "N", "bf16 GEMMs", f"{lp} GEMMs", f"{lp} overhead", f"{lp} total",
                "speedup"):
        table.add_column(col, justify="right")
    for row in df.itertuples(index=False):
        speedup = float(row.r_fp8_gemm_and_ovhd_spdp)
        style = "green" if speedup > 1.0 else "red" if speedup < 1.0 else ""
        cells = [
            str(row.fwd_M),
            str(row.fwd_K),
            str(row.fwd_N),
            si(float(row.r_bf16_gemm_s), "s"),
            si(float(row.r_fp8_gemm_s), "s"),
            si(float(row.r_fp8_ovhd_s), "s"),
            si(float(row.r_fp8_gemm_and_ovhd_s), "s"),
        ]
        lead = [_text(row.name)] if show_names else []
        table.add_row(*lead, *map(_text, cells), _text(ratio(speedup), style))
    console = _console()
    console.print(_text(title, "bold"))
    console.print(table)
    console.print(_text(caption, "dim"))
    return 0


# ------------------------------------------------------------------------- gemm


def _cmd_gemm(args: argparse.Namespace) -> int:
    from roofline import _core
    from roofline._dtypes import dtype as parse_dtype

    peak_class = str(_core.peak_class(parse_dtype("gemm", args.dtype)).name)
    hw = _resolve_hardware(args.hardware, args.table)
    e = roofline.gemm(
        args.m, args.k, args.n, dtype=args.dtype, hardware=hw, batch=args.batch,
        efficiency=args.efficiency,
    )
    time_s, flops = float(e.time_s), float(e.flops)
    achieved = flops / time_s if time_s > 0 else 0.0
    peak = _peak(hw, peak_class)
    if args.format == "json":
        data: dict[str, Any] = {
            "m": args.m, "k": args.k, "n": args.n, "batch": args.batch,
            "dtype": args.dtype, "efficiency": args.efficiency,
        }
        data.update(e.to_dict())
        data["intensity"] = float(data["intensity"])
        data["achieved_flops_per_s"] = achieved
        data["peak_class"] = peak_class
        data["peak_flops_per_s"] = peak
        _print_json(data)
        return 0

    from rich.table import Table

    shape = f"{args.m}x{args.k}x{args.n}"
    if args.batch != 1:
        shape = f"{args.batch}x{shape}"
    table = Table(
        title=f"gemm {shape} {args.dtype} on {hw.name} (efficiency: {args.efficiency})",
        title_style="bold",
    )
    table.add_column("quantity")
    table.add_column("value", justify="right")
    table.add_column("note")
    ridge = peak / hw.mem_bytes_per_s if peak else None
    bound = str(e.bound)
    bound_style = {"compute": "green", "memory": "yellow", "overhead": "red"}.get(bound, "")
    rows: list[tuple[str, str, str, str]] = [
        ("FLOPs", si(flops, "FLOP"), "2 x batch x M x K x N", ""),
        ("bytes", si(float(e.bytes), "B"), "DRAM reads + writes", ""),
        ("intensity", f"{float(e.intensity):.4g} FLOP/B",
         f"ridge point {ridge:.4g} FLOP/B ({peak_class})" if ridge else "", ""),
        ("compute", si(float(e.compute_s), "s"), f"at the achievable {peak_class} peak", ""),
        ("memory", si(float(e.memory_s), "s"), "at the achievable bandwidth", ""),
        ("overhead", si(float(e.overhead_s), "s"), "launch / latency floor above the max", ""),
        ("predicted time", si(time_s, "s"), "", "bold"),
        ("bound", bound, "", bound_style),
        ("achieved", si(achieved, "FLOP/s"),
         f"{percent(achieved / peak)} of the dense {peak_class} peak "
         f"({si(peak, 'FLOP/s')})" if peak else "", ""),
    ]
    for name, value, note, style in rows:
        table.add_row(_text(name), _text(value, style), _text(note, "dim"))
    console = _console()
    console.print(table)
    console.print(_text("A is M x K, B is K x N; each operand crosses DRAM once. "
                        "time = max(compute, memory, launch floor).", "dim"))
    return 0


# ------------------------------------------------------------------------- hardware


def _entries(table: str) -> list[Hardware]:
    return [roofline.hardware(name, table=table) for name in roofline.list_hardware(table)]


_LIST_FIELDS = ("name", "vendor", "bf16_flops_per_s", "fp8_flops_per_s", "mem_bytes_per_s",
                "mem_capacity_bytes", "sms")


def _cmd_hardware_list(args: argparse.Namespace) -> int:
    entries = _entries(args.table)
    if args.format == "json":
        _print_json([hw.to_dict() for hw in entries])
        return 0
    if args.format == "csv":
        writer = csv.writer(sys.stdout, lineterminator="\n")
        writer.writerow(_LIST_FIELDS)
        for hw in entries:
            values = [getattr(hw, f) for f in _LIST_FIELDS]
            writer.writerow(["" if v is None else v for v in values])
        return 0

    from rich.table import Table

    table = Table(
        title=f"{len(entries)} accelerators ({args.table} table)",
        caption="Dense (not 2:4 sparse) peaks. 'roofline hardware show NAME' gives every "
        "field and its sources.",
        title_style="bold",
    )
    table.add_column("name")
    table.add_column("vendor")
    for col in ("bf16 TFLOP/s", "fp8 TFLOP/s", "HBM TB/s", "memory GB", "SMs"):
        table.add_column(col, justify="right")
    for hw in entries:
        table.add_row(
            *map(_text, (
                hw.name,
                hw.vendor or MISSING,
                scaled(hw.bf16_flops_per_s, 1e12),
                scaled(hw.fp8_flops_per_s, 1e12),
                scaled(hw.mem_bytes_per_s, 1e12),
                scaled(hw.mem_capacity_bytes, 1e9),
                MISSING if hw.sms is None else str(hw.sms),
            ))
        )
    _console().print(table)
    return 0


_UNITS = {
    "mem_bytes_per_s": "B/s",
    "mem_capacity_bytes": "B",
    "l2_bytes": "B",
    "clock_hz": "Hz",
    "tdp_w": "W",
    "interconnect_bytes_per_s": "B/s",
    **{f"{p}_flops_per_s": "OP/s" if p == "int8" else "FLOP/s" for p in PEAK_CLASSES},
}


def _field_value(field: str, value: Any) -> str:
    if value is None or value == "" or value == ():
        return MISSING
    if field in _UNITS:
        return si(float(value), _UNITS[field])
    if field.startswith("achievable_"):
        return percent(float(value))
    if isinstance(value, tuple):
        return ", ".join(value)
    return str(value)


def _cmd_hardware_show(args: argparse.Namespace) -> int:
    name = " ".join(args.name).strip() or None
    hw = _resolve_hardware(name, args.table)
    if args.format == "json":
        _print_json(hw.to_dict())
        return 0

    from rich.table import Table

    table = Table(title=f"{hw.name} ({hw.table} table)", title_style="bold", show_header=True)
    table.add_column("field")
    table.add_column("value", max_width=100, overflow="fold")
    for f in dataclasses.fields(hw):
        table.add_row(_text(f.name), _text(_field_value(f.name, getattr(hw, f.name))))
    for p in ("bf16", "fp8", "fp4"):
        peak = _peak(hw, p)
        if peak:
            table.add_row(
                _text(f"ridge point ({p})", "dim"),
                _text(f"{peak / hw.mem_bytes_per_s:.4g} FLOP/B", "dim"),
            )
    _console().print(table)
    return 0


# ------------------------------------------------------------------------- parser


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``roofline`` command (subcommands set ``func``)."""
    parser = _Parser(
        prog="roofline",
        description="Predict how long ML kernels take on accelerators (roofline model with "
        "a shape-aware efficiency model).",
    )
    parser.add_argument("--version", action="version", version=f"roofline {roofline.__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    recipes = roofline.float8.recipe_names()
    p = sub.add_parser(
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
        help=f"a shape set ({', '.join(roofline.float8.SHAPE_SETS)}; default pow2) or explicit "
        "M,K,N triples separated by spaces or semicolons, e.g. "
        "\"4096,4096,4096;8192,8192,8192\"",
    )
    p.add_argument("--mode", choices=("training", "inference"), default="training",
                   help="training: 3 GEMMs + casts of input, weight, grad_output; inference: "
                   "the forward GEMM + the activation cast; default: %(default)s")
    p.add_argument("--fuse-with-prev", action="store_true",
                   help="the bf16 read of activations / gradients fuses into the previous op")
    _add_hardware_options(p)
    p.add_argument("--format", choices=("table", "csv", "json"), default="table",
                   help="csv/json: torchao's column names, times in seconds; default: table")
    p.set_defaults(func=_cmd_float8)

    p = sub.add_parser(
        "gemm",
        help="predicted time of one GEMM and the roofline terms behind it",
        description="Estimate C = A @ B with A of shape (batch, M, K) and B (batch, K, N).",
    )
    p.add_argument("m", type=int, metavar="M", help="rows of A and C")
    p.add_argument("k", type=int, metavar="K", help="columns of A, rows of B")
    p.add_argument("n", type=int, metavar="N", help="columns of B and C")
    p.add_argument("--dtype", default="bf16",
                   help="input format: bf16, fp16, fp32, tf32, fp8, e5m2, int8, fp4, mxfp8, "
                   "mxfp4, nvfp4, fp8_block_1x128, ...; default: %(default)s")
    p.add_argument("--batch", type=int, default=1, help="GEMMs in one batched kernel (bmm)")
    _add_hardware_options(p)
    p.add_argument("--format", choices=("table", "json"), default="table",
                   help="json: every field in SI units; default: table")
    p.set_defaults(func=_cmd_gemm)

    hw_parser = sub.add_parser("hardware", help="the hardware database",
                               description="Browse the hardware database.")
    hw_sub = hw_parser.add_subparsers(dest="hardware_command", metavar="COMMAND", required=True)
    p = hw_sub.add_parser("list", help="every accelerator with its headline numbers")
    p.add_argument("--table", choices=TABLES, default="roofline",
                   help="this project's database (default) or torchao's table")
    p.add_argument("--format", choices=("table", "csv", "json"), default="table",
                   help="csv: the listed columns in SI units; json: every field; default: table")
    p.set_defaults(func=_cmd_hardware_list)
    p = hw_sub.add_parser("show", help="every field of one accelerator, with sources and notes")
    p.add_argument("name", nargs="*", metavar="NAME",
                   help="name or alias (quotes optional); default: the detected GPU")
    p.add_argument("--table", choices=TABLES, default="roofline",
                   help="this project's database (default) or torchao's table")
    p.add_argument("--format", choices=("table", "json"), default="table",
                   help="json: Hardware.to_dict(); default: table")
    p.set_defaults(func=_cmd_hardware_show)

    from roofline import _cli_model

    _cli_model.add_parser(sub)
    from roofline import _cli_fusion

    _cli_fusion.add_parser(sub)
    from roofline import _cli_explain

    _cli_explain.add_parser(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run the ``roofline`` command with ``argv`` (default ``sys.argv[1:]``); return the exit
    status: 0 on success, 2 on bad input (after one ``error: ...`` line on stderr)."""
    try:
        args = build_parser().parse_args(argv)
        return int(args.func(args))
    except SystemExit as exc:  # --help and --version
        return exc.code if isinstance(exc.code, int) else 0
    except CLIError as exc:
        message = str(exc)
    except (KeyError, ValueError) as exc:  # the library's messages name the bad argument
        message = _message(exc)
    except BrokenPipeError:  # e.g. `roofline float8 --shapes sweep | head`
        try:
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        except (OSError, ValueError, AttributeError):
            pass
        return 1
    except KeyboardInterrupt:
        return 130
    print(f"error: {_one_line(message)}", file=sys.stderr)
    return USAGE_ERROR


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
