"""The calibrated model against published measurements (benchmarks/validate.py's table).

Tolerances are the median absolute errors the model reached when it was calibrated (rounded
up a little), and never above the issue's 12 % for the GEMM and norm/softmax files. The
max-achievable file is in-sample (it sets the achievable fractions), so its bound is tight.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.validation

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data" / "measurements"

#: file -> largest allowed median absolute relative error of the default (calibrated) model.
CALIBRATED_MEDIAN_BOUND = {
    "gemm_fp8_dense_h800.csv": 0.07,
    "gemm_max_achievable.csv": 0.02,
    "norm_softmax_h100.csv": 0.05,
    "fp8_quantize_h100.csv": 0.05,
}


@pytest.fixture(scope="module")
def table() -> list[dict]:
    if not DATA.is_dir():
        pytest.skip(f"measurement data not found at {DATA}")
    sys.path.insert(0, str(ROOT / "benchmarks"))
    spec = importlib.util.spec_from_file_location("validate", ROOT / "benchmarks" / "validate.py")
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.table(DATA)


@pytest.mark.parametrize("file", sorted(CALIBRATED_MEDIAN_BOUND))
def test_calibrated_median_error_per_file(table: list[dict], file: str) -> None:
    row = next(r for r in table if r["file"] == file and r["family"] == "all rows")
    assert row["rows"] > 0
    assert row["default_median"] <= CALIBRATED_MEDIAN_BOUND[file], row
    assert row["default_median"] <= 0.12


@pytest.mark.parametrize("file", sorted(CALIBRATED_MEDIAN_BOUND))
def test_calibrated_beats_torchao_constants(table: list[dict], file: str) -> None:
    row = next(r for r in table if r["file"] == file and r["family"] == "all rows")
    assert row["default_median"] < row["torchao_median"]
    assert row["default_median"] < row["peak_median"]
