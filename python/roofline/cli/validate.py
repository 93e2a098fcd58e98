"""``roofline validate``: the model's error on measurement files, per family.

``add_parser(sub)`` adds it to the ``roofline`` parser (it sets ``func=run``).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import Any

from ._common import CLIError, literal, make_console, one_line, require_matplotlib

__all__ = ["add_parser", "run"]


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add the ``validate`` subcommand to an ``argparse`` subparsers object."""
    p: argparse.ArgumentParser = subparsers.add_parser(
        "validate",
        help="the model's error against measurement files (JSON lines), per family",
        description="Predict every row of one or more measurement files (the shared JSONL "
        "schema, e.g. from 'roofline bench') and print the median / p90 absolute relative "
        "error and the bias per family, with the constant and peak presets beside the model; "
        "rows that cannot be mapped or predicted are listed. A whole-job file (the schema of "
        "roofline/data/jobs/published_jobs.jsonl, detected by its rows) is priced with "
        "rl.transformer.estimate / serve and its error printed per family and per source.",
    )
    p.add_argument("files", nargs="+", metavar="FILE.jsonl")
    hw = p.add_mutually_exclusive_group()
    hw.add_argument("--hardware", default=None, metavar="NAME",
                    help="accelerator to predict on (default: each row's hardware field)")
    hw.add_argument("--profile", default=None, metavar="P",
                    help="a hardware profile (Hardware JSON, e.g. from rl.calibrate)")
    p.add_argument("--efficiency", default="default",
                   help="model to validate: default, constant, peak or torchao")
    p.add_argument("--format", choices=("table", "csv", "json"), default="table",
                   help="default: table")
    p.add_argument("--plot", default=None, metavar="OUT.png",
                   help="also draw predicted vs measured (log-log) to this PNG")
    p.add_argument("--rows", action="store_true",
                   help="whole-job files: every priced row (measured, predicted, error), "
                   "worst first per family; with --format csv / json, the rows instead of "
                   "the summary")
    p.set_defaults(func=run)
    return p


def _pct(value: Any) -> str:
    import math

    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    return f"{value:.1%}"


def run(args: argparse.Namespace) -> int:
    """Run ``roofline validate``; returns the exit status."""
    from ..hardware import Hardware
    from ..validation.jobs import is_jobs_file
    from ..validation.report import validate

    hardware: Any = args.hardware
    if args.plot:
        require_matplotlib("--plot")
    if args.profile is not None:
        try:
            hardware = Hardware.from_file(args.profile)
        except FileNotFoundError:
            raise CLIError(f"--profile: no such file: {args.profile}") from None
        except OSError as exc:
            raise CLIError(f"--profile: cannot read {args.profile}: "
                           f"{exc.strerror or exc}") from None
    jobs = [f for f in args.files if is_jobs_file(f)]
    if jobs:
        if len(jobs) != len(args.files):
            raise CLIError("validate: give either measurement files or jobs files, not both "
                           f"(jobs files: {', '.join(jobs)})")
        if hardware is not None:
            raise CLIError("validate: a jobs file names each row's hardware; drop --hardware "
                           "/ --profile")
        return _run_jobs(args)
    if args.rows:
        raise CLIError("validate: --rows applies to whole-job files (the schema of "
                       "roofline/data/jobs/published_jobs.jsonl)")
    try:
        result = validate(args.files if len(args.files) > 1 else args.files[0],
                          hardware=hardware, efficiency=args.efficiency)
    except FileNotFoundError as exc:
        raise CLIError(str(exc)) from None
    if result.table.empty:
        raise CLIError(_nothing_predicted(result, args))
    if _wrote_file_formats(result, args, _notes):
        return 0

    from rich.table import Table

    df = result.table
    several = "file" in df.columns
    table = Table(title="absolute relative error of predicted time (median, p90); bias = "
                  f"median signed error of {result.models[0]} (+ = predicted too slow)",
                  title_style="bold")
    if several:
        table.add_column("file")
    table.add_column("family")
    table.add_column("rows", justify="right")
    for m in result.models:
        table.add_column(f"{m} med", justify="right")
        table.add_column("p90", justify="right")
    table.add_column("bias", justify="right")
    for rec in df.to_dict(orient="records"):
        cells = [literal(rec["file"])] if several else []
        cells += [literal(rec["family"]), literal(int(rec["rows"]))]
        for m in result.models:
            cells += [literal(_pct(rec.get(f"{m}_median"))), literal(_pct(rec.get(f"{m}_p90")))]
        bias = rec.get(f"{result.models[0]}_bias")
        cells.append(literal("" if bias is None or bias != bias else f"{bias:+.0%}"))
        table.add_row(*cells)
    console = make_console()
    console.print(table)
    _notes(result, sys.stdout)
    if args.plot:
        print(f"plot: {args.plot}")
    return 0


def _nothing_predicted(result: Any, args: argparse.Namespace) -> str:
    """One message for a run where no row could be predicted: why, and what to pass."""
    errors = result.errors.to_dict(orient="records")
    unmapped = result.unmapped.to_dict(orient="records")
    rows = sum(int(r["rows"]) for r in errors) + sum(int(r["rows"]) for r in unmapped)
    why = ""
    if errors:
        first = one_line(str(errors[0]["message"]))
        first = first.split(". See ")[0].split(" (or call ")[0]
        why = f"; e.g. {errors[0]['family']}: {first}"
    elif unmapped:
        why = f"; no model for op {unmapped[0]['op']!r} ({unmapped[0]['family']})"
    fix = ("pass --hardware NAME (see 'roofline hardware list') or --profile FILE.json (a "
           "calibrated profile, from 'roofline calibrate') for the device these rows were "
           "measured on")
    if args.profile is not None or args.hardware is not None:
        fix = "check that the rows were measured on the device you named"
    return f"validate: none of the {rows} rows could be predicted{why}; {fix}"


