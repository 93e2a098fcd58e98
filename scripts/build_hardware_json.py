#!/usr/bin/env python3
"""Build ``python/roofline/data/hardware.json`` from the research CSV.

Usage (from the repository root)::

    python scripts/build_hardware_json.py [CSV] [--out PATH] [--check]

``CSV`` defaults to ``data/hardware.csv`` in the repository
(see ``hardware-notes.md`` next to it for column meanings, sources and traps).

What this script does, and nothing more:

* converts every numeric cell to SI units (FLOP/s, bytes/s, bytes, Hz, W);
* attaches a short canonical name and user-typed aliases to each row (the tables
  below; every CSV row must appear there, and nothing else may);
* records the two values that are *derived* rather than read (FP8 of H100 NVL and
  H200 NVL, whose FP8 cell is empty) in each entry's ``derived`` list.

No other number is invented: an empty cell stays absent / ``null``.

Unit conventions (also written into the JSON's ``units`` block):

* ``fp64 .. fp4`` columns are dense TFLOPS -> ``x 1e12`` FLOP/s.
* ``mem_tbps`` is decimal TB/s -> ``x 1e12`` bytes/s.
* ``mem_capacity_bytes`` is what a framework can allocate: the total the device
  reports to CUDA / HIP where a print of it was found, else the vendor label.

  - ``mem_cuda_mib`` is that device-reported total in MiB (``x 2**20``):
    ``cudaMemGetInfo``'s total, which ``torch.cuda.get_device_properties(i)
    .total_memory``, ``torch.cuda.mem_get_info()[1]``, deviceQuery's "Total amount of
    global memory" and PyTorch's OOM "total capacity" all print (torch's repr writes
    ``total_memory // 2**20`` followed by "MB"). It is what vLLM's
    ``gpu_memory_utilization`` and SGLang's ``mem_fraction_static`` multiply. It sits
    0.3-0.6 % under nvidia-smi's "FB Memory Usage Total" (H100 81090 / 81559 MiB,
    H200 143156 / 143771, B300 274113 / 275040: the driver's reservation), and
    6-7 % over the decimal label for NVIDIA's HBM parts ("80GB" = 85.0e9 B on an
    H100), whose labels count binary GiB of HBM less ECC / reserved carve-outs.
  - Where the cell is empty, ``mem_gb`` (the vendor capacity label) is converted as
    decimal GB (``x 1e9``), except for the rows in :data:`GIB_CAPACITY_ROWS` (TPU v4
    / v5p / TPU7x, Gaudi 2 / 3), whose vendor documents give GiB (``x 2**30``), per
    hardware-notes.md section 1. For NVIDIA / AMD rows this is a lower bound of the
    device's total (hardware-notes.md, "GPU memory capacities as the devices report
    them").
* ``l2_mb``: vendors say "MB" for on-chip caches but mean binary sizes (A100 "40 MB"
  L2 is 41943040 B in deviceQuery), so every L2 / SRAM cell is converted with
  ``x 2**20`` (MiB), not ``x 1e6``.
* ``cc`` (NVIDIA's CUDA compute capability, ``major.minor`` as ``nvidia-smi --query-gpu=
  compute_cap`` prints it) -> ``compute_capability`` ``[major, minor]`` (what
  ``torch.cuda.get_device_capability()`` returns); required on every NVIDIA row, empty on
  every other vendor's (HIP's "capability" of an AMD part is not CUDA's), ``null`` there.
* ``boost_mhz`` -> ``x 1e6`` Hz; ``tdp_w`` stays W; ``interconnect_gbps`` is the
  bidirectional aggregate in decimal GB/s -> ``x 1e9`` bytes/s (halve it for one
  direction; ``interconnect_note`` says what the link is).

Decimal arithmetic is used for the conversions so that e.g. 1.555 TB/s becomes
exactly ``1555000000000.0`` rather than a float product with a rounding tail.
"""

from __future__ import annotations

import argparse
import csv
import json
import re
import sys
from decimal import Decimal
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[1]
DEFAULT_CSV = (REPO_ROOT / "data" / "hardware.csv").resolve()
DEFAULT_OUT = REPO_ROOT / "python" / "roofline" / "data" / "hardware.json"

SCHEMA = "roofline.hardware/1"

