"""rl.float8.linear and rl.float8.sweep, checked against hand-derived numbers.

H100 SXM: bf16 989.5e12, fp8 1979e12 FLOP/s, 3.35e12 B/s; B200: fp4 9e15 FLOP/s.
Default preset: 78 % of peak (bf16 7.7181e14, fp8 1.54362e15 FLOP/s), 92 % of bandwidth
(3.082e12 B/s) and a 2 us floor per kernel. Each kernel takes max(compute, memory, floor);
times are summed per role (bf16 GEMMs, low-precision GEMMs, casts).
"""

from __future__ import annotations

import math
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


BF16_ACH = 989.5e12 * 0.78  # = 7.7181e14 FLOP/s
FP8_ACH = 1979e12 * 0.78  # = 1.54362e15 FLOP/s
BW_ACH = 3.35e12 * 0.92  # = 3.082e12 B/s
FLOOR = 2e-6

M, K, N = 4096, 8192, 2048
FLOPS = 2 * M * K * N  # = 137438953472 per GEMM (all three GEMMs of the linear)

FP4_RECIPES = {"mxfp4_cutlass", "mxfp4", "nvfp4", "nvfp4_static", "nvfp4_no_global_scale"}
#: Recipes with a calibrated (static) input scale that only serve inference.
INFERENCE_ONLY = {"tensorwise_static"}
TORCHAO_TRAINING_UNMODELLED = {"mxfp8_cutlass", "mxfp4", "nvfp4", "nvfp4_static",
                               "nvfp4_no_global_scale"}


def approx(x: Any, rel: float = 1e-12) -> Any:
    return pytest.approx(x, rel=rel, abs=0)


def kernel_time(nbytes: float) -> float:
    """A memory-only cast kernel under the default preset on H100 SXM."""
    return max(nbytes / BW_ACH, FLOOR)


# ------------------------------------------------------------------ tensorwise, training


def test_tensorwise_training_h100_by_hand() -> None:
    r = rl.float8.linear(M, K, N, "tensorwise", "H100 SXM")
    # bf16 GEMMs (output, grad_input, grad_weight) each 137438953472 FLOPs and
    # (M*K + K*N + M*N)*2 = (33554432 + 16777216 + 8388608)*2 = 117440512 B:
    # compute 1.78074e-4 s >> memory 3.81e-5 s, so bf16_s = 3 * 137438953472 / 7.7181e14
    bf16 = 3 * FLOPS / BF16_ACH  # = 5.34221e-4 s
    # fp8 GEMMs: half the time (all three compute-bound at 1.54362e15): 2.67111e-4 s
    fp8_gemm = 3 * FLOPS / FP8_ACH
    # cast kernels (bf16 2 B, fp8 1 B):
    mk, kn, mn = M * K, K * N, M * N  # 33554432, 16777216, 8388608 elements
    casts = [
        2 * mk,  # input amax: reads 2*M*K = 67108864 B
        0,  # amax reduce (stage 2): no traffic -> 2 us floor
        2 * mk + 2 * mk,  # input cast to row- and column-major fp8: 67108864 + 67108864 B
        2 * kn,  # weight amax: 33554432 B
        0,  # amax reduce -> floor
        2 * kn + kn,  # weight cast (fwd layout): 33554432 read + 16777216 written
        2 * kn + kn,  # weight cast (bwd layout): same, 50331648 B
        2 * mn,  # grad_output amax: 16777216 B
        0,  # amax reduce -> floor
        2 * mn + 2 * mn,  # grad_output cast, both layouts: 33554432 B
    ]
    overhead = sum(kernel_time(b) for b in casts)
    # = 385875968 B / 3.082e12 + 3 * 2e-6 = 1.25203e-4 + 6e-6 = 1.31203e-4 s
    assert sum(casts) == 385875968
    assert overhead == approx(385875968 / BW_ACH + 3 * FLOOR)
    assert r.bf16_s == approx(bf16)
    assert r.fp8_gemm_s == approx(fp8_gemm)
    assert r.fp8_overhead_s == approx(overhead)
    assert r.fp8_s == approx(fp8_gemm + overhead)
    # speedup = 5.34221e-4 / (2.67111e-4 + 1.31203e-4) = 1.34120
    assert r.speedup == approx(bf16 / (fp8_gemm + overhead))
    assert abs(r.speedup - 1.34120) < 1e-4
    assert bool(r.worth_converting)


