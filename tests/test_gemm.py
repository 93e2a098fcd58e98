"""rl.gemm and the Estimate it returns, checked against hand-derived numbers.

Every expected value is derived here from the datasheet numbers of the hardware database,
with the arithmetic in the comments, and never read back from the code under test.

H100 SXM (hardware.json): bf16 989.5e12 FLOP/s, fp8 = int8 1979e12 FLOP/s, 3.35e12 B/s.
B200: bf16 2.25e15, fp8 4.5e15, fp4 9e15 FLOP/s, 7.67232e12 B/s (7680-bit bus x 3996 MHz).
A100 SXM 80GB has no fp8 peak.

Presets: "default" and "torchao" (on a roofline-table entry) take 78 % of the peak, 92 % of
the bandwidth and a 2 us floor per kernel; "peak" is the plain datasheet roofline.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Iterator
from typing import Any

import numpy as np
import pandas as pd
import pytest

import roofline as rl


@pytest.fixture(autouse=True)
def _constant_default_model() -> Iterator[None]:
    """These tests derive numbers by hand for the constant model (78 % / 92 % / 2 µs, exact
    bytes), so they pin ``efficiency="default"`` to it; the calibrated default model is
    checked in tests/test_validation.py and tests/test_calibrated.py."""
    rl.set_default_efficiency("constant")
    yield
    rl.set_default_efficiency(None)


try:  # imported before the fixture below hides torch from hardware detection
    import torch as _torch

    torch: Any = _torch
except ImportError:  # pragma: no cover
    torch = None

H100_BF16 = 989.5e12
H100_FP8 = 1979e12
H100_INT8 = 1979e12
H100_BW = 3.35e12
B200_FP4 = 9e15
B200_FP8 = 4.5e15
# The B200's HBM peak as the silicon runs it: 7680-bit bus / 8 x 3996 MHz x 2 (data/hardware.csv,
# hardware-notes section 41; the vendor's 8.0 TB/s assumed the full 8192-bit bus).
B200_BW = 7680 / 8 * 3.996e9 * 2
CF, MF, FLOOR = 0.78, 0.92, 2e-6

#: Achievable rates under the default preset on H100 SXM.
H100_BF16_ACH = H100_BF16 * CF  # 989.5e12*0.78 = 7.7181e14 FLOP/s
H100_FP8_ACH = H100_FP8 * CF  # 1979e12*0.78 = 1.54362e15 FLOP/s
H100_BW_ACH = H100_BW * MF  # 3.35e12*0.92 = 3.082e12 B/s

REL = 1e-12


def approx(x: Any) -> Any:
    return pytest.approx(x, rel=REL, abs=0)


def expected_time(flops: float, nbytes: float, peak: float, bw: float, floor: float) -> float:
    """The roofline formula written out independently: max(compute, memory, floor)."""
    return max(flops / peak, nbytes / bw, floor)


@pytest.fixture(autouse=True)
def _no_default_hardware(monkeypatch: pytest.MonkeyPatch) -> Any:
    """No default hardware, no ROOFLINE_HARDWARE and no torch GPU detection in these tests."""
    monkeypatch.delenv("ROOFLINE_HARDWARE", raising=False)
    monkeypatch.setitem(sys.modules, "torch", None)  # hardware() sees "torch not importable"
    rl.set_default_hardware(None)
    yield
    rl.set_default_hardware(None)


# --------------------------------------------------------------------- bf16, three presets


def test_bf16_4096_cube_default_preset() -> None:
    e = rl.gemm(4096, 4096, 4096, "bf16", "H100 SXM")
    flops = 2 * 4096 * 4096 * 4096  # = 137438953472 FLOPs
    nbytes = (4096 * 4096 + 4096 * 4096 + 4096 * 4096) * 2  # (m*k + k*n + m*n)*2 = 100663296 B
    assert flops == 137438953472 and nbytes == 100663296
    compute = flops / H100_BF16_ACH  # 137438953472 / 7.7181e14 = 1.78074e-4 s
    memory = nbytes / H100_BW_ACH  # 100663296 / 3.082e12 = 3.26617e-5 s
    assert e.flops == flops
    assert e.bytes == nbytes
    assert e.compute_s == approx(compute)
    assert e.memory_s == approx(memory)
    assert e.time_s == approx(expected_time(flops, nbytes, H100_BF16_ACH, H100_BW_ACH, FLOOR))
    assert abs(e.time_s - 1.78074e-4) < 1e-9
    assert e.overhead_s == 0.0
    assert e.bound == "compute"
    assert e.intensity == approx(flops / nbytes)  # 137438953472 / 100663296 = 1365.33 FLOP/B
    assert e.intensity == approx(4096 / 3)  # square bf16: 2x^3 / 6x^2 = x/3


def test_bf16_peak_preset_is_the_datasheet_roofline() -> None:
    e = rl.gemm(4096, 4096, 4096, "bf16", "H100 SXM", efficiency="peak")
    # 137438953472 / 989.5e12 = 1.388974e-4 s; memory 100663296 / 3.35e12 = 3.00487e-5 s
    assert e.compute_s == approx(137438953472 / 989.5e12)
    assert e.memory_s == approx(100663296 / 3.35e12)
    assert e.time_s == approx(137438953472 / 989.5e12)
    assert abs(e.time_s - 1.388974e-4) < 1e-9
    # a tiny GEMM has no floor under "peak": 2*8*8*8 = 1024 FLOPs, 3*64*2 = 384 B
    tiny = rl.gemm(8, 8, 8, "bf16", "H100 SXM", efficiency="peak")
    assert tiny.time_s == approx(max(1024 / 989.5e12, 384 / 3.35e12))  # = 1.14627e-10 s
    assert tiny.overhead_s == 0.0
    assert tiny.bound == "memory"


def test_torchao_preset_on_a_roofline_entry_equals_default_for_bf16() -> None:
    # Same constants (78 % / 92 % / 2 us) and no block scales in bf16: identical numbers.
    for m, k, n in [(4096, 4096, 4096), (16, 8192, 8192), (100, 100, 100)]:
        d = rl.gemm(m, k, n, "bf16", "H100 SXM")
        t = rl.gemm(m, k, n, "bf16", "H100 SXM", efficiency="torchao")
        assert (t.time_s, t.compute_s, t.memory_s, t.bytes) == (
            d.time_s, d.compute_s, d.memory_s, d.bytes
        )


def test_torchao_preset_uses_the_torchao_tables_own_fractions() -> None:
    # torchao's table gives 'NVIDIA B300 SXM6 AC' 82 % compute and 84 % memory efficiency.
    hw = rl.hardware("NVIDIA B300 SXM6 AC", table="torchao")
    e = rl.gemm(8192, 8192, 8192, "bf16", hw, efficiency="torchao")
    flops = 2 * 8192**3  # = 1099511627776
    assert e.compute_s == approx(flops / (2.25e15 * 0.82))  # = 5.95941e-4 s
    assert e.memory_s == approx(3 * 8192 * 8192 * 2 / (8e12 * 0.84))  # 402653184 B -> 5.99186e-5
    # the same hardware under the default preset: 78 % / 92 %
    d = rl.gemm(8192, 8192, 8192, "bf16", hw)
    assert d.compute_s == approx(flops / (2.25e15 * 0.78))


def test_small_gemm_is_overhead_bound_at_the_floor() -> None:
    e = rl.gemm(128, 128, 128, "bf16", "H100 SXM")
    flops = 2 * 128**3  # = 4194304
    nbytes = 3 * 128 * 128 * 2  # = 98304
    compute = flops / H100_BF16_ACH  # = 5.4344e-9 s
    memory = nbytes / H100_BW_ACH  # = 3.1896e-8 s
    assert e.time_s == FLOOR
    assert e.overhead_s == approx(FLOOR - max(compute, memory))  # 2e-6 - 3.1896e-8
    assert e.bound == "overhead"


def test_custom_efficiency() -> None:
    eff = rl.Efficiency(compute_fraction=0.5, memory_fraction=0.25, kernel_floor_s=1e-5)
    e = rl.gemm(2048, 2048, 2048, "bf16", "H100 SXM", efficiency=eff)
    flops, nbytes = 2 * 2048**3, 3 * 2048**2 * 2  # 17179869184 FLOPs, 25165824 B
    assert e.compute_s == approx(flops / (989.5e12 * 0.5))  # = 3.47243e-5 s
    assert e.memory_s == approx(nbytes / (3.35e12 * 0.25))  # = 3.00487e-5 s
    assert e.time_s == approx(flops / (989.5e12 * 0.5))  # compute-bound: 3.47243e-5 s
    small = rl.gemm(64, 64, 64, "bf16", "H100 SXM", efficiency=eff)
    assert small.time_s == 1e-5


# ------------------------------------------------------------------ low-precision formats


def test_fp8_gemm_output_is_bf16() -> None:
    m, k, n = 4096, 8192, 2048
    e = rl.gemm(m, k, n, "fp8", "H100 SXM")
    # A, B in fp8 (1 B), C in bf16 (2 B): 4096*8192 + 8192*2048 + 2*4096*2048
    nbytes = m * k * 1 + k * n * 1 + m * n * 2  # = 33554432 + 16777216 + 16777216 = 67108864
    flops = 2 * m * k * n  # = 137438953472
    assert e.bytes == nbytes == 67108864
    assert e.compute_s == approx(flops / H100_FP8_ACH)  # = 8.90368e-5 s
    assert e.time_s == approx(expected_time(flops, nbytes, H100_FP8_ACH, H100_BW_ACH, FLOOR))
    # e4m3 and e5m2 move the same bytes; out_dtype="fp8" halves the output bytes
    assert rl.gemm(m, k, n, "e5m2", "H100 SXM").bytes == nbytes
    assert rl.gemm(m, k, n, "fp8", "H100 SXM", out_dtype="fp8").bytes == m * k + k * n + m * n
    assert rl.gemm(m, k, n, "fp8", "H100 SXM", out_dtype="fp32").bytes == (
        m * k + k * n + 4 * m * n
    )


def test_fp8_runs_twice_as_fast_as_bf16_when_compute_bound() -> None:
    bf = rl.gemm(8192, 8192, 8192, "bf16", "H100 SXM")
    f8 = rl.gemm(8192, 8192, 8192, "fp8", "H100 SXM")
    assert bf.bound == f8.bound == "compute"
    assert bf.time_s / f8.time_s == approx(1979e12 / 989.5e12)  # = 2.0


@pytest.mark.parametrize(("m", "k", "n"), [(1000, 100, 300), (4096, 4096, 4096), (1, 33, 1)])
def test_mxfp8_scale_bytes(m: int, k: int, n: int) -> None:
    e = rl.gemm(m, k, n, "mxfp8", "H100 SXM")
    # one e8m0 byte per 32 elements along K, rounded up per row of A and per column of B
    scales = m * math.ceil(k / 32) + n * math.ceil(k / 32)
    # (1000, 100, 300): 1000*4 + 300*4 = 5200 B of scales
    nbytes = m * k + k * n + scales + 2 * m * n
    assert e.bytes == nbytes
    assert e.compute_s == approx(2 * m * k * n / H100_FP8_ACH)  # MX fp8 runs at the fp8 peak


def test_mxfp8_worked_example() -> None:
    e = rl.gemm(1000, 100, 300, "mxfp8", "H100 SXM")
    # payload 1000*100 + 100*300 = 130000; scales 1000*ceil(100/32) + 300*ceil(100/32) = 5200;
    # output 1000*300*2 = 600000 -> 735200 B
    assert e.bytes == 735200
    # torchao's convention: floor((M*K + K*N) / 32) scale bytes = floor(130000/32) = 4062
    t = rl.gemm(1000, 100, 300, "mxfp8", "H100 SXM", efficiency="torchao")
    assert t.bytes == 130000 + 4062 + 600000  # = 734062


def test_nvfp4_half_byte_payload_and_one_scale_byte_per_16() -> None:
    m, k, n = 4096, 4100, 2048
    e = rl.gemm(m, k, n, "nvfp4", "B200")
    # payload 0.5 B per element; one e4m3 scale byte per 16 elements along K, rounded up:
    scales = m * math.ceil(k / 16) + n * math.ceil(k / 16)  # 257*(4096 + 2048) = 1579008
    assert scales == 1579008
    # 0.5*(4096*4100 + 4100*2048) + 1579008 + 2*4096*2048 = 12595200 + 1579008 + 16777216
    nbytes = 0.5 * (m * k + k * n) + scales + 2 * m * n
    assert e.bytes == nbytes == 30951424
    assert e.compute_s == approx(2 * m * k * n / (B200_FP4 * CF))  # fp4 peak
    assert e.memory_s == approx(nbytes / (B200_BW * MF))


def test_mxfp4_scales_per_32() -> None:
    m, k, n = 512, 1000, 256
    e = rl.gemm(m, k, n, "mxfp4", "B200")
    # 0.5*(512*1000 + 1000*256) + (512 + 256)*ceil(1000/32) + 2*512*256
    nbytes = 0.5 * (m * k + k * n) + (m + n) * math.ceil(k / 32) + 2 * m * n
    assert nbytes == 384000 + 768 * 32 + 262144  # = 670720
    assert e.bytes == nbytes


def test_fp8_blockwise_scales() -> None:
    m, k, n = 1000, 300, 200
    # 1x128 blocks on both operands: fp32 scale per 128 elements of a row along K
    e1 = rl.gemm(m, k, n, "fp8_block_1x128", "H100 SXM")
    scales1 = 4 * (m * math.ceil(k / 128) + n * math.ceil(k / 128))  # 4*(1000*3 + 200*3) = 14400
    assert e1.bytes == m * k + k * n + scales1 + 2 * m * n  # 300000+60000+14400+400000 = 774400
    assert e1.bytes == 774400
    # 128x128 blocks: ceil(rows/128)*ceil(K/128) fp32 scales per operand
    e2 = rl.gemm(m, k, n, "fp8_block_128x128", "H100 SXM")
    kb = math.ceil(k / 128)
    scales2 = 4 * (math.ceil(m / 128) * kb + math.ceil(n / 128) * kb)
    assert scales2 == 4 * (8 * 3 + 2 * 3)  # = 120
    assert e2.bytes == m * k + k * n + scales2 + 2 * m * n  # = 760120
    # blockwise fp8 computes at the fp8 peak
    assert e1.compute_s == approx(2 * m * k * n / H100_FP8_ACH)


def test_int8_accumulates_into_int32() -> None:
    m, k, n = 2048, 4096, 1024
    e = rl.gemm(m, k, n, "int8", "H100 SXM")
    # int8 inputs (1 B), int32 output (4 B): 2048*4096 + 4096*1024 + 4*2048*1024
    assert e.bytes == m * k + k * n + 4 * m * n == 20971520
    assert e.compute_s == approx(2 * m * k * n / (H100_INT8 * CF))  # at the int8 peak
    # an explicit out_dtype wins
    assert rl.gemm(m, k, n, "int8", "H100 SXM", out_dtype="bf16").bytes == (
        m * k + k * n + 2 * m * n
    )


def test_default_output_formats() -> None:
    # fp32 / tf32 write fp32, fp16 writes fp16, int32 writes int32 ("else the input format")
    assert rl.gemm(10, 20, 30, "fp32", "H100 SXM").bytes == 4 * (200 + 600 + 300)
    assert rl.gemm(10, 20, 30, "tf32", "H100 SXM").bytes == 4 * (200 + 600 + 300)
    assert rl.gemm(10, 20, 30, "fp16", "H100 SXM").bytes == 2 * (200 + 600 + 300)
    assert rl.gemm(10, 20, 30, "int32", "H100 SXM").bytes == 4 * (200 + 600 + 300)
    # tf32 computes at the tf32 peak (494.5e12 on H100 SXM)
    e = rl.gemm(4096, 4096, 4096, "tf32", "H100 SXM", efficiency="peak")
    assert e.compute_s == approx(2 * 4096**3 / 494.5e12)


@pytest.mark.skipif(torch is None, reason="torch not installed")
def test_torch_dtypes_are_matched_by_name() -> None:
    assert torch is not None
    for t, name in [(torch.bfloat16, "bf16"), (torch.float8_e4m3fn, "fp8"), (torch.int8, "int8")]:
        assert rl.gemm(256, 512, 128, t, "H100 SXM").bytes == (
            rl.gemm(256, 512, 128, name, "H100 SXM").bytes
        )


# ---------------------------------------------------------------------- batch, broadcasting


def test_batch_multiplies_flops_and_bytes() -> None:
    one = rl.gemm(512, 1024, 256, "bf16", "H100 SXM", efficiency="peak")
    eight = rl.gemm(512, 1024, 256, "bf16", "H100 SXM", batch=8, efficiency="peak")
    # 8 * 2*512*1024*256 = 2147483648 FLOPs
    # 8 * (512*1024 + 1024*256 + 512*256)*2 = 8 * 1835008 = 14680064 B
    assert eight.flops == 8 * one.flops == 2147483648
    assert eight.bytes == 8 * one.bytes == 14680064
    assert eight.time_s == approx(8 * one.time_s)  # no floor under "peak"
    assert "8x512x1024x256" in eight.label


def test_broadcasting_shapes_and_scalar_equality() -> None:
    m = np.array([[128], [1024], [8192]])  # (3, 1)
    n = np.array([256, 512, 4096, 16384])  # (4,)
    e = rl.gemm(m, 4096, n, "bf16", "H100 SXM")
    for field in ("time_s", "compute_s", "memory_s", "overhead_s", "flops", "bytes", "intensity"):
        assert np.shape(getattr(e, field)) == (3, 4), field
    assert e.shape == (3, 4)
    assert e.bound.shape == (3, 4)
    for i in range(3):
        for j in range(4):
            s = rl.gemm(int(m[i, 0]), 4096, int(n[j]), "bf16", "H100 SXM")
            assert e.time_s[i, j] == s.time_s
            assert e.flops[i, j] == s.flops
            assert e.bytes[i, j] == s.bytes
            assert e.bound[i, j] == s.bound


def test_lists_and_batch_arrays_broadcast() -> None:
    e = rl.gemm([64, 128], [32], 16, "bf16", "H100 SXM", batch=[[1], [2], [3]])
    assert e.shape == (3, 2)
    assert e.flops[2, 1] == 3 * 2 * 128 * 32 * 16  # = 393216
    assert isinstance(rl.gemm(64, 32, 16, "bf16", "H100 SXM").time_s, float)


def test_array_input_of_one_element_stays_an_array() -> None:
    e = rl.gemm(np.array([4096]), 4096, 4096, "bf16", "H100 SXM")
    assert e.shape == (1,)
    assert isinstance(e.time_s, np.ndarray)


# --------------------------------------------------------------- bound flips at the ridge


def test_square_gemm_bound_flips_at_the_ridge_point_peak_preset() -> None:
    # Square bf16 GEMM: intensity = 2x^3 / (3x^2 * 2 B) = x/3 FLOP/B.
    # Ridge point of H100 SXM bf16 = 989.5e12 / 3.35e12 = 295.373 FLOP/B.
    # Crossover x* = 3 * 295.373 = 886.12: 886 is memory-bound, 887 compute-bound.
    ridge = H100_BF16 / H100_BW
    assert rl.hardware("H100 SXM").ridge_point("bf16") == approx(ridge)
    x_star = 3 * ridge
    assert 886 < x_star < 887
    below = rl.gemm(886, 886, 886, "bf16", "H100 SXM", efficiency="peak")
    above = rl.gemm(887, 887, 887, "bf16", "H100 SXM", efficiency="peak")
    assert below.bound == "memory" and below.intensity < ridge
    assert above.bound == "compute" and above.intensity > ridge
    # vectorised over a range around the ridge: the flip is exactly at x*
    xs = np.arange(700, 1100)
    e = rl.gemm(xs, xs, xs, "bf16", "H100 SXM", efficiency="peak")
    np.testing.assert_array_equal(e.bound, np.where(xs > x_star, "compute", "memory"))


def test_skinny_gemm_bound_flips_at_the_derived_m_default_preset() -> None:
    # Family m x 8192 x 8192 in bf16 under the default preset (no floor involved: t > 2 us).
    # compute(m) = 2*m*K*N / Pc, memory(m) = 2*(m*K + K*N + m*N) / Bm with Pc = 7.7181e14,
    # Bm = 3.082e12. Equal at m* = (K*N/Bm) / (K*N/Pc - (K+N)/Bm)
    #    = 2.17744e-5 / (8.69504e-8 - 5.31603e-9) = 266.70
    K = N = 8192
    m_star = (K * N / H100_BW_ACH) / (K * N / H100_BF16_ACH - (K + N) / H100_BW_ACH)
    assert 266 < m_star < 267
    below = rl.gemm(266, K, N, "bf16", "H100 SXM")
    above = rl.gemm(267, K, N, "bf16", "H100 SXM")
    assert below.bound == "memory" and below.memory_s > below.compute_s
    assert above.bound == "compute" and above.compute_s > above.memory_s
    assert min(below.time_s, above.time_s) > FLOOR
    ms = np.arange(1, 2000)
    e = rl.gemm(ms, K, N, "bf16", "H100 SXM")
    np.testing.assert_array_equal(e.bound, np.where(ms > m_star, "compute", "memory"))


def test_fp8_ridge_is_twice_as_far() -> None:
    # fp8 square GEMM: bytes = 2x^2 (A, B at 1 B) + 2x^2 (C in bf16) = 4x^2 -> intensity x/2.
    # Ridge 1979e12 / 3.35e12 = 590.746 FLOP/B -> x* = 2 * 590.746 = 1181.49 (peak preset)
    x_star = 2 * H100_FP8 / H100_BW
    assert 1181 < x_star < 1182
    assert rl.gemm(1181, 1181, 1181, "fp8", "H100 SXM", efficiency="peak").bound == "memory"
    assert rl.gemm(1182, 1182, 1182, "fp8", "H100 SXM", efficiency="peak").bound == "compute"


# ----------------------------------------------------------------------- Estimate algebra


def test_estimates_add_field_by_field() -> None:
    e1 = rl.gemm(4096, 4096, 4096, "bf16", "H100 SXM")
    e2 = rl.gemm(64, 64, 64, "bf16", "H100 SXM")
    s = e1 + e2
    for f in ("time_s", "compute_s", "memory_s", "overhead_s", "flops", "bytes"):
        assert getattr(s, f) == getattr(e1, f) + getattr(e2, f), f
    assert s.label == f"{e1.label} + {e2.label}"
    assert s.hardware == "H100 SXM"
    assert s.intensity == approx((e1.flops + e2.flops) / (e1.bytes + e2.bytes))


def test_scaling_and_sum() -> None:
    e = rl.gemm(1024, 1024, 1024, "bf16", "H100 SXM")
    for three in (3 * e, e * 3, e * np.int64(3), 3.0 * e):
        assert three.time_s == approx(3 * e.time_s)
        assert three.flops == 3 * e.flops
        assert three.overhead_s == 3 * e.overhead_s
        assert three.hardware == "H100 SXM"
    assert (3 * e).label == f"3 x ({e.label})"
    total = sum([e, e, e])
    assert isinstance(total, rl.Estimate)
    assert total.time_s == approx(3 * e.time_s)
    assert total.bytes == 3 * e.bytes
    assert (e + 0) is e and (0 + e) is e
    zero = 0 * e
    assert zero.time_s == 0.0 and zero.flops == 0.0


def test_sum_of_layers_matches_hand_total() -> None:
    # A toy MLP: up (m=512, 4096 -> 14336), down (14336 -> 4096), both bf16, peak preset.
    up = rl.gemm(512, 4096, 14336, "bf16", "H100 SXM", efficiency="peak")
    down = rl.gemm(512, 14336, 4096, "bf16", "H100 SXM", efficiency="peak")
    total = sum([up, down], rl.gemm(1, 1, 1, "bf16", "H100 SXM", efficiency="peak") * 0)
    assert total.flops == 2 * (2 * 512 * 4096 * 14336)  # = 120259084288
    assert total.bytes == 2 * 2 * (512 * 4096 + 4096 * 14336 + 512 * 14336)


def test_array_estimates_add_and_scale_by_arrays() -> None:
    a = rl.gemm([128, 256, 512], 64, 64, "bf16", "H100 SXM")
    b = rl.gemm(1024, 64, 64, "bf16", "H100 SXM")
    s = a + b
    assert s.shape == (3,)
    np.testing.assert_array_equal(s.time_s, a.time_s + b.time_s)
    w = a * np.array([1, 2, 3])
    np.testing.assert_array_equal(w.flops, a.flops * np.array([1, 2, 3]))


def test_estimates_on_different_hardware_say_so() -> None:
    s = rl.gemm(64, 64, 64, "bf16", "H100 SXM") + rl.gemm(64, 64, 64, "bf16", "B200")
    assert s.hardware == "H100 SXM+B200"


def test_estimate_algebra_rejects_nonsense() -> None:
    e = rl.gemm(64, 64, 64, "bf16", "H100 SXM")
    with pytest.raises(ValueError, match=r"multiplier must be finite and >= 0, got -1"):
        _ = e * -1
    with pytest.raises(ValueError, match=r"multiplier must be finite and >= 0, got nan"):
        _ = e * float("nan")
    for bad in ("3", True, 1j, None, [1, "a"]):
        with pytest.raises(TypeError):
            _ = e * bad
    with pytest.raises(TypeError):
        _ = e + 1
    with pytest.raises(TypeError):
        _ = e * e
    a3 = rl.gemm([1, 2, 3], 8, 8, "bf16", "H100 SXM")
    a4 = rl.gemm([1, 2, 3, 4], 8, 8, "bf16", "H100 SXM")
    with pytest.raises(ValueError, match=r"cannot add estimates of shapes \(3,\) and \(4,\)"):
        _ = a3 + a4
    with pytest.raises(ValueError, match=r"shape \(3,\) by an array of shape \(2,\)"):
        _ = a3 * np.array([1, 2])


# --------------------------------------------------------------------- output and display


def test_to_pandas_scalar_and_array() -> None:
    e = rl.gemm(4096, 4096, 4096, "bf16", "H100 SXM")
    df = e.to_pandas()
    assert isinstance(df, pd.DataFrame)
    assert len(df) == 1
    cols = {"time_s", "compute_s", "memory_s", "overhead_s", "flops", "bytes", "bound",
            "intensity"}
    assert cols <= set(df.columns)
    assert df.loc[0, "time_s"] == e.time_s
    assert df.loc[0, "bound"] == "compute"
    a = rl.gemm(np.array([[64], [8192]]), 4096, np.array([128, 256, 512]), "bf16", "H100 SXM")
    da = a.to_pandas()
    assert len(da) == 6
    np.testing.assert_array_equal(da["time_s"].to_numpy(), np.ravel(a.time_s))
    np.testing.assert_array_equal(da["bound"].to_numpy(), np.ravel(a.bound))


def test_to_dict() -> None:
    e = rl.gemm(64, 64, 64, "bf16", "H100 SXM")
    d = e.to_dict()
    assert d["time_s"] == e.time_s and d["bound"] == "overhead"
    assert d["hardware"] == "H100 SXM"


def test_repr_is_readable() -> None:
    e = rl.gemm(4096, 4096, 4096, "bf16", "H100 SXM")
    r = repr(e)
    # Estimate(gemm 4096x4096x4096 bf16 on H100 SXM: 178.1 µs, compute-bound, 137.4 GFLOP, ...)
    assert r.startswith("Estimate(gemm 4096x4096x4096 bf16 on H100 SXM: 178.1 µs")
    assert "compute-bound" in r and "137.4 GFLOP" in r and "100.7 MB" in r
    assert "1365 FLOP/B" in r
    a = rl.gemm([64, 4096], 4096, 4096, "bf16", "H100 SXM")
    ra = repr(a)
    assert "shape (2,)" in ra and "H100 SXM" in ra and " .. " in ra
    assert "nan" not in ra.lower()


# ------------------------------------------------------------------------- hardware choice


def test_fp8_on_a100_names_hardware_and_fp8() -> None:
    with pytest.raises(ValueError, match=r"gemm: A100 SXM 80GB has no fp8 peak") as info:
        rl.gemm(4096, 4096, 4096, "fp8", "A100 SXM 80GB")
    assert "fp8_flops_per_s" in str(info.value)
    with pytest.raises(ValueError, match=r"H100 SXM has no fp4 peak"):
        rl.gemm(4096, 4096, 4096, "nvfp4", "H100 SXM")
    # a variant with the peak set works
    hw = rl.hardware("A100 SXM 80GB").replace(fp8_flops_per_s=624e12)
    assert rl.gemm(4096, 4096, 4096, "fp8", hw).compute_s == approx(2 * 4096**3 / (624e12 * CF))


def test_hardware_as_string_or_object() -> None:
    by_name = rl.gemm(2048, 8192, 1024, "bf16", "H100 SXM")
    by_obj = rl.gemm(2048, 8192, 1024, "bf16", rl.hardware("H100 SXM"))
    by_alias = rl.gemm(2048, 8192, 1024, "bf16", "NVIDIA H100 80GB HBM3")
    assert by_name.time_s == by_obj.time_s == by_alias.time_s
    assert by_obj.hardware == "H100 SXM"
    # a variant: twice the bandwidth halves the memory term
    fast = rl.hardware("H100 SXM").replace(mem_bytes_per_s=6.7e12)
    e = rl.gemm(2048, 8192, 1024, "bf16", fast)
    assert e.memory_s == approx(by_name.memory_s / 2)


def test_default_hardware_is_used_when_none(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(RuntimeError, match="no default set"):
        rl.gemm(64, 64, 64)
    rl.set_default_hardware("B200")
    e = rl.gemm(8192, 8192, 8192)
    assert e.hardware == "B200"
    assert e.compute_s == approx(2 * 8192**3 / (2.25e15 * CF))
    assert rl.gemm(8192, 8192, 8192, hardware=None).time_s == e.time_s
    rl.set_default_hardware(rl.hardware("H100 SXM"))
    assert rl.gemm(64, 64, 64).hardware == "H100 SXM"
    rl.set_default_hardware(None)
    monkeypatch.setenv("ROOFLINE_HARDWARE", "MI300X")
    assert rl.gemm(64, 64, 64).hardware == "MI300X"
