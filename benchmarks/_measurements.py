"""What benchmarks/calibrate.py and benchmarks/validate.py share about the measurement files."""

from __future__ import annotations

import csv
from collections.abc import Collection
from pathlib import Path
from typing import Any

#: gemm_max_achievable.csv's GPU names -> our canonical names. MI250X is left out: its row is
#: one GCD (half the package our database describes).
MAX_ACHIEVABLE_NAMES = {
    "NVIDIA A100 SXM": "A100 SXM 80GB",
    "NVIDIA A100 PCIe": "A100 PCIe 80GB",
    "NVIDIA H100 SXM": "H100 SXM",
    "NVIDIA H200 SXM": "H200",
    "NVIDIA GH200 SXM": "GH200 144GB",
    "NVIDIA B200 SXM": "B200",
    "NVIDIA B300 SXM": "B300",
    "NVIDIA GB200 SXM": "GB200",
    "AMD MI300X": "MI300X",
    "AMD MI325X": "MI325X",
    "AMD MI355X": "MI355X",
    "Intel Gaudi 2": "Gaudi 2",
    "Intel Gaudi 3": "Gaudi 3",
}


def read(path: Path) -> list[dict[str, str]]:
    """Rows of a measurement CSV as dicts."""
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


#: Our own GPU measurements (the shared JSON-lines schema) that the fit_<area>.py scripts use.
GPU_FILE = "gpu_h100_calibration.jsonl"


def gpu_rows(data_dir: Path, families: Collection[str]) -> list[dict[str, Any]]:
    """The rows of ``families`` in our GPU measurement file, read and checked once."""
    from roofline.validation import read_measurements

    return [r for r in read_measurements(data_dir / GPU_FILE) if r["family"] in families]