def test_tensorwise_kernel_list_matches_the_hand_list() -> None:
    k = rl.float8.linear(M, K, N, "tensorwise", "H100 SXM").kernels()
    assert isinstance(k, pd.DataFrame)
    assert list(k["role"]).count("bf16_gemm") == 3
    assert list(k["role"]).count("lowp_gemm") == 3
    cast = k[k["role"] == "cast"]
    assert len(cast) == 10
    b = (cast["bytes_read"] + cast["bytes_written"]).to_numpy()
    mk, kn, mn = M * K, K * N, M * N
    # each amax's final reduction reads two fp32 partial maxima and writes the fp32 scale
    red = 2 * 4 + 4
    expected = [2 * mk, red, 4 * mk, 2 * kn, red, 3 * kn, 3 * kn, 2 * mn, red, 4 * mn]
    np.testing.assert_array_equal(b, expected)
    lowp = k[k["role"] == "lowp_gemm"]
    # fp8 GEMM outputs are bf16: output (M*K + K*N) + 2*M*N = 67108864 B;
    # grad_input (M*N + N*K) + 2*M*K = 92274688 B; grad_weight (K*M + M*N) + 2*K*N = 75497472 B
    np.testing.assert_array_equal(
        (lowp["bytes_read"] + lowp["bytes_written"]).to_numpy(), [67108864, 92274688, 75497472]
    )
    assert (k["flops"][k["role"] != "cast"] == FLOPS).all()


def test_tensorwise_inference_is_one_gemm_and_the_activation_cast() -> None:
    r = rl.float8.linear(M, K, N, "tensorwise", "H100 SXM", mode="inference")
    assert r.mode == "inference"
    assert r.bf16_s == approx(FLOPS / BF16_ACH)  # one bf16 GEMM: 1.78074e-4 s
    assert r.fp8_gemm_s == approx(FLOPS / FP8_ACH)  # one fp8 GEMM: 8.90368e-5 s
    # input amax reads 2*M*K = 67108864 B; input cast reads 2*M*K and writes M*K = 100663296 B
    # -> 167772160 B / 3.082e12 = 5.44361e-5 s (weights are pre-quantized: no weight casts)
    assert r.fp8_overhead_s == approx(kernel_time(2 * M * K) + kernel_time(3 * M * K))
    k = r.kernels()
    assert list(k["role"]) == ["bf16_gemm", "lowp_gemm", "cast", "cast"]
    # "train" is an alias of "training"
    assert rl.float8.linear(M, K, N, "tensorwise", "H100 SXM", mode="train").bf16_s == approx(
        3 * FLOPS / BF16_ACH
    )


def test_fuse_with_prev_removes_the_activation_reads() -> None:
    plain = rl.float8.linear(M, K, N, "tensorwise", "H100 SXM")
    fused = rl.float8.linear(M, K, N, "tensorwise", "H100 SXM", fuse_with_prev=True)
    assert fused.fuse_with_prev is True
    assert fused.bf16_s == plain.bf16_s and fused.fp8_gemm_s == plain.fp8_gemm_s
    # the input and grad_output amax passes read nothing (fused into the producer) -> floor
    saved = (kernel_time(2 * M * K) - FLOOR) + (kernel_time(2 * M * N) - FLOOR)
    # = (2.17748e-5 - 2e-6) + (5.44361e-6 - 2e-6) = 2.32184e-5 s
    assert plain.fp8_overhead_s - fused.fp8_overhead_s == approx(saved, rel=1e-9)
    assert fused.speedup > plain.speedup
    # every recipe: fusing never costs more
    for recipe in rl.float8.recipe_names():
        for mode in ("inference",) if recipe in INFERENCE_ONLY else ("training", "inference"):
            p = rl.float8.linear(M, K, N, recipe, "B200", mode)
            f = rl.float8.linear(M, K, N, recipe, "B200", mode, fuse_with_prev=True)
            assert f.fp8_overhead_s <= p.fp8_overhead_s, (recipe, mode)
    inf_p = rl.float8.linear(M, K, N, "tensorwise", "H100 SXM", "inference")
    inf_f = rl.float8.linear(M, K, N, "tensorwise", "H100 SXM", "inference", True)
    assert inf_p.fp8_overhead_s - inf_f.fp8_overhead_s == approx(
        kernel_time(2 * M * K) - FLOOR, rel=1e-9
    )