#: CSV ``name`` -> (short canonical name, aliases users type). Order = database order
#: is the CSV's order. Aliases are matched case-insensitively with ``-``/``_``/spaces
#: normalised, so "H100-SXM" and "h100_sxm" need no separate entry. The bare "H100"
#: is deliberately nobody's alias: it is ambiguous (SXM / PCIe / NVL) and "NVIDIA H100"
#: is the exact device name of a different SKU (PCI id 2339) with unpublished specs.
CANONICAL: dict[str, tuple[str, list[str]]] = {
    "NVIDIA V100 SXM2 16GB": ("V100 SXM2 16GB", ["V100 16GB", "V100 SXM 16GB"]),
    # Both V100 rows have the same compute and bandwidth; "V100" picks the 32 GB one
    # (as llm-analysis' "v100-sxm" does).
    "NVIDIA V100 SXM2 32GB": (
        "V100 SXM2 32GB",
        ["V100", "V100 SXM2", "V100 32GB", "V100 SXM 32GB"],
    ),
    "NVIDIA A100 SXM4 40GB": ("A100 SXM 40GB", ["A100 40GB", "A100 SXM4 40GB", "A100 40GB SXM"]),
    # "A100" alone means the SXM 80 GB part (the common one; PyTorch inductor's
    # "NVIDIA A100" table entry uses its 2039 GB/s too).
    "NVIDIA A100 SXM4 80GB": (
        "A100 SXM 80GB",
        ["A100", "A100 SXM", "A100 SXM4", "A100 80GB", "A100 SXM4 80GB", "A100 80GB SXM"],
    ),
    "NVIDIA A100 PCIe 40GB": ("A100 PCIe 40GB", ["A100 40GB PCIe"]),
    "NVIDIA A100 PCIe 80GB": ("A100 PCIe 80GB", ["A100 80GB PCIe"]),
    "NVIDIA A10": ("A10", ["A10 PCIe"]),
    "NVIDIA A10G (AWS)": ("A10G", ["A10G AWS"]),
    "NVIDIA L4": ("L4", []),
    "NVIDIA L40S": ("L40S", []),
    "NVIDIA GeForce RTX 4090": ("RTX 4090", ["RTX4090", "GeForce RTX 4090", "4090"]),
    "NVIDIA GeForce RTX 3090": ("RTX 3090", ["RTX3090", "GeForce RTX 3090", "3090"]),
    "NVIDIA H100 SXM5 80GB": (
        "H100 SXM",
        ["H100 SXM5", "H100 SXM 80GB", "H100 SXM5 80GB", "H100 80GB HBM3", "H100 HBM3"],
    ),
    "NVIDIA H100 PCIe 80GB": ("H100 PCIe", ["H100 PCIe 80GB"]),
    "NVIDIA H100 NVL 94GB": ("H100 NVL", ["H100 NVL 94GB"]),
    "NVIDIA H800 SXM5 80GB": ("H800", ["H800 SXM", "H800 SXM5", "H800 SXM5 80GB"]),
    "NVIDIA H20 96GB": ("H20", ["H20 96GB"]),
    "NVIDIA H200 SXM 141GB": ("H200", ["H200 SXM", "H200 SXM5", "H200 141GB", "H200 SXM 141GB"]),
    "NVIDIA H200 NVL 141GB": ("H200 NVL", ["H200 NVL 141GB"]),
    # "GH200" alone means the original 96 GB HBM3 superchip (device name
    # "NVIDIA GH200 480GB"); the HBM3e part is "GH200 144GB".
    "NVIDIA GH200 (96GB HBM3)": ("GH200 96GB", ["GH200", "GH200 96GB HBM3", "GH200 480GB"]),
    "NVIDIA GH200 (144GB HBM3e)": ("GH200 144GB", ["GH200 144GB HBM3e", "GH200 144G HBM3e"]),
    "NVIDIA B100": ("B100", ["B100 SXM", "HGX B100"]),
    "NVIDIA B200 (HGX 1000W)": ("B200", ["B200 SXM", "HGX B200", "DGX B200"]),
    "NVIDIA GB200 (per GPU; NVL72)": ("GB200", ["GB200 NVL72"]),
    "NVIDIA B300 (HGX; Blackwell Ultra)": ("B300", ["B300 SXM", "B300 SXM6", "HGX B300"]),
    "NVIDIA GB300 (per GPU; NVL72)": ("GB300", ["GB300 NVL72"]),
    "NVIDIA GeForce RTX 5090": ("RTX 5090", ["RTX5090", "GeForce RTX 5090", "5090"]),
    "NVIDIA RTX PRO 6000 Blackwell Server Edition": (
        "RTX PRO 6000 Server",
        ["RTX PRO 6000 Blackwell Server Edition", "RTX PRO 6000 Server Edition"],
    ),
    "NVIDIA RTX PRO 6000 Blackwell Workstation Edition": (
        "RTX PRO 6000 Workstation",
        ["RTX PRO 6000 Blackwell Workstation Edition", "RTX PRO 6000 Workstation Edition"],
    ),
    # Not "MI250": that is a different (slower) part, even though HIP reports both as
    # "AMD Instinct MI250X/MI250".
    "AMD Instinct MI250X": ("MI250X", ["Instinct MI250X", "AMD MI250X"]),
    "AMD Instinct MI300X": ("MI300X", ["Instinct MI300X", "AMD MI300X"]),
    "AMD Instinct MI325X": ("MI325X", ["Instinct MI325X", "AMD MI325X"]),
    "AMD Instinct MI355X": ("MI355X", ["Instinct MI355X", "AMD MI355X"]),
    "Google TPU v4": ("TPU v4", ["TPUv4"]),
    "Google TPU v5e": ("TPU v5e", ["TPUv5e", "TPU v5litepod", "v5e"]),
    "Google TPU v5p": ("TPU v5p", ["TPUv5p", "v5p"]),
    "Google TPU v6e (Trillium)": ("TPU v6e", ["TPUv6e", "Trillium", "v6e"]),
    "Google TPU7x (Ironwood)": ("TPU7x", ["TPU v7x", "TPUv7x", "TPU v7", "Ironwood"]),
    "Intel Gaudi 2": ("Gaudi 2", ["Gaudi2", "Intel Gaudi2", "HPU Gaudi2"]),
    "Intel Gaudi 3": ("Gaudi 3", ["Gaudi3", "Intel Gaudi3", "HPU Gaudi3"]),
}

