"""``roofline hardware list|show``: browse the hardware database."""

from __future__ import annotations

import argparse
import csv
import dataclasses
import sys
from typing import Any

from .._format import MISSING, percent, scaled, si
from ..hardware import PEAK_CLASSES, TABLES, Hardware, list_hardware
from ..hardware import hardware as lookup_hardware
from ..hardware.spec import cc_text
from ._common import literal, make_console, peak, print_json, resolve_hardware, write_csv

__all__ = ["add_parser", "run_list", "run_show"]

_LIST_FIELDS = ("name", "vendor", "bf16_flops_per_s", "fp8_flops_per_s", "mem_bytes_per_s",
                "mem_capacity_bytes", "sms")

_UNITS = {
    "mem_bytes_per_s": "B/s",
    "mem_capacity_bytes": "B",
    "l2_bytes": "B",
    "clock_hz": "Hz",
    "tdp_w": "W",
    "interconnect_bytes_per_s": "B/s",
    **{f"{p}_flops_per_s": "OP/s" if p == "int8" else "FLOP/s" for p in PEAK_CLASSES},
}


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add ``hardware list`` and ``hardware show`` to an ``argparse`` subparsers object."""
    hw_parser: argparse.ArgumentParser = subparsers.add_parser(
        "hardware", help="the hardware database", description="Browse the hardware database.")
    hw_sub = hw_parser.add_subparsers(dest="hardware_command", metavar="COMMAND", required=True)
    p = hw_sub.add_parser("list", help="every accelerator with its headline numbers")
    p.add_argument("--table", choices=TABLES, default="roofline",
                   help="this project's database (default) or torchao's table")
    p.add_argument("--format", choices=("table", "csv", "json"), default="table",
                   help="csv: the listed columns in SI units; json: every field; default: table")
    p.set_defaults(func=run_list)
    p = hw_sub.add_parser("show", help="every field of one accelerator, with sources and notes")
    p.add_argument("name", nargs="*", metavar="NAME",
                   help="name or alias (quotes optional); default: the detected GPU")
    p.add_argument("--table", choices=TABLES, default="roofline",
                   help="this project's database (default) or torchao's table")
    p.add_argument("--format", choices=("table", "csv", "json"), default="table",
                   help="json: Hardware.to_dict(); csv: field,value rows; default: table")
    p.set_defaults(func=run_show)
    return hw_parser


def _entries(table: str) -> list[Hardware]:
    return [lookup_hardware(name, table=table) for name in list_hardware(table)]


def run_list(args: argparse.Namespace) -> int:
    """Run ``roofline hardware list``; returns the exit status."""
    entries = _entries(args.table)
    if args.format == "json":
        print_json([hw.to_dict() for hw in entries])
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
            *map(literal, (
                hw.name,
                hw.vendor or MISSING,
                scaled(hw.bf16_flops_per_s, 1e12),
                scaled(hw.fp8_flops_per_s, 1e12),
                scaled(hw.mem_bytes_per_s, 1e12),
                scaled(hw.mem_capacity_bytes, 1e9),
                MISSING if hw.sms is None else str(hw.sms),
            ))
        )
    make_console().print(table)
    return 0


def _field_value(field: str, value: Any) -> str:
    if value is None or value == "" or value == ():
        return MISSING
    if field == "compute_capability":
        return cc_text(value)
    if field in _UNITS:
        return si(float(value), _UNITS[field])
    if field.startswith("achievable_"):
        return percent(float(value))
    if isinstance(value, tuple):
        return ", ".join(value)
    return str(value)


def run_show(args: argparse.Namespace) -> int:
    """Run ``roofline hardware show``; returns the exit status."""
    name = " ".join(args.name).strip() or None
    hw = resolve_hardware(name, args.table, flag="NAME")
    if args.format == "json":
        print_json(hw.to_dict())
        return 0
    if args.format == "csv":
        write_csv([{"field": k, "value": cc_text(hw.compute_capability)
                    if k == "compute_capability" else "; ".join(v) if isinstance(v, list) else v}
                   for k, v in hw.to_dict().items()], ("field", "value"))
        return 0

    from rich.table import Table

    table = Table(title=f"{hw.name} ({hw.table} table)", title_style="bold", show_header=True)
    table.add_column("field")
    table.add_column("value", max_width=100, overflow="fold")
    for f in dataclasses.fields(hw):
        table.add_row(literal(f.name), literal(_field_value(f.name, getattr(hw, f.name))))
    for p in ("bf16", "fp8", "fp4"):
        top = peak(hw, p)
        if top:
            table.add_row(
                literal(f"ridge point ({p})", "dim"),
                literal(f"{top / hw.mem_bytes_per_s:.4g} FLOP/B", "dim"),
            )
    make_console().print(table)
    return 0