def test_rowwise_with_gw_hp_keeps_grad_weight_in_bf16() -> None:
    r = rl.float8.linear(M, K, N, "rowwise_with_gw_hp", "H100 SXM")
    # output and grad_input in fp8, grad_weight in bf16 (all compute-bound):
    # 2 * 137438953472 / 1.54362e15 + 137438953472 / 7.7181e14 = 3.56147e-4 s
    assert r.fp8_gemm_s == approx(2 * FLOPS / FP8_ACH + FLOPS / BF16_ACH)
    k = r.kernels()
    gw = k[(k["role"] == "lowp_gemm") & k["kernel"].str.contains("grad_weight")]
    assert len(gw) == 1
    # grad_weight = input^T @ grad_output in bf16: (K*M + M*N + K*N) * 2 = 117440512 B
    assert float((gw["bytes_read"] + gw["bytes_written"]).iloc[0]) == 117440512
    # the large-shape limit is 3 / (0.5 + 0.5 + 1) = 1.5x, not 2x
    big = rl.float8.linear(2**17, 2**17, 2**17, "rowwise_with_gw_hp", "H100 SXM")
    assert 1.45 < big.speedup < 1.5


def test_rowwise_scale_bytes() -> None:
    k = rl.float8.linear(1000, 300, 200, "rowwise", "H100 SXM").kernels()
    row = k[k["kernel"] == "input cast dim0 + transpose"].iloc[0]
    # reads bf16 input 2*1000*300; writes fp8 1000*300 + bf16 transpose 2*1000*300 + one fp32
    # scale per row 4*1000
    assert row["bytes_read"] == 600000
    assert row["bytes_written"] == 300000 + 600000 + 4000


# ------------------------------------------------------------------------- every recipe


@pytest.mark.parametrize("recipe", rl.float8.recipe_names())
@pytest.mark.parametrize("mode", ["training", "inference"])
def test_every_recipe_runs_on_b200(recipe: str, mode: str) -> None:
    if recipe in INFERENCE_ONLY and mode == "training":
        with pytest.raises(ValueError, match=f"'{recipe}' is an inference recipe"):
            rl.float8.linear(8192, 8192, 8192, recipe, "B200", mode)
        return
    r = rl.float8.linear(8192, 8192, 8192, recipe, "B200", mode)
    for v in (r.bf16_s, r.fp8_gemm_s, r.fp8_overhead_s, r.speedup):
        assert math.isfinite(v) and v > 0
    # large compute-bound shapes: the low-precision GEMMs beat bf16
    assert r.fp8_gemm_s < r.bf16_s
    # per-kernel detail sums to the role totals
    k = r.kernels()
    totals = k.groupby("role")["time_s"].sum()
    assert totals["bf16_gemm"] == approx(r.bf16_s)
    assert totals["lowp_gemm"] == approx(r.fp8_gemm_s)
    assert totals["cast"] == approx(r.fp8_overhead_s)
    assert (k["time_s"] >= FLOOR).all()  # every kernel pays at least the floor
    assert r.gpu_speedup == r.bf16_s / (r.fp8_gemm_s + r.fp8_overhead_s)
    if mode == "training" or r.fp8_s > 1e-3:  # GPU-bound: the host time is hidden
        assert r.speedup == approx(r.gpu_speedup, rel=1e-6)
    assert recipe.startswith(r.recipe)  # the alias blockwise_1x128_128x128 reports "blockwise"


@pytest.mark.parametrize("recipe", sorted(FP4_RECIPES))
def test_fp4_recipes_need_an_fp4_peak(recipe: str) -> None:
    with pytest.raises(ValueError, match=r"float8\.linear: H100 SXM has no fp4 peak"):
        rl.float8.linear(4096, 4096, 4096, recipe, "H100 SXM")
    big = rl.float8.linear(2**17, 2**17, 2**17, recipe, "B200")
    # fp4 GEMMs run at 9e15 / 2.25e15 = 4x the bf16 rate (gemm time ratio close to 4)
    assert big.bf16_s / big.fp8_gemm_s == approx(4.0, rel=1e-3)


