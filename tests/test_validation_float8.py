"""The default model against our H100 float8 measurements (gpu_h100_calibration.jsonl).

Pinned: the median absolute relative error per family (benchmarks/validate.py's table) and,
independent of the GEMM model, of the cast time of each training step (the measured step minus
its nvjet GEMMs, the gradient-accumulation adds and memsets, against ``fp8_overhead_s``).
Tolerances sit just above what the model reached (2026-11-23). The standalone cast families are
timed by do_bench around a compiled call repeated back to back: their small shapes are bound by
host time, so they are compared with ``rl.float8.cast(...).wall_s`` (host model: region entry +
kernel launches against GPU time); a GPU-bound subset pins ``time_s`` tightly.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest

import roofline as rl
from roofline.validation import compare, summary

pytestmark = pytest.mark.validation

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "data" / "measurements" / "gpu_h100_calibration.jsonl"

#: family -> largest allowed median absolute relative error of the default model.
FAMILY_MEDIAN_BOUND = {
    # whole steps, after the GEMM model's merge (4.5 / 6.3 / 1.8 / 5.3 %)
    "gpu_float8_linear_kernels (tensorwise)": 0.05,
    "gpu_float8_linear_kernels (rowwise)": 0.07,
    "gpu_float8_linear_kernels (rowwise_with_gw_hp)": 0.025,
    "gpu_float8_linear_kernels (bf16)": 0.06,  # the bf16 GEMMs alone (GEMM model's error)
    # do_bench wall of the compiled steps: looped_wall_time over the step's kernels and the two
    # gradient-accumulation adds, do_bench's L2 flush as the head kernel (7.3 %)
    "gpu_float8_linear wall_s (all recipes)": 0.08,
    # wall_s: max(GPU, compiled_region_s + kernels x compiled_launch_s) (6.1 / 25.9 %)
    "gpu_cast_fp8_rowwise": 0.07,
    "gpu_cast_fp8_tensorwise": 0.27,  # measured 76-135 us per call against 72 us of host
}

#: recipe -> largest allowed median |error| of the cast time per training step.
# GPU time (profiler kernel sums); the cast terms were fitted with the per-call streaming
# latency (refitting under GPU time: data/measurements/README.md), so rowwise_with_gw_hp
# moved from 1.4 % to 6.4 %
CAST_MEDIAN_BOUND = {"tensorwise": 0.14, "rowwise": 0.15, "rowwise_with_gw_hp": 0.07}


def _rows() -> list[dict]:
    if not DATA.is_file():
        pytest.fail(f"measurement data not found at {DATA}")
    with open(DATA) as f:
        return [json.loads(line) for line in f]


@pytest.fixture(scope="module")
def table() -> dict[str, dict[str, float]]:
    rows = [r for r in _rows() if r["family"].startswith(("gpu_cast_fp8", "gpu_float8_linear"))]
    return summary(compare(rows))


@pytest.mark.parametrize("family", sorted(FAMILY_MEDIAN_BOUND))
def test_family_median(table: dict[str, dict[str, float]], family: str) -> None:
    assert table[family]["median"] <= FAMILY_MEDIAN_BOUND[family], table[family]


def test_float8_wall_p90(table: dict[str, dict[str, float]]) -> None:
    # the host-bound 4096^3 steps: bf16 (cheaper regions than float8's, +48 %) and rowwise
    # (its GPU time is under-predicted, -21 %) are the two worst rows; the rest within 18 %
    assert table["gpu_float8_linear wall_s (all recipes)"]["p90"] <= 0.20


def test_gpu_bound_rowwise_casts() -> None:
    # casts of >= 32 M elements run far longer than the compiled call's host time
    err = [rl.float8.cast(r["args"]["rows"], r["args"]["cols"], r["args"]["granularity"],
                          "H100 SXM").time_s / r["measured"] - 1.0
           for r in _rows() if r["family"] == "gpu_cast_fp8_rowwise"
           and r["args"]["rows"] * r["args"]["cols"] >= 32 * 2**20]
    assert len(err) >= 2
    assert float(np.median(np.abs(err))) <= 0.08, err


def test_cast_wall_is_host_bound_when_small() -> None:
    # 1024 x 1024 tensorwise: 3 kernels of a few us each; the call costs its host time,
    # compiled_region_s + 3 x compiled_launch_s (about 20 + 3 x 17 = 72 us), not its GPU time
    e = rl.float8.cast(1024, 1024, "tensorwise", "H100 SXM")
    assert e.wall_s > 3 * e.time_s
    big = rl.float8.cast(16384, 16384, "rowwise", "H100 SXM")
    assert big.wall_s == pytest.approx(big.time_s)  # GPU-bound: wall = GPU time
    peak = rl.float8.cast(1024, 1024, "tensorwise", "H100 SXM", efficiency="peak")
    assert peak.wall_s == pytest.approx(peak.time_s, rel=0.5)  # no host terms in presets


@pytest.mark.parametrize("recipe", sorted(CAST_MEDIAN_BOUND))
def test_cast_time_per_step(recipe: str) -> None:
    if not DATA.is_file():
        pytest.fail(f"measurement data not found at {DATA}")
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from fit_cast import cast_rows

    rows = [r for r in cast_rows(DATA.parent) if r["recipe"] == recipe]
    assert len(rows) >= 3
    err = [rl.float8.linear(r["m"], r["k"], r["n"], recipe, r["hardware"]).fp8_overhead_s
           / r["cast_s"] - 1.0 for r in rows]
    assert float(np.median(np.abs(err))) <= CAST_MEDIAN_BOUND[recipe], err


def test_do_bench_wall_of_the_measured_steps() -> None:
    from roofline.ops.registry.measured.float8 import do_bench_step, do_bench_wall

    def row(m: int, k: int, n: int) -> dict:
        return {"args": {"m": m, "k": k, "n": n, "recipe": "tensorwise"}}

    # 4096^3: 13 modeled kernels (10 casts, 3 GEMMs) + the two gradient adds; the flush is a
    # 256 MiB write (~97 us on H100)
    times, flush, t = do_bench_step(row(4096, 4096, 4096), "H100 SXM", "default")
    assert len(times) == 15
    assert 80e-6 < flush < 110e-6
    # host-bound: the host period (two region entries, 15 launches, the flush's own launch)
    # less the flush that hid it
    period = 2 * t.compiled_call_s + 15 * t.compiled_launch_s + t.eager_launch_s
    assert sum(times) < period - flush
    assert do_bench_wall(times, flush, t) == pytest.approx(period - flush)
    # 16384 x 14336 x 4096: GPU-bound, the wall is the kernels' time
    times, flush, t = do_bench_step(row(16384, 14336, 4096), "H100 SXM", "default")
    assert do_bench_wall(times, flush, t) == pytest.approx(sum(times), rel=1e-3)
