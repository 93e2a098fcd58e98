"""The calibrated model against published measurements (benchmarks/validate.py's table).

Tolerances are the median absolute errors the model reached when it was calibrated (rounded
up a little), and never above the issue's 12 % for the GEMM and norm/softmax files. The
max-achievable file is in-sample (it sets the achievable fractions), so its bound is tight.
The attention file's "all rows" are the implementations the default model claims to predict:
FlashAttention-2 (flash, in-sample: it sets the attention terms) and "PyTorch standard" (the
eager program FA2's benchmark ran, priced op by op by roofline.torch.estimate; out of sample);
FlashAttention v1 / Triton / xformers are reference families outside it.
The MLA file compares headline maxima with the model's maximum over FlashMLA's test sweep; its
660 TFLOPS row is in-sample (it sets the decode fraction).
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from _benchmarks import load_benchmark

pytestmark = pytest.mark.validation

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "data" / "measurements"

#: file -> largest allowed median absolute relative error of the default (calibrated) model.
CALIBRATED_MEDIAN_BOUND = {
    "gemm_fp8_dense_h800.csv": 0.07,
    "gemm_max_achievable.csv": 0.02,
    "norm_softmax_h100.csv": 0.05,
    "fp8_quantize_h100.csv": 0.05,
    "attention_fwd_bwd_a100_h100.csv": 0.055,
    "mla_decode_headlines_h800.csv": 0.05,
}

#: (file, family) -> largest allowed median absolute relative error of the default model.
FAMILY_MEDIAN_BOUND = {
    ("attention_fwd_bwd_a100_h100.csv", "FlashAttention-2 (flash)"): 0.03,
    # the benchmark's eager program op by op (copies, baddbmm, mask, softmax, einsum, autograd):
    # 7.3 % (was 39 % as one idealized materialized kernel)
    ("attention_fwd_bwd_a100_h100.csv", "PyTorch standard (eager program)"): 0.08,
}


@pytest.fixture(scope="module")
def table() -> list[dict]:
    if not DATA.is_dir():
        pytest.fail(f"measurement data not found at {DATA}")
    return load_benchmark("validate", keep_path=True).table(DATA)


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


@pytest.mark.parametrize(("file", "family"), sorted(FAMILY_MEDIAN_BOUND))
def test_calibrated_median_error_per_family(table: list[dict], file: str, family: str) -> None:
    row = next(r for r in table if r["file"] == file and r["family"] == family)
    assert row["rows"] > 0
    assert row["default_median"] <= FAMILY_MEDIAN_BOUND[(file, family)], row


def test_attention_reference_rows_are_reported() -> None:
    """Every attention row is in some family: modeled, reference or without a value."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    if not DATA.is_dir():
        pytest.fail(f"measurement data not found at {DATA}")
    from _measurements import read
    from validate import rows_attention

    rows = rows_attention(DATA)
    assert len(rows) == len(read(DATA / "attention_fwd_bwd_a100_h100.csv"))  # 189