def test_fp8_recipes_need_an_fp8_peak() -> None:
    with pytest.raises(ValueError, match=r"A100 SXM 80GB has no fp8 peak"):
        rl.float8.linear(4096, 4096, 4096, "tensorwise", "A100 SXM 80GB")


def test_mx_training_scale_bytes_are_exact() -> None:
    # mxfp8: one e8m0 byte per 32 elements along the blocked dimension, rounded up per row.
    m, k, n = 1000, 100, 300
    kern = rl.float8.linear(m, k, n, "mxfp8_cublas", "B200").kernels()
    casts = kern[kern["role"] == "cast"]
    written = casts["bytes_written"].to_numpy()
    # input (m x k): dim0 cast blocks along k, dim1 cast along m;
    # weight (k x n): dim0 along n, dim1 along k; grad_output (m x n): along n, then m.
    expected = [
        m * k + m * math.ceil(k / 32),  # 100000 + 1000*4 = 104000
        m * k + k * math.ceil(m / 32),  # 100000 + 100*32 = 103200
        k * n + k * math.ceil(n / 32),  # 30000 + 100*10 = 31000
        k * n + n * math.ceil(k / 32),  # 30000 + 300*4 = 31200
        m * n + m * math.ceil(n / 32),  # 300000 + 1000*10 = 310000
        m * n + n * math.ceil(m / 32),  # 300000 + 300*32 = 309600
    ]
    np.testing.assert_array_equal(written, expected)
    assert (written == np.floor(written)).all()  # whole bytes
    # nvfp4: 0.5 B payload + one e4m3 byte per 16 elements
    kern4 = rl.float8.linear(m, k, n, "nvfp4_static", "B200").kernels()
    first = kern4[kern4["role"] == "cast"].iloc[0]
    assert first["bytes_written"] == 0.5 * m * k + m * math.ceil(k / 16)  # 50000 + 7000


def test_tensorwise_static_inference_h100_by_hand() -> None:
    # TensorRT-LLM's FP8Linear: fp8 weights and a calibrated per-tensor input scale, so one
    # quantize kernel (read bf16 2 B, write fp8 1 B per element) and the fp8 GEMM; no amax.
    r = rl.float8.linear(M, K, N, "tensorwise_static", "H100 SXM", "inference")
    k = r.kernels()
    casts = k[k["role"] == "cast"]
    assert list(casts["kernel"]) == ["input quantize (static scale)"]
    assert casts["bytes_read"].iloc[0] == 2 * M * K  # 67108864 B
    assert casts["bytes_written"].iloc[0] == M * K  # 33554432 B
    # (67108864 + 33554432) B / 3.082e12 B/s = 3.26663e-5 s
    assert r.fp8_overhead_s == approx(kernel_time(3 * M * K), rel=1e-9)
    # the same fp8 GEMM as tensorwise (137438953472 FLOPs / 1.54362e15 = 8.90370e-5 s)
    dyn = rl.float8.linear(M, K, N, "tensorwise", "H100 SXM", "inference")
    assert r.fp8_gemm_s == dyn.fp8_gemm_s == approx(FLOPS / FP8_ACH)
    # the dynamic recipe's amax pass (one more bf16 read) is what the static scale saves
    assert r.fp8_overhead_s < dyn.fp8_overhead_s
    with pytest.raises(ValueError, match="'tensorwise_static' is an inference recipe"):
        rl.float8.linear(M, K, N, "tensorwise_static", "H100 SXM", "training")


def test_blockwise_training_scale_bytes_are_exact() -> None:
    m, k, n = 1000, 300, 200
    kern = rl.float8.linear(m, k, n, "blockwise", "H100 SXM").kernels()
    casts = kern[kern["role"] == "cast"]
    written = dict(zip(casts["kernel"], casts["bytes_written"], strict=True))
    # input 1x128 along k: 1000*300 fp8 + 4 B * 1000 * ceil(300/128)
    assert written["input quant 1x128 (lhs)"] == m * k + 4 * m * math.ceil(k / 128)  # 312000
    # input for grad_weight, 1x128 along m: 300000 + 4 * 300 * ceil(1000/128) = 309600
    assert written["input quant 1x128 (rhs, for grad_weight)"] == m * k + 4 * k * math.ceil(
        m / 128
    )
    # weight 128x128 blocks: 60000 + 4 * ceil(300/128) * ceil(200/128) = 60000 + 4*3*2
    assert written["weight quant 128x128 (transposed rhs)"] == k * n + 4 * 3 * 2