#: Packages whose row describes several devices as the runtime sees them: ``mem_cuda_mib`` is
#: their sum (MI250X: HIP shows each of its two GCDs as a 65520 MiB device; hardware-notes §43).
DEVICES_PER_PACKAGE = {"AMD Instinct MI250X": 2}

#: Rows whose ``mem_gb`` is GiB in the vendor documents (hardware-notes.md section 1).
GIB_CAPACITY_ROWS = frozenset(
    {
        "Google TPU v4",
        "Google TPU v5p",
        "Google TPU7x (Ironwood)",
        "Intel Gaudi 2",
        "Intel Gaudi 3",
    }
)

_HOPPER_FP8 = "fp8 = int8 rate (Hopper tensor cores run FP8 at the INT8 dense rate)"

#: The only derived values: CSV name -> {peak column: (source column, explanation)}.
DERIVED: dict[str, dict[str, tuple[str, str]]] = {
    "NVIDIA H100 NVL 94GB": {"fp8": ("int8", _HOPPER_FP8)},
    "NVIDIA H200 NVL 141GB": {"fp8": ("int8", _HOPPER_FP8)},
}

PEAK_COLUMNS = ("fp64", "fp32", "tf32", "bf16", "fp8", "int8", "fp4")
EXPECTED_COLUMNS = (
    "name",
    "vendor",
    "torch_device_names",
    "cc",
    *PEAK_COLUMNS,
    "mem_gb",
    "mem_cuda_mib",
    "mem_tbps",
    "l2_mb",
    "sms",
    "boost_mhz",
    "tdp_w",
    "interconnect_gbps",
    "interconnect_note",
    "sources",
)

TERA = Decimal(10) ** 12
GIGA = Decimal(10) ** 9
MEGA = Decimal(10) ** 6
GIB = Decimal(2) ** 30
MIB = Decimal(2) ** 20  # L2 / SRAM "MB" and device-reported "MiB" are binary

