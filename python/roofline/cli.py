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
import importlib
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


#: Largest integer a CLI count accepts (beyond it a float64 no longer holds every integer).
MAX_COUNT = 2**53


def count(flag: str, limit: int = MAX_COUNT, minimum: int = 1) -> Any:
    """An argparse ``type`` for an integer in [minimum, limit]; errors name ``flag``."""

    def parse(text: str) -> int:
        try:
            value = int(text.replace("_", ""))
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
        if value < minimum or value > limit:
            what = "a positive integer" if minimum == 1 else f"an integer >= {minimum}"
            bound = f" no larger than {limit:,}" if value > limit else ""
            raise argparse.ArgumentTypeError(f"must be {what}{bound}, got {text}")
        return value

    parse.__name__ = flag  # argparse names the type in some messages
    return parse


#: Spellings of training / inference the CLI accepts wherever it asks for a mode or phase.
MODE_ALIASES = {"train": "training", "training": "training", "inference": "inference",
                "infer": "inference", "eval": "inference"}


def mode(text: str) -> str:
    """``--mode`` values: train / training -> training; inference (eval) -> inference."""
    return MODE_ALIASES.get(text.strip().lower(), text)


_PYTHON_CALLS = [
    (re.compile(r"\s*See list_hardware\([^)]*\) for the names, or describe your device "
                r"with Hardware\(\.\.\.\) / Hardware\.from_dict\(\{\.\.\.\}\)\."), ""),
    (re.compile(r"\s*\(or call set_default_hardware\('[^']*'\)\)"), ""),
    (re.compile(r",? call set_default_hardware\('[^']*'\),?"), ""),
    (re.compile(r"\bhardware=hw\.replace\((\w+)=\.\.\.\)"),
     r"--hardware FILE.json (as 'roofline hardware show NAME --format json' prints it) "
     r"with \1 set"),
    (re.compile(r"\bhardware\('([^']*)', table='(\w+)'\)"), r"--hardware '\1' --table \2"),
    (re.compile(r"\bhardware\('([^']*)'\)"), r"--hardware '\1'"),
    (re.compile(r"(?<=: )[a-z_][\w.]*: (?=\S)"), ""),  # a function name after a prefix
    (re.compile(r"\s*list_hardware\(\) shows the names\."), ""),
    (re.compile(r" \(at [\w.]+\[[\d, ]+\]\)"), ""),
]


def _cli_terms(message: str, flags: dict[str, str]) -> str:
    """A library message in CLI terms: flags instead of argument names, no Python calls.

    ``flags`` maps argparse ``dest`` names to what the user typed them as (``--seq-len``,
    or the metavar ``M`` of a positional).
    """
    message = re.sub(r"^[a-z_][\w.]*: (?=\S)", "", message)  # the library function's name
    for pattern, repl in _PYTHON_CALLS:
        message = pattern.sub(repl, message)
    unknown = re.match(r"unknown (\w+) (?=')", message)
    if unknown and unknown.group(1) in flags:  # "unknown dtype 'fp7'" -> "--dtype: unknown..."
        message = f"{flags[unknown.group(1)]}: {message}"
        flags = {k: v for k, v in flags.items() if k != unknown.group(1)}
    for dest, flag in sorted(flags.items(), key=lambda kv: -len(kv[0])):
        if len(dest) == 1:  # m, k, n: only as the subject of the message
            message = re.sub(rf"^{dest}\b(?= must)", flag, message)
        else:
            message = re.sub(rf"(?<![\w'-]){re.escape(dest)}(?![\w'(=])", flag, message)
    return message


def _flags(parser: argparse.ArgumentParser) -> dict[str, str]:
    """dest -> ``--option`` (or a positional's metavar) for one (sub)parser."""
    out: dict[str, str] = {}
    for action in parser._actions:
        if action.dest in ("help", "version", "func") or action.dest.startswith("_"):
            continue
        if action.option_strings:
            out[action.dest] = max(action.option_strings, key=len)
        elif isinstance(action.metavar, str):
            out[action.dest] = action.metavar
    return out


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
        where = "--hardware: " if name is not None else ""
        raise CLIError(f"{where}{_cli_terms(_message(exc), {})} ('{listing}' shows the "
                       "names; --hardware FILE.json, in the form of 'roofline hardware show "
                       "NAME --format json', describes your own device.)") from None
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
        "Hardware.to_dict() form; default: ROOFLINE_HARDWARE, else the detected GPU, "
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