# --------------------------------------------------------------------- speedup behaviour


def test_large_shapes_approach_the_peak_ratio_from_below() -> None:
    sizes = [2**p for p in range(10, 21)]
    r = rl.float8.linear(sizes, sizes, sizes, "tensorwise", "H100 SXM")
    s = np.asarray(r.speedup)
    ratio = 1979e12 / 989.5e12  # = 2.0
    assert (s < ratio).all()
    assert (np.diff(s) > 0).all()  # casts are O(n^2), GEMMs O(n^3)
    assert s[-1] > 0.995 * ratio


def test_small_shapes_are_slower_in_fp8() -> None:
    r = rl.float8.linear(256, 256, 256, "tensorwise", "H100 SXM")
    # every kernel sits at the 2 us floor: 3 bf16 GEMMs vs 3 fp8 GEMMs + 10 casts
    assert r.bf16_s == approx(3 * FLOOR)
    assert r.fp8_gemm_s == approx(3 * FLOOR)
    assert r.fp8_overhead_s == approx(10 * FLOOR)
    assert r.speedup == approx(3 / 13)
    assert not r.worth_converting
    for recipe in rl.float8.recipe_names():
        mode = "inference" if recipe in INFERENCE_ONLY else "training"
        assert rl.float8.linear(256, 256, 256, recipe, "B200", mode).speedup < 1, recipe


def test_array_inputs_broadcast_and_match_scalars() -> None:
    m = np.array([[1024], [8192]])
    n = np.array([512, 4096, 16384])
    r = rl.float8.linear(m, 4096, n, "rowwise", "H100 SXM")
    assert np.shape(r.speedup) == (2, 3)
    for i in range(2):
        for j in range(3):
            s = rl.float8.linear(int(m[i, 0]), 4096, int(n[j]), "rowwise", "H100 SXM")
            assert r.bf16_s[i, j] == s.bf16_s
            assert r.fp8_gemm_s[i, j] == s.fp8_gemm_s
            assert r.fp8_overhead_s[i, j] == s.fp8_overhead_s
    with pytest.raises(ValueError, match="only for scalar"):
        r.kernels()
    assert "shape (2, 3)" in repr(r)


def test_repr() -> None:
    r = rl.float8.linear(M, K, N, "tensorwise", "H100 SXM")
    text = repr(r)
    assert text.startswith(
        "Float8Linear(tensorwise, training, compiled, on H100 SXM, m=4096 k=8192 n=2048")
    assert "(GPU 1.341x)" in text and f"speedup {r.speedup:.3f}x" in text


# ------------------------------------------------------------------------ presets


def test_torchao_preset_equals_default_where_conventions_agree() -> None:
    ms = np.array([256, 1000, 4096, 16384])
    for mode in ("training", "inference"):
        d = rl.float8.linear(ms, 4096, 2048, "tensorwise", "H100 SXM", mode)
        t = rl.float8.linear(ms, 4096, 2048, "tensorwise", "H100 SXM", mode, efficiency="torchao")
        np.testing.assert_array_equal(d.fp8_s, t.fp8_s)
        np.testing.assert_array_equal(d.bf16_s, t.bf16_s)