def _notes(result: Any, stream: Any) -> None:
    """Unmapped rows and rows whose prediction raised, by family and count."""
    for rec in result.unmapped.to_dict(orient="records"):
        print(f"unmapped: {rec['rows']} rows of {rec['family']} (op {rec['op']!r}: no model)",
              file=stream)
    for rec in result.errors.to_dict(orient="records"):
        message = one_line(str(rec["message"]))
        print(f"not predicted: {rec['rows']} rows of {rec['family']}: {message}",
              file=stream)


def _wrote_file_formats(result: Any, args: argparse.Namespace,
                        notes: Callable[[Any, Any], None]) -> bool:
    """The plot (``--plot``) and the csv / json formats, shared by measurement and jobs
    results; True when the format was csv or json (nothing left to print)."""
    if args.plot:
        result.plot(args.plot)
    if args.format == "csv":
        sys.stdout.write(result.to_csv())
        notes(result, sys.stderr)
        return True
    if args.format == "json":
        print(result.to_json())
        return True
    return False


def _run_jobs(args: argparse.Namespace) -> int:
    """``roofline validate JOBS.jsonl``: error per family and per source of whole jobs."""
    from ..validation.jobs import read_jobs, validate_jobs

    try:
        # one file is read by validate_jobs itself; several are read here and joined
        source = args.files[0] if len(args.files) == 1 else [
            r for f in args.files for r in read_jobs(f)]
        result = validate_jobs(source, efficiency=args.efficiency)
    except (FileNotFoundError, ValueError) as exc:
        raise CLIError(str(exc)) from None
    if result.table.empty:  # every row raised or is marked not expressible
        errors = result.errors.to_dict(orient="records")
        n = len(errors) + len(result.unmapped)
        why = (f"; e.g. {errors[0]['id']}: {one_line(str(errors[0]['message']))[:200]}"
               if errors else " (every row is marked not_expressible)")
        raise CLIError(f"validate: none of the {n} jobs rows could be priced{why}")
    if args.rows and args.format != "table":
        rows = _worst_first(result.jobs)
        sys.stdout.write(rows.to_csv(index=False) if args.format == "csv"
                         else rows.to_json(orient="records", indent=2) + "\n")
        _jobs_notes(result, sys.stderr)
        return 0
    if _wrote_file_formats(result, args, _jobs_notes):
        return 0
    from rich.table import Table

    m = result.models[0]
    table = Table(title="whole jobs: error of predicted time (= 1 / throughput) against "
                  f"published figures; bias = median signed error of {m} "
                  "(+ = predicted too slow)", title_style="bold")
    for col in ("by", "family / source", "rows", "median", "p90", "bias"):
        table.add_column(col, justify="left" if col in ("by", "family / source") else "right")
    for rec in result.table.to_dict(orient="records"):
        table.add_row(literal(rec["by"]), literal(rec["family"]), literal(int(rec["rows"])),
                      literal(_pct(rec.get(f"{m}_median"))), literal(_pct(rec.get(f"{m}_p90"))),
                      literal(f"{rec[f'{m}_bias']:+.0%}"))
    make_console().print(table)
    if args.rows:
        make_console().print(_rows_table(result.jobs))
    _jobs_notes(result, sys.stdout)
    if args.plot:
        print(f"plot: {args.plot}")
    return 0


def _worst_first(jobs: Any) -> Any:
    """The priced jobs by family, largest absolute error first."""
    order = jobs.assign(_abs=jobs["error"].abs()).sort_values(["family", "_abs"],
                                                              ascending=[True, False])
    return order.drop(columns="_abs").reset_index(drop=True)


def _rows_table(jobs: Any) -> Any:
    """A rich table of every priced job (:func:`_worst_first`), numbers untruncated."""
    from rich.table import Table

    table = Table(title="every priced job: error = predicted time / measured time - 1",
                  title_style="bold")
    for col in ("family", "id", "hardware", "unit", "measured", "predicted", "error"):
        table.add_column(col, justify="right" if col in ("measured", "predicted", "error")
                         else "left")
    for rec in _worst_first(jobs).to_dict(orient="records"):
        table.add_row(literal(rec["family"]), literal(rec["id"]), literal(rec["hardware"]),
                      literal(rec["unit"]), literal(f"{rec['measured']:,.6g}"),
                      literal(f"{rec['predicted']:,.6g}"), literal(f"{rec['error']:+.1%}"))
    return table


def _jobs_notes(result: Any, stream: Any) -> None:
    """Rows marked not expressible and rows whose pricing raised, one line each."""
    for rec in result.unmapped.to_dict(orient="records"):
        print(f"not expressible: {rec['id']} ({rec['family']}): {rec['reason'][:140]}",
              file=stream)
    for rec in result.errors.to_dict(orient="records"):
        print(f"not predicted: {rec['id']} ({rec['family']}): {rec['message'][:160]}",
              file=stream)
    print("held out: nothing in the model is fitted to these rows (no fit-on-some-sources "
          "split to report); every error is out of sample", file=stream)