#: Columns of ``roofline float8 --format csv|json`` (torchao's names, as rl.float8.sweep).
FLOAT8_COLUMNS = ("name", "fwd_M", "fwd_K", "fwd_N", "r_bf16_gemm_s", "r_fp8_gemm_s",
                  "r_fp8_ovhd_s", "r_fp8_gemm_and_ovhd_s", "r_fp8_gemm_and_ovhd_spdp")


def _float8_rows(args: argparse.Namespace, hw: Hardware) -> list[dict[str, Any]]:
    """The rows of ``rl.float8.sweep`` (same columns and values), without pandas."""
    from roofline.float8.sweep import shape_table as _shape_table

    names, table = _shape_table(_parse_shapes(args.shapes))
    r = roofline.float8.linear(table[:, 0], table[:, 1], table[:, 2], args.recipe, hw,
                               args.mode, args.fuse_with_prev, efficiency=args.efficiency)
    cols = (r.bf16_s, r.fp8_gemm_s, r.fp8_overhead_s, r.fp8_s, r.speedup)
    return [
        dict(zip(FLOAT8_COLUMNS, (name, int(row[0]), int(row[1]), int(row[2]),
                                  *(float(c[i]) for c in cols)), strict=True))
        for i, (name, row) in enumerate(zip(names, table, strict=True))
    ]


def _meta(args: argparse.Namespace, hw: Hardware, **extra: Any) -> dict[str, Any]:
    """What every JSON document records: version, command, hardware, efficiency, options."""
    out: dict[str, Any] = {"roofline_version": roofline.__version__, "command": args.command,
                           "hardware": hw.name, "hardware_table": hw.table}
    if hasattr(args, "efficiency"):
        out["efficiency"] = args.efficiency
    out.update(extra)
    return out


def _write_csv(rows: Sequence[dict[str, Any]], columns: Sequence[str]) -> None:
    writer = csv.writer(sys.stdout, lineterminator="\n")
    writer.writerow(columns)
    for row in rows:
        writer.writerow(["" if row.get(c) is None else _plain(row.get(c)) for c in columns])


def _cmd_float8(args: argparse.Namespace) -> int:
    _parse_shapes(args.shapes)  # a bad --shapes fails before hardware detection
    hw = _resolve_hardware(args.hardware, args.table)
    rows = _float8_rows(args, hw)
    if args.format == "csv":
        _write_csv(rows, FLOAT8_COLUMNS)
        return 0
    if args.format == "json":
        _print_json({**_meta(args, hw, recipe=args.recipe.strip().lower(), mode=args.mode,
                                fuse_with_prev=args.fuse_with_prev), "rows": rows})
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
        lead = [_text(row["name"])] if show_names else []
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
    if args.format in ("json", "csv"):
        data: dict[str, Any] = _meta(args, hw, m=args.m, k=args.k, n=args.n, batch=args.batch,
                                     dtype=args.dtype)
        data.update(e.to_dict())
        data["hardware"] = hw.name
        data["intensity"] = float(data["intensity"])
        data["achieved_flops_per_s"] = achieved
        data["peak_class"] = peak_class
        data["peak_flops_per_s"] = peak
        if args.format == "csv":
            _write_csv([data], list(data))
        else:
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
        ("overhead", si(float(e.overhead_s), "s"), "time above max(compute, memory)", ""),
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
    console.print(_text(f"A is M x K, B is K x N; each operand crosses DRAM once. "
                        f"{_gemm_model_note(args.efficiency)}", "dim"))
    return 0


def _gemm_model_note(efficiency: str) -> str:
    """The formula behind a GEMM's time under ``efficiency`` (docs/model.md), in one line."""
    from roofline.efficiency import is_shape_aware

    if not is_shape_aware(efficiency):
        return ("time = max(compute, memory, launch floor), compute and memory at constant "
                "fractions of the peaks.")
    from roofline._params.packaged import calibration as data

    p = float(data()["params"]["overlap_p"])
    return (f"time = (compute^{p:g} + memory^{p:g})^(1/{p:g}) + the library's fixed time per "
            "call, for the best of 12 CTA tiles x split-K factors (tile and wave "
            "quantization on the SMs); see docs/model.md.")


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
    if args.format == "csv":
        _write_csv([{"field": k, "value": "; ".join(v) if isinstance(v, list) else v}
                    for k, v in hw.to_dict().items()], ("field", "value"))
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