def test_torchao_preset_differs_for_mx_only_when_k_is_not_a_multiple_of_32() -> None:
    # Inference mxfp8: torchao floors (M*K + K*N)/32 and M*K/32 scale bytes, we round up per
    # row; both agree when K % 32 == 0.
    d = rl.float8.linear(4096, 4096, 4096, "mxfp8_cublas", "B200", "inference")
    t = rl.float8.linear(4096, 4096, 4096, "mxfp8_cublas", "B200", "inference",
                         efficiency="torchao")
    assert (d.bf16_s, d.fp8_gemm_s, d.fp8_overhead_s) == (t.bf16_s, t.fp8_gemm_s,
                                                           t.fp8_overhead_s)
    # K = 4100 (not a multiple of 32), memory-bound inference shape M = 16:
    d2 = rl.float8.linear(16, 4100, 4096, "mxfp8_cublas", "B200", "inference")
    t2 = rl.float8.linear(16, 4100, 4096, "mxfp8_cublas", "B200", "inference",
                          efficiency="torchao")
    assert d2.bf16_s == t2.bf16_s
    # GEMM scale bytes: ours 16*ceil(4100/32) + 4096*ceil(4100/32) = 16*129 + 4096*129 = 530448;
    # torchao floor((16*4100 + 4100*4096)/32) = floor(16859200/32) = 526850
    assert d2.fp8_gemm_s > t2.fp8_gemm_s
    # at the B200's HBM peak, 7680-bit bus / 8 x 3996 MHz x 2 = 7.67232e12 B/s (both tables
    # carry it; hardware-notes section 41), x 92 %
    b200_bw = 7680 / 8 * 3.996e9 * 2
    assert d2.fp8_gemm_s - t2.fp8_gemm_s == approx((530448 - 526850) / (b200_bw * 0.92),
                                                   rel=1e-6)


def test_peak_preset_has_no_floor() -> None:
    r = rl.float8.linear(256, 256, 256, "tensorwise", "H100 SXM", efficiency="peak")
    # the amax reduce kernels move nothing and cost nothing without a floor
    assert r.fp8_overhead_s < 10 * FLOOR
    assert r.bf16_s == approx(3 * 3 * 256 * 256 * 2 / 3.35e12)  # memory-bound: 3 x 393216 B


def test_torchao_preset_refuses_recipes_it_does_not_model() -> None:
    for recipe in sorted(TORCHAO_TRAINING_UNMODELLED):
        with pytest.raises(ValueError, match=r"float8\.linear: torchao's roofline has no model"):
            rl.float8.linear(4096, 4096, 4096, recipe, "B200", efficiency="torchao")


# ---------------------------------------------------------------------------- sweep

SWEEP_COLUMNS = [
    "name", "fwd_M", "fwd_K", "fwd_N", "r_bf16_gemm_s", "r_fp8_gemm_s", "r_fp8_ovhd_s",
    "r_fp8_gemm_and_ovhd_s", "r_fp8_gemm_and_ovhd_spdp",
]


def test_sweep_pow2() -> None:
    df = rl.float8.sweep("pow2", "tensorwise", "H100 SXM", columns="torchao")
    assert list(df.columns) == SWEEP_COLUMNS
    assert len(df) == 5
    assert list(df["fwd_M"]) == [1024, 2048, 4096, 8192, 16384]
    assert (df["fwd_M"] == df["fwd_K"]).all() and (df["fwd_K"] == df["fwd_N"]).all()
    r = rl.float8.linear(4096, 4096, 4096, "tensorwise", "H100 SXM")
    row = df[df["fwd_M"] == 4096].iloc[0]
    assert row["r_bf16_gemm_s"] == r.bf16_s
    assert row["r_fp8_gemm_s"] == r.fp8_gemm_s
    assert row["r_fp8_ovhd_s"] == r.fp8_overhead_s
    assert row["r_fp8_gemm_and_ovhd_s"] == r.fp8_s
    assert row["r_fp8_gemm_and_ovhd_spdp"] == r.speedup


def test_sweep_named_sets() -> None:
    ext = rl.float8.sweep("pow2_extended", hardware="H100 SXM", columns="torchao")
    assert len(ext) == 10
    assert list(ext["fwd_M"]) == [1024, 1536, 2048, 3072, 4096, 6144, 8192, 12288, 16384, 24576]
    big = rl.float8.sweep("sweep", hardware="H100 SXM", columns="torchao")
    assert len(big) == 512  # 8**3 shapes, 256 .. 32768
    assert set(big["fwd_K"]) == {2**p for p in range(8, 16)}
    llama = rl.float8.sweep("llama", hardware="H100 SXM", columns="torchao")
    assert list(llama["name"]) == ["attn.wqkv", "attn.w0", "ffn.w13", "ffn.w2"]
    assert (llama["fwd_M"] == 16384).all()
    assert list(llama["fwd_K"]) == [8192, 1024, 8192, 3584]
    assert list(llama["fwd_N"]) == [1280, 8192, 7168, 8192]
    assert len(rl.float8.sweep("square", hardware="H100 SXM")) == 8


