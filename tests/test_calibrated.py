"""Properties of the default (calibrated, shape-aware) model."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import roofline as rl
from roofline._params.achievable import compute_fractions
from roofline._params.packaged import calibration as data

H100 = "H100 SXM"
dims = st.integers(min_value=1, max_value=1 << 16)


@settings(max_examples=150, deadline=None)
@given(m=dims, k=dims, n=dims, which=st.sampled_from("mkn"),
       step=st.integers(1, 512).map(lambda s: 8 * s))
def test_gemm_time_is_monotone_in_every_dimension(m: int, k: int, n: int, which: str,
                                                  step: int) -> None:
    # Steps of 8 bf16 elements (16 bytes) keep k's and n's TMA alignment: an unaligned GEMM
    # runs a slower (non-TMA) kernel than its aligned neighbours, as cuBLAS does on Hopper
    # (see test_unaligned_gemm_is_slower_than_its_aligned_neighbour).
    small = rl.gemm(m, k, n, "bf16", H100)
    big = rl.gemm(*(v + step if c == which else v for c, v in zip("mkn", (m, k, n), strict=True)),
                  "bf16", H100)
    assert big.time_s >= small.time_s * (1 - 1e-12)


@settings(max_examples=100, deadline=None)
@given(m=dims, k=dims, n=dims, dtype=st.sampled_from(["bf16", "fp8"]))
def test_never_faster_than_the_datasheet_roofline(m: int, k: int, n: int, dtype: str) -> None:
    e = rl.gemm(m, k, n, dtype, H100)
    assert np.isfinite(e.time_s) and e.time_s > 0
    assert e.time_s >= rl.gemm(m, k, n, dtype, H100, efficiency="peak").time_s


def test_large_gemm_runs_at_the_measured_achievable_fraction() -> None:
    # 8192^3 bf16 on H100: the best tile fills its last wave almost completely, so compute
    # runs within a few percent of the achievable rate (never below the 92 % stream-K floor).
    # The GEMM terms scale that rate (compute_scale_16, so the model still meets the measured
    # ceiling) and stretch long kernels by the clock drop under sustained load, which is at
    # most 1 / throttle_fraction (docs/model.md, GEMMs as cuBLAS and torch._grouped_mm run them).
    from roofline._params.gemm import values
    from roofline._params.packaged import terms as terms_data

    v = values(rl.hardware(H100), terms_data("gemm"))
    frac = compute_fractions(rl.hardware(H100))["bf16"] * (v["compute_scale_16"] or 1.0)
    e = rl.gemm(8192, 8192, 8192, "bf16", H100)
    ideal = 2 * 8192**3 / (989.5e12 * frac)
    assert ideal <= e.compute_s <= ideal * 1.03 / (v["throttle_fraction"] or 1.0)
    assert e.compute_s < e.time_s < e.compute_s * 1.02


def test_wave_quantization_steps() -> None:
    # One wave more than fits (133 tiles of 128x256 on 132 SMs) costs more than 132 tiles.
    full = rl.gemm(128 * 132, 8192, 256, "bf16", H100)
    over = rl.gemm(128 * 133, 8192, 256, "bf16", H100)
    assert over.time_s > full.time_s * 1.03


def test_small_streaming_kernels_pay_the_fitted_latency() -> None:
    # A kernel moving less than half an L2 (one of H100's two partitions) does not pay part of
    # the latency: the ramp saving tapers linearly from its full value (no traffic) to 0 there.
    # Timed per call (do_bench), as the latency was fitted; GPU time: tests/test_gpu_timing.py.
    from roofline._params.packaged import terms
    from roofline._params.timing import per_call_timing

    with per_call_timing():
        _fitted_latency(terms("row_ops")["universal"]["small_kernel_ramp_s"])
    # GPU time: the same formula with min(latency, kernel_gap_s + ramp) (host terms' gap)
    gap = terms("host")["terms"]["kernel_gap_s"]
    ramp = terms("row_ops")["universal"]["small_kernel_ramp_s"]
    p = data()["params"]
    half_l2 = 0.5 * float(rl.hardware(H100).l2_bytes or 0.0)
    m = 4096 / (3.35e12 * p["memory_fraction"])
    assert rl.elementwise(1024, hardware=H100).time_s == pytest.approx(
        gap + ramp + m - ramp * (1 - 4096 / half_l2))


def _fitted_latency(ramp: float) -> None:
    p = data()["params"]
    half_l2 = 0.5 * float(rl.hardware(H100).l2_bytes or 0.0)
    e = rl.elementwise(1024, hardware=H100)  # 4 KB: pure latency
    m = 4096 / (3.35e12 * p["memory_fraction"])
    saving = ramp * (1 - 4096 / half_l2)
    assert e.time_s == pytest.approx(p["memory_latency_s"] + m - saving)
    big = rl.elementwise(2**26, hardware=H100)  # 256 MiB: the full latency
    m = 2**28 / (3.35e12 * p["memory_fraction"])
    assert big.time_s == pytest.approx(p["memory_latency_s"] + m)


def test_back_to_back_kernels_hide_part_of_the_latency() -> None:
    # Eager silu(x) * y timed per call: two kernels in one call cost less than two calls of one
    # kernel each (the host launches the second while the first drains).
    from roofline._params.packaged import terms
    from roofline._params.timing import per_call_timing

    follow = terms("row_ops")["universal"]["follow_on_s"]
    n = 2**14

    def chain_and_alone() -> tuple[float, float]:
        chain = rl.elementwise(n, 3, 2, hardware=H100, kernels=2).time_s
        alone = (rl.elementwise(n, 1, 1, hardware=H100)
                 + rl.elementwise(n, 2, 1, hardware=H100)).time_s
        return float(chain), float(alone)

    with per_call_timing():
        chain, alone = chain_and_alone()
    assert follow > 0
    assert chain == pytest.approx(alone - follow, rel=1e-3)
    # GPU time: each kernel spans its own latency, nothing hidden
    chain, alone = chain_and_alone()
    assert chain == pytest.approx(alone, rel=1e-9)


def test_default_model_can_be_swapped_and_restored() -> None:
    calibrated = rl.gemm(4096, 4096, 4096, "bf16", H100).time_s
    rl.set_default_efficiency("peak")
    try:
        assert rl.gemm(4096, 4096, 4096, "bf16", H100).time_s == pytest.approx(
            2 * 4096**3 / 989.5e12)
    finally:
        rl.set_default_efficiency(None)
    assert rl.gemm(4096, 4096, 4096, "bf16", H100).time_s == calibrated
    with pytest.raises(KeyError, match="default"):
        rl.set_default_efficiency("default")
    with pytest.raises(TypeError, match="value"):
        rl.set_default_efficiency(3)  # type: ignore[arg-type]


def test_unmeasured_accelerators_use_their_vendor_median() -> None:
    fr = compute_fractions(rl.hardware("L40S"))
    assert fr["bf16"] == data()["fallback_compute_fraction"]["NVIDIA"]["bf16"]
    assert compute_fractions(rl.hardware("H800")) == compute_fractions(rl.hardware(H100))


@pytest.mark.parametrize("kernels", [0, -1, 1.5, True, "2", 10**7])
def test_elementwise_kernels_must_be_a_positive_count(kernels: object) -> None:
    with pytest.raises(ValueError, match="kernels"):
        rl.elementwise(1024, hardware=H100, kernels=kernels)  # type: ignore[call-overload]
