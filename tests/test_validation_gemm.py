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


def _gemm_time(m: float, k: float, n: float, reduce_s: float | None) -> float:
    """GPU time of a bf16 GEMM on the H100 with the packaged terms (split-K reduction time
    ``reduce_s`` instead of the packaged one where given)."""
    from roofline import _core
    from roofline._dtypes import DTYPES
    from roofline._params.shape_aware import core_objects
    from roofline.hardware import hardware

    chw, ceff = core_objects(hardware("H100 SXM"))
    if reduce_s is not None:
        g = ceff.gemm
        g.split_reduce_s = reduce_s
        ceff.gemm = g
    one = np.ones(1)
    dt = DTYPES["bf16"]
    cols = _core.gemm_sweep(one * m, one * k, one * n, one, dt, dt, dt, False, chw, ceff, 1,
                            _core.Scaling.none)
    return float(cols[0][0])


def test_split_k_gemm_pays_the_reduction_kernel() -> None:
    # cuBLAS's split-K GEMMs launch splitKreduce_kernel after the main kernel (H200 decode
    # traces): its fixed time is a small streaming kernel's GPU time, min(memory_latency_s,
    # kernel_gap_s + small_kernel_ramp_s) = min(6.25, 1.4187 + 1.25) us = 2.6687 us on the H100.
    from roofline import _core
    from roofline._params.shape_aware import core_objects
    from roofline.hardware import hardware

    _, ceff = core_objects(hardware("H100 SXM"))
    assert ceff.gemm.split_reduce_s == pytest.approx(
        _core.gpu_streaming_latency_s(6.25e-6, 1.4187e-6, 1.25e-6), rel=1e-12)
    assert ceff.gemm.split_reduce_s == pytest.approx(2.6687e-6, rel=1e-12)
    # A decode projection whose weight streams through ceil(4096 / 64) = 64 output tiles, fewer
    # than the 132 SMs (m = 16, k = 14336: Llama-3-8B's down projection) still splits K with
    # the reduction and pays it once, exactly.
    reduce_s = 2.6687e-6
    assert (_gemm_time(16, 14336, 4096, None) - _gemm_time(16, 14336, 4096, 0.0)
            == pytest.approx(reduce_s, rel=1e-9))
    # A grid of full waves never splits: no reduction kernel.
    assert _gemm_time(4096, 4096, 4096, None) == _gemm_time(4096, 4096, 4096, 0.0)
    for m, k, n in ((1, 4096, 4096), (16, 14336, 4096), (64, 7168, 2112), (256, 7168, 2112),
                    (16, 1024, 1024), (256, 8192, 8192), (1, 8192, 28672)):
        with_reduce, without = _gemm_time(m, k, n, None), _gemm_time(m, k, n, 0.0)
        # The library weighs the reduction when it picks a split: it never costs more than the
        # reduction itself, and never less than a free one.
        assert without <= with_reduce <= without + reduce_s * (1 + 1e-12)
        # A reduction too slow to pay leaves the unsplit kernel: at most the time with it.
        assert _gemm_time(m, k, n, 1.0) >= with_reduce
