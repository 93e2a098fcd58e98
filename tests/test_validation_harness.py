"""roofline.validation: reading measurement files, predicting rows, per-family summaries."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

import roofline as rl
from roofline._params import packaged
from roofline.validation import Comparison, compare, read_measurements, summary

DATA = Path(__file__).resolve().parents[1] / "data" / "measurements"

GEMM_ROW = {
    "id": "g-1", "family": "gpu_gemm_bf16", "hardware": "H100 SXM", "op": "gemm",
    "args": {"m": 4096, "k": 4096, "n": 4096, "dtype": "bf16"}, "measured": 2e-4,
}


#: Per-call measurement overhead the GEMM predictor adds (data/terms/gemm.json).
_OVERHEAD = packaged.terms("gemm").get("measurement", {}).get("per_call_overhead_s", 0.0)


def test_compare_uses_the_public_api() -> None:
    (c,) = compare([GEMM_ROW])
    # The GEMM predictor adds the per-call overhead of do_bench timing (not GPU time) to the
    # default model's prediction (roofline/ops/registry/measured/gemm.py)
    expected = rl.gemm(4096, 4096, 4096, dtype="bf16", hardware="H100 SXM").time_s + _OVERHEAD
    assert c.predicted_s == pytest.approx(expected, rel=1e-12)
    assert c.measured_s == 2e-4
    assert c.error == pytest.approx(expected / 2e-4 - 1.0)
    assert c.family == "gpu_gemm_bf16" and c.id == "g-1"


def test_hardware_argument_overrides_the_rows() -> None:
    (c,) = compare([GEMM_ROW], hardware="H200")
    expected = rl.gemm(4096, 4096, 4096, dtype="bf16", hardware="H200").time_s + _OVERHEAD
    assert c.predicted_s == pytest.approx(expected, rel=1e-12)


def test_summary_median_p90_and_bias() -> None:
    # errors +10 %, -20 %, +30 %: |err| median 0.2, signed median +0.1
    rows = [Comparison("f", str(i), "gemm", 1.0, p) for i, p in enumerate((1.1, 0.8, 1.3))]
    s = summary(rows)["f"]
    assert s["rows"] == 3
    assert s["median"] == pytest.approx(0.2)
    assert s["bias"] == pytest.approx(0.1)
    assert 0.2 < s["p90"] <= 0.3


def test_unknown_op_is_skipped_and_reported() -> None:
    skipped: list[tuple[str, str]] = []
    row = {**GEMM_ROW, "op": "teleport", "id": "t-1"}
    assert compare([row], skipped=skipped) == []
    assert skipped == [("t-1", "no model for op 'teleport'")]


def test_errors_are_collected_when_asked() -> None:
    row = {**GEMM_ROW, "args": {"m": 0, "k": 1, "n": 1, "dtype": "bf16"}}
    with pytest.raises(ValueError, match="m must be a positive integer"):
        compare([row])
    errors: list[tuple[str, str]] = []
    assert compare([row], errors=errors) == []
    assert "m must be a positive integer" in errors[0][1]


@pytest.mark.parametrize(
    "line, message",
    [
        ("{not json", "not JSON"),
        ('{"family": "f", "op": "gemm", "args": {}}', "missing measured"),
        ('{"family": "f", "op": "gemm", "args": [], "measured": 1}', "args must be an object"),
        ('{"family": "f", "op": "gemm", "args": {}, "measured": 0}', "positive finite"),
        ('{"family": "f", "op": "gemm", "args": {}, "measured": NaN}', "positive finite"),
        ('{"family": "f", "op": "gemm", "args": {}, "measured": "1e-3"}', "positive finite"),
        ("[1, 2]", "must be a JSON object"),
    ],
)
def test_malformed_files_name_file_and_line(tmp_path: Path, line: str, message: str) -> None:
    path = tmp_path / "m.jsonl"
    path.write_text(json.dumps(GEMM_ROW) + "\n\n" + line + "\n")
    with pytest.raises(ValueError, match=message) as info:
        read_measurements(path)
    assert f"{path}:3" in str(info.value)


def test_missing_file() -> None:
    with pytest.raises(FileNotFoundError):
        read_measurements("/nonexistent/measurements.jsonl")


def test_every_row_of_our_h100_file_is_predicted() -> None:
    path = DATA / "gpu_h100_calibration.jsonl"
    skipped: list[tuple[str, str]] = []
    comparisons = compare(path, skipped=skipped)
    assert not skipped
    assert len({c.id for c in comparisons}) == len(read_measurements(path))
    assert all(math.isfinite(c.predicted_s) and c.predicted_s > 0 for c in comparisons)
