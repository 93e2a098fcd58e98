"""Transformer Engine's Blackwell recipes (tensorwise_te, mxfp8_te) and block-scaled MMA rates.

Hand-derived byte counts of each kernel TE launches (TE 2.9: quantize_mxfp8 writes both
layouts in one kernel, nvte_swizzle_scaling_factors before each MXFP8 GEMM operand; Float8
CurrentScaling on sm100 writes one fp8 copy; Megatron-Bridge keeps fp8 weights), and the
property that the tensor core's block-scaled MMA is never priced faster than per-tensor fp8.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import roofline as rl

M, K, N = 16384, 4096, 6144


def _kernels(recipe: str, mode: str = "training", m: int = M, k: int = K, n: int = N):
    r = rl.float8.linear(m, k, n, recipe=recipe, hardware="B200", mode=mode)
    df = r.kernels()
    return r, df[df["role"] == "cast"].set_index("kernel")


def test_mxfp8_te_training_kernels_hand_derived():
    _, casts = _kernels("mxfp8_te")
    # input m x k: one read of bf16, both fp8 copies, e8m0 scales along k and along m
    row = casts.loc["input quantize mxfp8 (row- and column-wise)"]
    assert row["bytes_read"] == 2 * M * K
    assert row["bytes_written"] == 2 * M * K + M * math.ceil(K / 32) + K * math.ceil(M / 32)
    g = casts.loc["grad_output quantize mxfp8 (row- and column-wise)"]
    assert g["bytes_read"] == 2 * M * N
    assert g["bytes_written"] == 2 * M * N + M * math.ceil(N / 32) + N * math.ceil(M / 32)
    # fp8 weights (fp8_param_gather): no weight quantize per call
    assert not any("weight quantize" in name for name in casts.index)
    # six swizzles: each operand of each of the three GEMMs, read and written once
    swz = casts[casts.index.str.contains("swizzle")]
    assert len(swz) == 6
    assert (swz["bytes_read"] == swz["bytes_written"]).all()
    assert swz.loc["input scale swizzle (fwd GEMM)", "bytes_read"] == M * K / 32
    assert swz.loc["weight scale swizzle (fwd GEMM)", "bytes_read"] == N * K / 32
    assert swz.loc["grad_output scale swizzle (wgrad GEMM)", "bytes_read"] == N * M / 32
    assert len(casts) == 8


def test_mxfp8_te_inference_kernels():
    _, casts = _kernels("mxfp8_te", mode="inference")
    q = casts.loc["input quantize mxfp8 (rowwise)"]
    assert q["bytes_read"] == 2 * M * K
    assert q["bytes_written"] == M * K + M * K / 32
    assert casts.loc["input scale swizzle (GEMM)", "bytes_read"] == M * K / 32
    assert casts.loc["weight scale swizzle (GEMM)", "bytes_written"] == N * K / 32
    assert len(casts) == 3


def test_tensorwise_te_training_kernels_hand_derived():
    _, casts = _kernels("tensorwise_te")
    assert casts.loc["input amax", "bytes_read"] == 2 * M * K
    assert casts.loc["input amax", "bytes_written"] == 0
    cast = casts.loc["input cast (one fp8 copy)"]
    assert (cast["bytes_read"], cast["bytes_written"]) == (2 * M * K, M * K)
    cast = casts.loc["grad_output cast (one fp8 copy)"]
    assert (cast["bytes_read"], cast["bytes_written"]) == (2 * M * N, M * N)
    assert not any(name.startswith("weight") for name in casts.index)


def test_te_recipes_cast_less_than_torchao_recipes():
    """Fewer bytes: one fp8 copy (sm100) and one read for both MX layouts, no weight casts."""
    m = np.array([1024, 4096, 16384, 65536])
    for te, torchao in (("tensorwise_te", "tensorwise"), ("mxfp8_te", "mxfp8_cublas")):
        a = rl.float8.linear(m, 8192, 8192, recipe=te, hardware="B200")
        b = rl.float8.linear(m, 8192, 8192, recipe=torchao, hardware="B200")
        assert np.all(np.asarray(a.fp8_overhead_s) < np.asarray(b.fp8_overhead_s))
        # same GEMMs: the recipes differ in their casts only
        assert np.allclose(a.fp8_gemm_s, b.fp8_gemm_s, rtol=0.02)


@pytest.mark.parametrize("recipe", ["tensorwise_te", "mxfp8_te"])
def test_te_recipes_have_no_torchao_model(recipe):
    with pytest.raises(ValueError, match=recipe):
        rl.float8.linear(M, K, N, recipe=recipe, hardware="B200", efficiency="torchao")


@pytest.mark.parametrize("hw", ["B200", "GB300"])
def test_block_scaled_mma_never_faster_than_per_tensor(hw):
    """tcgen05 block-scaled MMA (kind::mxf8f6f4) runs at the fp8 tensor rate and reads its
    scales on top: the same library, clock and tile terms as per-tensor fp8, never faster."""
    m = np.array([512, 2048, 8192, 16384, 32768])
    for k, n in ((4096, 4096), (4096, 28672), (14336, 4096)):
        fp8 = np.asarray(rl.gemm(m, k, n, dtype="fp8", hardware=hw).time_s)
        mx = np.asarray(rl.gemm(m, k, n, dtype="mxfp8", hardware=hw).time_s)
        assert np.all(mx >= fp8)
        assert np.all(mx <= 1.05 * fp8)
        # fp4 microscaled runs at the fp4 rate: at most half the fp8 time plus memory and floor
        nv = np.asarray(rl.gemm(m, k, n, dtype="nvfp4", hardware=hw).time_s)
        assert np.all(nv < fp8)
