"""roofline._params: the packaged parameters -> core structs; formulas in the C++ core."""

from __future__ import annotations

import dataclasses

import pytest

import roofline as rl
from roofline import _core
from roofline._params.resolve import resolve_cached
from roofline._params.shape_aware import shared_core_objects
from roofline.calibration import Profile
from roofline.hardware import Hardware


def _profile(name: str, fitted: dict[str, object]) -> Profile:
    hw = rl.hardware(name)
    fields = {f.name: getattr(hw, f.name) for f in dataclasses.fields(Hardware)}
    return Profile(**fields, fitted=fitted)


def test_gemm_throttle_fraction() -> None:
    ref = 989.5e12 / 700.0
    assert _core.gemm_throttle_fraction(0.87, ref, 989.5e12, 700.0) == 1.0 - 0.13
    assert _core.gemm_throttle_fraction(0.0, ref, 989.5e12, 700.0) == 0.0  # not fitted
    assert _core.gemm_throttle_fraction(0.87, ref, 989.5e12, 0.0) == 0.0  # no board power
    assert _core.gemm_throttle_fraction(0.1, ref, 4 * 989.5e12, 700.0) == 0.5  # floor


def test_sustained_compute_s() -> None:
    # f = 0.8, tau = 2 ms, a GEMM of 2 ms at full clock: run alone its clock is
    # 0.8 + 0.2 * 2 / (2 + 2) = 0.9, so it was priced at 2 / 0.9 ms; under continuous load the
    # clock is 0.8: 2 / 0.8 = 2.5 ms
    alone = 2e-3 / 0.9
    assert abs(_core.sustained_compute_s(alone, 0.8, 2e-3) - 2.5e-3) < 1e-15
    assert _core.sustained_compute_s(alone, 1.0, 2e-3) == alone  # no clock drop
    assert _core.sustained_compute_s(alone, 0.8, 0.0) == alone  # no time constant
    # the time keeps its fixed 4 us per call; memory 0: the p-norm is the compute term
    t = _core.sustained_gemm_time_s(alone + 4e-6, alone, 0.0, 0.8, 2e-3, 4.0)
    assert abs(t - (2.5e-3 + 4e-6)) < 1e-15
    # compute and memory equal (p = 4): 2^(1/4) x the larger term, both times
    t2 = _core.sustained_gemm_time_s(2 ** 0.25 * alone, alone, alone, 0.8, 2e-3, 4.0)
    assert abs(t2 - (2.5e-3 ** 4 + alone ** 4) ** 0.25) < 1e-15


def test_blackwell_cudnn_softmax_in_h100_bf16_units() -> None:
    from roofline._params import packaged
    from roofline._params.attention import _softmax_scale, core_terms

    doc = packaged.terms("attention")
    per_score = packaged.calibration()["params"]["attention_softmax_flops"]  # 130
    b200 = rl.hardware("B200")
    # B200: (2250e12 x 0.8122 / (148 x 1.965e9)) / (989.5e12 x 0.8522 / (132 x 1.83e9)) = 1.80
    # (0.8119 -> 0.8122 with the B200's HBM peak at its 7680-bit bus, hardware-notes §41)
    assert abs(_softmax_scale(b200) - 1.8001) < 1e-3
    assert core_terms(b200, doc).cudnn.softmax_flops == per_score * _softmax_scale(b200)
    assert core_terms(rl.hardware("H100 SXM"), doc).cudnn.softmax_flops == 0.0  # unchanged
    # Blackwell Ultra doubles the MUFU.EX2 rate per SM and clock: half the exposed softmax
    for name in ("B300", "GB300"):
        hw = rl.hardware(name)
        assert core_terms(hw, doc).cudnn.softmax_flops == pytest.approx(
            per_score * _softmax_scale(hw) / 2.0)


def test_gb300_takes_b300s_measured_rate() -> None:
    from roofline._params.achievable import compute_fractions

    b300, gb300 = compute_fractions(rl.hardware("B300")), compute_fractions(rl.hardware("GB300"))
    # same die: the B300's measured rate over the GB300's own peak (2250 / 2500, 4500 / 5000)
    assert gb300["bf16"] == pytest.approx(b300["bf16"] * 2250 / 2500)
    assert gb300["fp8"] == pytest.approx(b300["fp8"] * 4500 / 5000)
    assert gb300["fp4"] == gb300["fp8"]  # fp4 borrows fp8's fraction, as everywhere


def test_flash_fraction_per_sm_clock() -> None:
    # the same GPU as the reference keeps the reference's fraction
    assert _core.flash_fraction_per_sm_clock(0.6, 1e15, 0.8, 132, 2e9, 1e15, 0.8, 132, 2e9) \
        == 0.6 * 8e14 / (132 * 2e9) * 132 * 2e9 / 8e14
    # twice the SMs at the same GEMM rate: twice the fraction; unknown SMs: the reference's
    f2 = _core.flash_fraction_per_sm_clock(0.3, 1e15, 1.0, 100, 1e9, 1e15, 1.0, 200, 1e9)
    assert abs(f2 - 0.6) < 1e-15
    assert _core.flash_fraction_per_sm_clock(0.3, 1e15, 1.0, 100, 1e9, 1e15, 1.0, 0, 1e9) == 0.3


def test_per_sm_bandwidth() -> None:
    assert _core.per_sm_bandwidth(0.5, 3.35e12, 132) == 0.5 * 3.35e12 / 132
    assert _core.per_sm_bandwidth(0.5, 3.35e12, 0) == 0.0


def test_a_profile_patch_is_seen_through_the_value_keyed_caches() -> None:
    base = rl.gemm(64, 64, 64, hardware="H100 SXM").time_s
    slow = _profile("H100 SXM", {"gemm": {"terms": {"latency_s": 40e-6}}})
    assert rl.gemm(64, 64, 64, hardware=slow).time_s > base + 30e-6
    # an equal Profile (a fresh object) hits the same cached structs
    again = _profile("H100 SXM", {"gemm": {"terms": {"latency_s": 40e-6}}})
    assert shared_core_objects(again) is shared_core_objects(slow)
    assert resolve_cached(again, "default")[1] is resolve_cached(slow, "default")[1]
    assert resolve_cached(again, "default")[0] is again
    assert rl.gemm(64, 64, 64, hardware="H100 SXM").time_s == base
