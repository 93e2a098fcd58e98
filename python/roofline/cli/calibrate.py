"""``roofline calibrate``: fit a profile to a measurement file, or measure this machine.

``add_parser(sub)`` adds it to the ``roofline`` parser (it sets ``func=run``).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from ._common import CLIError, make_console

__all__ = ["add_parser", "run"]


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add the ``calibrate`` subcommand to an ``argparse`` subparsers object; return it."""
    p: argparse.ArgumentParser = subparsers.add_parser(
        "calibrate",
        help="fit the model to measurements (a profile), or measure this machine",
        description="Fit the default model's terms (achievable fractions, GEMM / streaming / "
        "attention / cast / launch terms) to a measurement file in the shared JSONL schema and "
        "write the profile. Without -i, measure this machine with torch first (and save the "
        "profile in the user cache, where rl.hardware() finds it, unless -o is given).",
    )
    p.add_argument("-i", "--input", metavar="FILE.jsonl", default=None,
                   help="measurements (roofline bench output or the shared files)")
    p.add_argument("-o", "--output", metavar="PROFILE.json", default=None,
                   help="write the profile here (rl.hardware(profile=...) loads it)")
    p.add_argument("--hardware", metavar="BASE", default=None,
                   help="base accelerator (default: the rows' hardware, else detected)")
    p.add_argument("--terms", nargs="+", metavar="AREA", default=None,
                   help="fit only these areas: streaming compute gemm row_ops attention cast "
                   "host")
    p.add_argument("--save", action="store_true",
                   help="also save the profile in the user cache for the rows' device")
    p.add_argument("--device", choices=("cuda", "cpu"), default="cuda",
                   help="without -i: where to measure; default: %(default)s")
    p.add_argument("--format", choices=("table", "json"), default="table",
                   help="json: the profile (Hardware fields, fitted, fit); default: table")
    p.set_defaults(func=run)
    return p


def run(args: argparse.Namespace) -> int:
    """Fit (and measure, without ``-i``), write, print the summary; return 0."""
    from ..calibration.api import calibrate
    from ..calibration.fit import MIN_ROWS, MIN_SHAPES, fit_profile
    from ..hardware import hardware
    from ..hardware.cache import profile_path
    from ..hardware.profile import Profile, save_profile

    source: Any = args.input
    if source is not None and not Path(source).is_file():
        raise CLIError(f"-i {source}: no such file")
    base = args.hardware
    if source is None:
        rows: list[dict[str, Any]] = []
        if args.device == "cuda":
            _require_gpu()
        measured = calibrate(device=args.device, rows=rows)
        source = rows
        if base is None:
            base = hardware() if args.device == "cuda" else measured
    # without -i: one dedicated row per term (peak rate, copy, launch), so one row suffices
    one = args.input is None
    prof: Profile = fit_profile(source, base, terms=args.terms, min_rows=1 if one else MIN_ROWS,
                                min_shapes=1 if one else MIN_SHAPES)
    written = []
    if args.output:
        written.append(save_profile(prof, args.output))
    if args.save or (args.input is None and not args.output):
        meta = prof.fit.to_dict()
        if not meta.get("device"):
            raise ValueError("calibrate: --save needs rows that name their device")
        written.append(save_profile(prof, profile_path(meta["device"],
                                                       meta.get("software", {}))))
    if args.format == "json":
        print(json.dumps(prof.to_dict(), indent=1))
    else:
        _print_summary(prof)
    for path in written:
        print(f"wrote {path}", file=sys.stderr if args.format == "json" else sys.stdout)
    return 0


def _require_gpu() -> None:
    """Raise CLIError (exit 2) saying what to do when torch or a CUDA GPU is missing."""
    try:
        import torch
    except ImportError:
        raise CLIError("calibrate measures with torch, which is not installed: pip install "
                       "roofline[torch] (or fit saved rows with -i FILE.jsonl)") from None
    if not torch.cuda.is_available():
        raise CLIError("calibrate: torch sees no GPU, so there is nothing to measure here; run "
                       "it on the machine with the GPU, pass --device cpu to measure this CPU, "
                       "or -i FILE.jsonl to fit measurements saved earlier") from None


def _value(label: str, x: float | None) -> str:
    if x is None:
        return "-"
    return f"{x * 1e6:.3g} us" if label.endswith("_s") else f"{x:.4g}"


def _change(base: float | None, fitted: float | None) -> str:
    if base is None or fitted is None or base == fitted:
        return ""
    if base == 0:
        return "new"
    return f"{fitted / base - 1:+.1%}"


def _print_summary(prof: Any) -> None:
    from rich.table import Table

    meta = prof.fit.to_dict()
    console = make_console()
    title = f"profile of {meta.get('base', prof.name)} from {meta.get('measurements', '?')}"
    t = Table(title=title)
    t.add_column("parameter", no_wrap=True)
    for c in ("base", "fitted", "change", "rows", "shapes"):
        t.add_column(c, justify="right")
    t.add_column("kept because")
    for k, v in meta.get("terms", {}).items():
        b, f = v.get("base"), v.get("fitted")
        moved = b != f
        t.add_row(k, _value(k, b), _value(k, f), _change(b, f),
                  str(v.get("rows", "")), str(v.get("shapes", "")),
                  "" if moved else str(v.get("kept", "kept")),
                  style=None if moved else "dim")
    console.print(t)
    e = Table(title="median |error| per family")
    for c in ("family", "rows", "before", "after"):
        e.add_column(c, justify="left" if c == "family" else "right")
    for fam, v in meta.get("families", {}).items():
        e.add_row(fam, str(v["rows"]), f"{v['before']:.1%}", f"{v['after']:.1%}")
    console.print(e)
    unused = meta.get("unused", {})
    if unused:
        u = Table(title="families no term was fitted to")
        u.add_column("family")
        u.add_column("reason")
        for fam, why in unused.items():
            u.add_row(fam, why)
        console.print(u)