UNITS = {
    "peak_flops_per_s": "FLOP/s, dense (no 2:4 sparsity); CSV TFLOPS x 1e12",
    "mem_bytes_per_s": "bytes/s; CSV TB/s x 1e12",
    "mem_capacity_bytes": (
        "bytes a framework can allocate; CSV mem_cuda_mib x 2**20 (the total CUDA / HIP "
        "report, torch total_memory) where known, else the vendor label: CSV GB x 1e9, "
        "except TPU v4/v5p/TPU7x and Gaudi 2/3 whose vendor capacities are GiB: x 2**30"
    ),
    "l2_bytes": "bytes; CSV MB x 2**20 (vendors' cache 'MB' are binary)",
    "compute_capability": "[major, minor] (torch.cuda.get_device_capability()); CSV cc "
    "'major.minor'; null for non-NVIDIA parts",
    "clock_hz": "Hz; CSV MHz x 1e6",
    "tdp_w": "W",
    "interconnect_bytes_per_s": (
        "bytes/s, bidirectional aggregate per accelerator; CSV GB/s x 1e9 (one direction is half)"
    ),
}


def _decimal(cell: str, column: str, row_name: str) -> Decimal | None:
    cell = cell.strip()
    if not cell:
        return None
    try:
        value = Decimal(cell)
    except ArithmeticError as exc:
        raise ValueError(f"{row_name}: column {column} is not a number: {cell!r}") from exc
    if not value.is_finite() or value <= 0:
        raise ValueError(f"{row_name}: column {column} must be positive, got {cell!r}")
    return value


def _whole(cell: str, column: str, row_name: str, what: str) -> Decimal | None:
    """:func:`_decimal` of a cell that must be a whole number (``what`` names it in the error)."""
    value = _decimal(cell, column, row_name)
    if value is not None and value != value.to_integral_value():
        raise ValueError(f"{row_name}: {column} must be {what}, got {cell!r}")
    return value


_CC_PATTERN = re.compile(r"([1-9][0-9]?)\.([0-9])")


def _compute_capability(row: dict[str, str], row_name: str) -> list[int] | None:
    """``cc`` cell -> ``[major, minor]``: required for NVIDIA rows, empty for the others."""
    cell = row["cc"].strip()
    nvidia = row["vendor"].strip() == "NVIDIA"
    if not cell:
        if nvidia:
            raise ValueError(f"{row_name}: column cc (CUDA compute capability) is required on "
                             "an NVIDIA row, got ''")
        return None
    if not nvidia:
        raise ValueError(f"{row_name}: column cc must be empty for vendor "
                         f"{row['vendor'].strip()!r} (CUDA compute capability is NVIDIA's), "
                         f"got {cell!r}")
    match = _CC_PATTERN.fullmatch(cell)
    if match is None:
        raise ValueError(f"{row_name}: column cc must be 'major.minor' (e.g. 9.0, 10.3), "
                         f"got {cell!r}")
    return [int(match.group(1)), int(match.group(2))]


def _scaled(cell: str, column: str, row_name: str, factor: Decimal) -> float | None:
    value = _decimal(cell, column, row_name)
    return None if value is None else float(value * factor)


