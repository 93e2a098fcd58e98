"""GEMMs as cuBLAS and torch._grouped_mm run them: the default model against our H100 rows.

Bounds are the median / 90th-percentile absolute relative errors the model reached when the
GEMM terms were fitted (benchmarks/fit_gemm.py, docs/model.md), rounded up by about one
point; the noise floor of these measurements is ~2 % median (same machine) and p90 up to 14 %
across machines. Also: the ``scaling=`` argument (hand-derived bytes, ordering, bad input)
and properties of the GEMM terms.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import roofline as rl
from roofline.validation import compare, read_measurements, summary

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "data" / "measurements" / "gpu_h100_calibration.jsonl"

#: family -> (largest median, largest p90) absolute relative error of the default model.
BOUNDS = {
    "gpu_gemm_bf16": (0.09, 0.18),
    "gpu_gemm_fp32": (0.05, 0.17),
    "gpu_gemm_tf32": (0.06, 0.07),
    "gpu_gemm_fp8_tensorwise": (0.075, 0.15),
    "gpu_gemm_fp8_rowwise": (0.06, 0.19),
    "gpu_grouped_gemm_bf16": (0.05, 0.14),
    "gpu_grouped_gemm_fp8": (0.05, 0.13),
    "gpu_grouped_gemm_counts": (0.03, 0.05),
    "gpu_noise_gemm_rep0": (0.07, 0.17),
    "gpu_noise_gemm_rep1": (0.09, 0.16),
}


@pytest.fixture(scope="module")
def table() -> dict[str, dict[str, float]]:
    if not DATA.exists():
        pytest.fail(f"measurement data not found at {DATA}")
    rows = [r for r in read_measurements(DATA) if r["family"] in BOUNDS]
    return summary(compare(rows))


@pytest.mark.validation
@pytest.mark.parametrize("family", sorted(BOUNDS))
def test_family_error_within_bound(table: dict[str, dict[str, float]], family: str) -> None:
    median, p90 = BOUNDS[family]
    assert table[family]["median"] <= median
    assert table[family]["p90"] <= p90


def test_rowwise_adds_scale_bytes() -> None:
    # fp8 e4m3 in, bf16 out: A 64*256, B 256*128, C 64*128*2; rowwise adds 4*(64 + 128)
    plain = rl.gemm(64, 256, 128, "fp8", "H100 SXM")
    tensorwise = rl.gemm(64, 256, 128, "fp8", "H100 SXM", scaling="tensorwise")
    rowwise = rl.gemm(64, 256, 128, "fp8", "H100 SXM", scaling="rowwise")
    assert plain.bytes == tensorwise.bytes == 64 * 256 + 256 * 128 + 64 * 128 * 2
    assert rowwise.bytes == plain.bytes + 4 * (64 + 128)
    assert rowwise.flops == plain.flops == 2 * 64 * 256 * 128


def test_rowwise_never_faster_than_tensorwise() -> None:
    m = np.array([1, 16, 128, 1024, 4096, 16384])
    for k, n in ((4096, 4096), (7168, 2112), (8192, 28672)):
        t = rl.gemm(m, k, n, "fp8", "H100 SXM", scaling="tensorwise").time_s
        r = rl.gemm(m, k, n, "fp8", "H100 SXM", scaling="rowwise").time_s
        assert np.all(r >= t)


def test_scaled_grouped_rowwise_bytes() -> None:
    # 2 groups of 64 rows, k=256, n=128: rowwise adds 4*(64 + 128) per group
    plain = rl.grouped_gemm(64, 256, 128, groups=2, dtype="fp8", hardware="H100 SXM")
    row = rl.grouped_gemm(64, 256, 128, groups=2, dtype="fp8", hardware="H100 SXM",
                          scaling="rowwise")
    assert row.bytes == plain.bytes + 2 * 4 * (64 + 128)


def test_scaling_leaves_plain_presets_alone() -> None:
    # torchao's conventions ignore rowwise scales (bit-for-bit torchao)
    a = rl.gemm(1024, 4096, 4096, "fp8", "H100 SXM", efficiency="torchao")
    b = rl.gemm(1024, 4096, 4096, "fp8", "H100 SXM", efficiency="torchao", scaling="rowwise")
    assert a.bytes == b.bytes and a.time_s == b.time_s


@pytest.mark.parametrize(
    ("kwargs", "exc", "text"),
    [
        ({"dtype": "bf16", "scaling": "rowwise"}, ValueError, "needs 8-bit inputs"),
        ({"dtype": "fp8", "scaling": "rowwize"}, KeyError, "did you mean 'rowwise'"),
        ({"dtype": "fp8", "scaling": 1}, TypeError, "scaling must be a string"),
    ],
)
def test_scaling_bad_input(kwargs: dict, exc: type, text: str) -> None:
    with pytest.raises(exc, match=text):
        rl.gemm(64, 64, 64, hardware="H100 SXM", **kwargs)
    with pytest.raises(exc, match=text):
        rl.grouped_gemm(64, 64, 64, groups=2, hardware="H100 SXM", **kwargs)


def test_unaligned_gemm_is_slower_than_its_aligned_neighbour() -> None:
    # k = 579 bf16 elements is not a multiple of 16 bytes: no TMA, a slower kernel (cuBLAS on
    # Hopper measured 25 us for 527x579x1462 against ~9 us for an aligned neighbour)
    unaligned = rl.gemm(527, 579, 1462, "bf16", "H100 SXM").time_s
    aligned = rl.gemm(527, 584, 1464, "bf16", "H100 SXM").time_s
    assert unaligned > 1.5 * aligned


def test_grouped_cluster_padding() -> None:
    # torch's fp8 grouped kernel tiles 256 x 128 in 2 x 2 clusters when k, n >= 2048: groups of
    # 256 rows compute like groups of 512 (half of each cluster idle), 512-row groups do not
    g256 = rl.grouped_gemm(256, 7168, 4096, groups=8, dtype="fp8", hardware="H100 SXM",
                           scaling="rowwise").time_s
    g512 = rl.grouped_gemm(512, 7168, 4096, groups=8, dtype="fp8", hardware="H100 SXM",
                           scaling="rowwise").time_s
    assert g256 == pytest.approx(g512, rel=0.05)


def test_terms_transfer_to_other_gpus() -> None:
    # every accelerator with SMs gets finite, roofline-respecting predictions
    for name in ("H200", "A100 SXM 80GB", "B200", "MI300X", "H20"):
        e = rl.gemm([1, 128, 4096], 4096, 4096, "bf16", name)
        peak = rl.gemm([1, 128, 4096], 4096, 4096, "bf16", name, efficiency="peak")
        assert np.all(np.isfinite(e.time_s)) and np.all(e.time_s >= peak.time_s)