#: Subcommands defined in their own modules: (name, module with add_parser, --help line).
#: build_parser imports only the module of the command being run.
_LAZY_COMMANDS = (
    ("model", "roofline._cli_model",
     "one decode / prefill / training step of a transformer, per op, with memory"),
    ("fusion", "roofline._cli_fusion",
     "what fusing, batching or re-associating ops saves (two plans side by side)"),
    ("explain", "roofline._cli_explain",
     "a measured kernel time against its roofline and the model's prediction"),
    ("calibrate", "roofline.calibration.cli",
     "fit the model to measurements (a profile), or measure this machine"),
    ("plan", "roofline._cli_plan",
     "search tp/pp/dp/ep/cp/ZeRO/recompute layouts of a training or serving job"),
    ("explain-trace", "roofline._cli_trace",
     "explain a PyTorch profiler trace kernel by kernel against the roofline"),
    ("bench", "roofline.bench._cli",
     "measure real kernels with torch on this machine (JSON lines, shared schema)"),
    ("validate", "roofline.validation._cli",
     "the model's error against measurement files (JSON lines), per family"),
)


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The argument parser of the ``roofline`` command (subcommands set ``func``).

    ``command``: the subcommand about to run; the others defined in their own modules get a
    placeholder (name and help line) instead of their full parser. Default: every parser.
    """
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
    p.add_argument("--mode", type=mode, choices=("training", "inference"), default="training",
                   help="training (or train): 3 GEMMs + casts of input, weight, grad_output; "
                   "inference: the forward GEMM + the activation cast; default: %(default)s")
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
    p.add_argument("m", type=count("M"), metavar="M", help="rows of A and C")
    p.add_argument("k", type=count("K"), metavar="K", help="columns of A, rows of B")
    p.add_argument("n", type=count("N"), metavar="N", help="columns of B and C")
    p.add_argument("--dtype", default="bf16",
                   help="input format: bf16, fp16, fp32, tf32, fp8, e5m2, int8, fp4, mxfp8, "
                   "mxfp4, nvfp4, fp8_block_1x128, ...; default: %(default)s")
    p.add_argument("--batch", type=count("--batch"), default=1,
                   help="GEMMs in one batched kernel (bmm)")
    _add_hardware_options(p)
    p.add_argument("--format", choices=("table", "csv", "json"), default="table",
                   help="csv / json: every field in SI units (one csv row); default: table")
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
    p.add_argument("--format", choices=("table", "csv", "json"), default="table",
                   help="json: Hardware.to_dict(); csv: field,value rows; default: table")
    p.set_defaults(func=_cmd_hardware_show)

    for name, module, summary in _LAZY_COMMANDS:
        if command is None or command == name:
            importlib.import_module(module).add_parser(sub)
        else:  # listed in --help; its module (and its options) load only when it runs
            sub.add_parser(name, help=summary, add_help=False)

    _attach_flags(parser)
    return parser


def _attach_flags(parser: argparse.ArgumentParser) -> None:
    """Give every leaf subcommand ``_flags`` (its dest -> flag map) for error messages."""
    subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if not subs:
        parser.set_defaults(_flags=_flags(parser))
        return
    for action in subs:
        for child in set(action.choices.values()):
            _attach_flags(child)


def main(argv: list[str] | None = None) -> int:
    """Run the ``roofline`` command with ``argv`` (default ``sys.argv[1:]``); return the exit
    status: 0 on success, 2 on bad input (after one ``error: ...`` line on stderr)."""
    args: argparse.Namespace | None = None
    try:
        argv = sys.argv[1:] if argv is None else argv
        command = next((a for a in argv if not a.startswith("-")), None)
        args = build_parser(command).parse_args(argv)
        status = int(args.func(args))
        sys.stdout.flush()  # a closed pipe shows here, not at interpreter exit
        return status
    except SystemExit as exc:  # --help and --version
        return exc.code if isinstance(exc.code, int) else 0
    except CLIError as exc:
        message = str(exc)
    except (KeyError, ValueError) as exc:  # the library's messages name the bad argument
        message = _cli_terms(_message(exc), getattr(args, "_flags", {}))
    except BrokenPipeError:  # e.g. `roofline float8 --shapes sweep | head` (status 1, as
        _silence_stdout()     # rich's console exits when it meets the closed pipe itself)
        return 1
    except KeyboardInterrupt:
        return 130
    print(f"error: {_one_line(message)}", file=sys.stderr)
    return USAGE_ERROR


def _silence_stdout() -> None:
    """After a reader closed the pipe: send what is left to /dev/null, so the interpreter's
    final flush does not print a BrokenPipeError traceback."""
    try:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):
        pass


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