def test_sweep_explicit_shapes() -> None:
    shapes = [(1024, 2048, 4096), (16, 8192, 8192)]
    as_list = rl.float8.sweep(shapes, "rowwise", "H100 SXM", columns="torchao")
    as_array = rl.float8.sweep(np.array(shapes), "rowwise", "H100 SXM", columns="torchao")
    as_dict = rl.float8.sweep({"up": shapes[0], "decode": shapes[1]}, "rowwise", "H100 SXM",
                              columns="torchao")
    assert list(as_list["name"]) == ["0", "1"]
    assert list(as_dict["name"]) == ["up", "decode"]
    for df in (as_array, as_dict):
        np.testing.assert_array_equal(df["r_fp8_gemm_and_ovhd_spdp"],
                                      as_list["r_fp8_gemm_and_ovhd_spdp"])
    assert list(as_list["fwd_N"]) == [4096, 8192]
    assert as_list["fwd_M"].dtype == np.int64
    r = rl.float8.linear(16, 8192, 8192, "rowwise", "H100 SXM")
    assert as_list["r_fp8_ovhd_s"].iloc[1] == r.fp8_overhead_s


def test_sweep_readable_columns_by_default() -> None:
    df = rl.float8.sweep("pow2", "rowwise", "H100 SXM")
    assert list(df.columns) == ["name", "m", "k", "n", "recipe", "mode", "hardware", "bf16_s",
                                "fp8_gemm_s", "fp8_overhead_s", "fp8_s", "gpu_speedup",
                                "launch", "bf16_wall_s", "wall_s", "speedup"]
    assert df["name"].iloc[3] == "8192x8192x8192"
    r = rl.float8.linear(8192, 8192, 8192, "rowwise", "H100 SXM")
    row = df.iloc[3]
    assert (row.m, row.k, row.n, row.recipe, row["mode"], row.hardware) == (
        8192, 8192, 8192, "rowwise", "training", "H100 SXM")
    assert row.speedup == r.speedup and row.fp8_s == r.fp8_s
    torchao = rl.float8.sweep("pow2", "rowwise", "H100 SXM", columns="torchao")
    np.testing.assert_array_equal(df["gpu_speedup"], torchao["r_fp8_gemm_and_ovhd_spdp"])
    assert list(torchao["name"]) == ["0", "1", "2", "3", "4"]  # torchao's own names
    named = rl.float8.sweep({"up": (16, 4096, 4096)}, hardware="H100 SXM")
    assert list(named["name"]) == ["up"]
    with pytest.raises(rl.UnknownNameError, match="columns"):
        rl.float8.sweep("pow2", hardware="H100 SXM", columns="torchoa")  # type: ignore[arg-type]


def test_float8_linear_to_pandas() -> None:
    r = rl.float8.linear(np.array([1024, 8192]), 4096, 4096, "tensorwise", "H100 SXM")
    df = r.to_pandas()
    assert list(df["m"]) == [1024, 8192] and list(df["k"]) == [4096, 4096]
    np.testing.assert_array_equal(df["speedup"], r.speedup)
    assert (df["hardware"] == "H100 SXM").all() and (df["mode"] == "training").all()
    one = rl.float8.linear(1024, 4096, 4096, hardware="H100 SXM").to_pandas()
    assert len(one) == 1 and one["fp8_s"].iloc[0] == rl.float8.linear(
        1024, 4096, 4096, hardware="H100 SXM").fp8_s


def test_sweep_inference_and_presets() -> None:
    d = rl.float8.sweep("pow2", "mxfp8_cublas", "B200", mode="inference")
    t = rl.float8.sweep("pow2", "mxfp8_cublas", "B200", mode="inference", efficiency="torchao")
    pd.testing.assert_frame_equal(d, t)  # all K are multiples of 32
    p = rl.float8.sweep("pow2", "mxfp8_cublas", "B200", mode="inference", efficiency="peak")
    assert (p["fp8_s"] < d["fp8_s"]).all()
