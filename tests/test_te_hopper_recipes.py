"""Transformer Engine's recipes on Hopper (sm90) as Megatron-Core runs them.

TE 2.9 (NVIDIA/TransformerEngine v2.9, 70f5366): Float8BlockScaling quantizes an activation
in one kernel (``quantize_transpose_vector_blockwise``: the 1x128-scaled rows and the transposed
copy, fp32 scales) and each weight once per step (``quantize_transpose_square_blockwise``,
128x128 tiles); Float8CurrentScaling on TN-only fp8 GEMMs writes a transposed copy beside the
row-major one (``quantizer.cpp``: ``with_transpose = columnwise_usage &&
!nvte_is_non_tn_fp8_gemm_supported()``); MXFP8BlockScaling needs compute capability 10.0
(``check_mxfp8_support``). Byte counts hand-derived.
"""

from __future__ import annotations

import math

import pytest

import roofline as rl
from roofline.transformer.param_refresh import param_refresh

M, K, N = 16384, 4096, 6144


def _casts(recipe: str, hw: str = "H100 SXM"):
    r = rl.float8.linear(M, K, N, recipe=recipe, hardware=hw, mode="training")
    df = r.kernels()
    return r, df[df["role"] == "cast"].set_index("kernel")


def test_blockwise_te_training_kernels_hand_derived() -> None:
    r, casts = _casts("blockwise_te")
    assert r.recipe == "blockwise_te"
    # input m x k: one read of bf16; fp8 rows and the transposed copy; fp32 1x128 scales
    # along k (m rows) and along m (k rows of the transpose)
    row = casts.loc["input quantize 1x128 (row-wise + transposed)"]
    assert row["bytes_read"] == 2 * M * K
    assert row["bytes_written"] == 2 * M * K + 4 * (M * math.ceil(K / 128) + K * math.ceil(M / 128))
    # 16384 x 4096: 2*67108864 + 4*(16384*32 + 4096*128) = 134217728 + 4194304
    assert row["bytes_written"] == 138_412_032
    g = casts.loc["grad_output quantize 1x128 (row-wise + transposed)"]
    assert g["bytes_read"] == 2 * M * N
    assert g["bytes_written"] == 2 * M * N + 4 * (M * math.ceil(N / 128) + N * math.ceil(M / 128))
    # weights are quantized once per step (first micro-batch), not per call: two kernels
    assert len(casts) == 2
    # the GEMMs are the block-scaled fp8 GEMMs of torchao's blockwise recipe
    ref = rl.float8.linear(M, K, N, recipe="blockwise", hardware="H100 SXM")
    assert r.fp8_gemm_s == pytest.approx(ref.fp8_gemm_s, rel=1e-12)
    # one read per activation instead of torchao's separate kernels: cheaper casts
    assert r.fp8_overhead_s < ref.fp8_overhead_s


def test_tensorwise_te_on_hopper_writes_the_transposed_copy() -> None:
    r, casts = _casts("tensorwise_te")
    assert r.recipe == "tensorwise_te_sm90"  # what runs on TN-only fp8 GEMMs
    c = casts.loc["input cast + transpose (two fp8 copies)"]
    assert c["bytes_read"] == 2 * M * K and c["bytes_written"] == 2 * M * K
    c = casts.loc["grad_output cast + transpose (two fp8 copies)"]
    assert c["bytes_read"] == 2 * M * N and c["bytes_written"] == 2 * M * N
    assert not any("weight" in name for name in casts.index)  # fp8 params
    same = rl.float8.linear(M, K, N, recipe="tensorwise_te_sm90", hardware="H100 SXM")
    assert same.fp8_s == r.fp8_s
    # sm100 keeps its one row-major copy (any-layout fp8 GEMMs): Blackwell rows unchanged
    b, bc = _casts("tensorwise_te", "B200")
    assert b.recipe == "tensorwise_te"
    assert bc.loc["input cast (one fp8 copy)", "bytes_written"] == M * K
    # the transposed copy costs time on Hopper: more cast time than sm100's program there
    # (an H100 told it has compute capability 10.0 runs the any-layout program)
    sm100_program = rl.float8.linear(M, K, N, recipe="tensorwise_te", hardware=rl.hardware(
        "H100 SXM").replace(compute_capability=(10, 0)))
    assert sm100_program.recipe == "tensorwise_te"
    assert r.fp8_overhead_s > sm100_program.fp8_overhead_s


@pytest.mark.parametrize("hw", ["H100 SXM", "H200", "L40S"])
def test_mxfp8_te_refused_below_sm100(hw: str) -> None:
    with pytest.raises(ValueError, match=r"recipe.*'mxfp8_te'.*compute capability 10\.0"):
        rl.float8.linear(M, K, N, recipe="mxfp8_te", hardware=hw)
    with pytest.raises(ValueError, match=r"linear_recipe.*'mxfp8_te'"):
        rl.transformer.estimate("Qwen3-30B-A3B", "train", hardware=hw, seq_len=4096,
                                micro_batch=1, linear_recipe="mxfp8_te")
    # Blackwell runs it
    assert rl.float8.linear(M, K, N, recipe="mxfp8_te", hardware="B200").fp8_s > 0


def test_blockwise_te_weight_quantize_once_per_step() -> None:
    # TE's first-micro-batch 128x128 quantize of every weight: reads 2 bytes, writes the fp8
    # rows and the transpose (2 bytes) and 2 fp32 scales per 128x128 tile: one streaming pass
    n = 1 << 30
    t, gathered = param_refresh("blockwise_te", float(n), 1.0, "H100 SXM", "default")
    assert gathered == 1.0
    same_bytes = rl.elementwise(n, reads=1, writes=1, dtype="bf16", hardware="H100 SXM")
    # 4n + 8 * (n / 16384) bytes against the bf16 copy's 4n: 1 + 2/16384 of its time
    assert t == pytest.approx(same_bytes.time_s * (1 + 2 / 16384), rel=1e-6)
    # Megatron-Bridge's FP8-SC keeps bf16 params: the estimate accepts fp8_param_gather=False
    kw = dict(hardware="H100 SXM", seq_len=4096, micro_batch=1, ep=8, dp=8,
              linear_recipe="blockwise_te")
    a = rl.transformer.estimate("Qwen3-30B-A3B", "train", fp8_param_gather=False, **kw)
    b = rl.transformer.estimate("Qwen3-30B-A3B", "train", **kw)
    assert a.step.time_s > 0 and b.step.time_s > 0
    # bf16 params: 2-byte weights gathered and stored, against 1-byte fp8 params
    assert a.step.memory["weights_bytes"] > b.step.memory["weights_bytes"]