def convert_row(row: dict[str, str]) -> dict[str, Any]:
    """Convert one CSV row to one JSON entry (SI units)."""
    full_name = row["name"].strip()
    if full_name not in CANONICAL:
        raise ValueError(f"CSV row {full_name!r} has no canonical name in CANONICAL")
    name, aliases = CANONICAL[full_name]

    peaks: dict[str, float] = {}
    for column in PEAK_COLUMNS:
        value = _scaled(row[column], column, full_name, TERA)
        if value is not None:
            peaks[column] = value

    derived: list[str] = []
    for column, (source_column, why) in DERIVED.get(full_name, {}).items():
        if column in peaks:
            raise ValueError(f"{full_name}: {column} is in the CSV now; drop the derivation")
        if source_column not in peaks:
            raise ValueError(f"{full_name}: cannot derive {column}: {source_column} is empty")
        peaks[column] = peaks[source_column]
        derived.append(why)
    peaks = {c: peaks[c] for c in PEAK_COLUMNS if c in peaks}

    capacity_factor = GIB if full_name in GIB_CAPACITY_ROWS else GIGA
    sms = _whole(row["sms"], "sms", full_name, "an integer")
    mem_bytes_per_s = _scaled(row["mem_tbps"], "mem_tbps", full_name, TERA)
    if mem_bytes_per_s is None:
        raise ValueError(f"{full_name}: mem_tbps is required")

    label_bytes = _scaled(row["mem_gb"], "mem_gb", full_name, capacity_factor)
    reported_mib = _whole(row["mem_cuda_mib"], "mem_cuda_mib", full_name, "whole MiB")
    capacity = label_bytes if reported_mib is None else float(reported_mib * MIB)

    notes: list[str] = []
    if reported_mib is not None:
        label = row["mem_gb"].strip()
        api = "HIP" if row["vendor"].strip() == "AMD" else "CUDA"
        dies = DEVICES_PER_PACKAGE.get(full_name, 1)
        reported = (
            f"the total the device reports to {api}"
            if dies == 1
            else f"{dies} x {reported_mib / dies} MiB, the totals {api} reports for each of "
            f"the package's {dies} devices (one per die)"
        )
        notes.append(
            f"mem_capacity_bytes = {reported_mib} MiB, {reported}"
            + (f" (vendor label {label} GB)." if label else " (no vendor label in the CSV).")
        )
    elif full_name in GIB_CAPACITY_ROWS and row["mem_gb"].strip():
        notes.append(
            f"mem_capacity_bytes = {row['mem_gb'].strip()} GiB (vendor documents give GiB)."
        )
    notes.extend(f"Derived: {why}." for why in derived)

    return {
        "name": name,
        "full_name": full_name,
        "vendor": row["vendor"].strip(),
        "compute_capability": _compute_capability(row, full_name),
        "device_names": [s.strip() for s in row["torch_device_names"].split(";") if s.strip()],
        "aliases": list(aliases),
        "peak_flops_per_s": peaks,
        "mem_bytes_per_s": mem_bytes_per_s,
        "mem_capacity_bytes": capacity,
        "l2_bytes": _scaled(row["l2_mb"], "l2_mb", full_name, MIB),
        "sms": None if sms is None else int(sms),
        "clock_hz": _scaled(row["boost_mhz"], "boost_mhz", full_name, MEGA),
        "tdp_w": _scaled(row["tdp_w"], "tdp_w", full_name, Decimal(1)),
        "interconnect_bytes_per_s": _scaled(
            row["interconnect_gbps"], "interconnect_gbps", full_name, GIGA
        ),
        "interconnect_note": row["interconnect_note"].strip(),
        "notes": " ".join(notes),
        "sources": row["sources"],
        "derived": derived,
    }


def build(csv_path: Path) -> dict[str, Any]:
    """Read the CSV and return the whole JSON document."""
    with csv_path.open(newline="", encoding="utf-8") as f:
        reader = csv.DictReader(f)
        missing = [c for c in EXPECTED_COLUMNS if c not in (reader.fieldnames or [])]
        if missing:
            raise ValueError(f"{csv_path}: missing columns {missing}")
        rows = list(reader)
    entries = [convert_row(row) for row in rows]
    seen = {e["full_name"] for e in entries}
    absent = [n for n in CANONICAL if n not in seen]
    if absent:
        raise ValueError(f"CANONICAL names rows that are not in the CSV: {absent}")
    if len(seen) != len(entries):
        raise ValueError(f"{csv_path}: duplicate row names")
    return {
        "schema": SCHEMA,
        "generated_by": "scripts/build_hardware_json.py (do not edit by hand)",
        "source_csv": "../shared/data/hardware.csv (notes: hardware-notes.md)",
        "units": UNITS,
        "entries": entries,
    }


def render(document: dict[str, Any]) -> str:
    """Serialise the document deterministically."""
    return json.dumps(document, indent=2, ensure_ascii=False) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("csv", nargs="?", type=Path, default=DEFAULT_CSV, help="hardware.csv")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="output JSON path")
    parser.add_argument(
        "--check", action="store_true", help="exit 1 if the output file is out of date"
    )
    args = parser.parse_args(argv)
    text = render(build(args.csv))
    if args.check:
        current = args.out.read_text(encoding="utf-8") if args.out.exists() else ""
        if current != text:
            print(f"{args.out} is out of date; rerun {Path(__file__).name}", file=sys.stderr)
            return 1
        print(f"{args.out} is up to date")
        return 0
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text, encoding="utf-8")
    print(f"wrote {len(json.loads(text)['entries'])} entries to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
