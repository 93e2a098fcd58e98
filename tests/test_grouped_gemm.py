"""rl.grouped_gemm: MoE expert GEMMs in contiguous and masked layouts, with per-expert counts.

Expected bytes and FLOPs are derived here with the arithmetic in the comments. DeepSeek-V3
expert shapes come from seed 000 (512 tokens on 2 local experts, hidden 7168, expert FFN 2048,
fp8 inputs, fp32 up+gate output, bf16 down output) on H800.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import roofline as rl

HW = "H800"


def test_uniform_is_a_batched_gemm() -> None:
    e = rl.grouped_gemm(128, 256, 512, groups=4, dtype="bf16", hardware=HW)
    # FLOPs 2*4*128*256*512 = 134,217,728
    assert e.flops == 134_217_728
    # A 4*128*256*2 = 262,144; B 4*256*512*2 = 1,048,576; C 4*128*512*2 = 524,288
    assert e.bytes == 262_144 + 1_048_576 + 524_288
    # Under a plain preset it is exactly the batched GEMM; the default model adds what torch's
    # CUTLASS grouped kernel does beyond a bmm (a setup kernel, cluster-padded tiles), so it is
    # never faster than the batched GEMM.
    for eff in ("constant", "peak"):
        grouped = rl.grouped_gemm(128, 256, 512, groups=4, dtype="bf16", hardware=HW,
                                  efficiency=eff)
        g = rl.gemm(128, 256, 512, batch=4, dtype="bf16", hardware=HW, efficiency=eff)
        assert grouped.time_s == g.time_s
    assert e.time_s >= rl.gemm(128, 256, 512, batch=4, dtype="bf16", hardware=HW).time_s


def test_counts_bytes_and_flops() -> None:
    e = rl.grouped_gemm(None, 256, 512, counts=[100, 0, 28], dtype="fp8", hardware=HW)
    # FLOPs 2*(100+28)*256*512 = 33,554,432
    assert e.flops == 33_554_432
    # A 128*256*1 = 32,768; B of the 2 non-empty experts 2*256*512 = 262,144 (the empty one
    # reads no weight); C bf16 128*512*2 = 131,072
    assert e.bytes == 32_768 + 262_144 + 131_072


def test_masked_computes_the_maximum_per_group() -> None:
    e = rl.grouped_gemm(None, 256, 512, counts=[100, 0, 28], layout="masked", dtype="fp8",
                        hardware=HW)
    # 3 groups of max(counts) = 100 rows: FLOPs 2*3*100*256*512 = 78,643,200
    assert e.flops == 78_643_200
    # A 3*100*256 = 76,800; B 3*256*512 = 393,216; C 3*100*512*2 = 307,200
    assert e.bytes == 76_800 + 393_216 + 307_200
    # an explicit buffer of 128 rows per group
    cap = rl.grouped_gemm(128, 256, 512, counts=[100, 0, 28], layout="masked", dtype="fp8",
                          hardware=HW)
    assert cap.flops == 2 * 3 * 128 * 256 * 512
    assert cap.time_s >= e.time_s


@pytest.mark.parametrize("m", [256, 512, 1024])
def test_equal_counts_equal_uniform(m: int) -> None:
    # counts that are equal multiples of 256 rows give exactly the uniform call
    for layout in ("contiguous", "masked"):
        c = rl.grouped_gemm(None, 7168, 4096, counts=[m] * 4, layout=layout, dtype="fp8",
                            hardware=HW)
        u = rl.grouped_gemm(m, 7168, 4096, groups=4, dtype="fp8", hardware=HW)
        assert c.time_s == pytest.approx(u.time_s, rel=1e-12)
        assert c.flops == u.flops and c.bytes == u.bytes


def test_peak_model_counts() -> None:
    hw = rl.hardware(HW)
    e = rl.grouped_gemm(None, 7168, 4096, counts=[300, 212], dtype="fp8", out_dtype="fp32",
                        hardware=HW, efficiency="peak")
    flops = 2 * 512 * 7168 * 4096  # 30,064,771,072
    # A 512*7168 = 3,670,016; B 2*7168*4096 = 58,720,256; C fp32 512*4096*4 = 8,388,608
    nbytes = 3_670_016 + 58_720_256 + 8_388_608
    assert (e.flops, e.bytes) == (flops, nbytes)
    assert e.time_s == pytest.approx(max(flops / hw.fp8_flops_per_s, nbytes / hw.mem_bytes_per_s))


def _splits(rng: np.random.Generator, total: int, groups: int, n: int) -> np.ndarray:
    """n random splits of `total` rows over `groups` non-empty groups."""
    out = []
    for _ in range(n):
        cuts = np.sort(rng.choice(np.arange(1, total), size=groups - 1, replace=False))
        out.append(np.diff(np.concatenate([[0], cuts, [total]])))
    return np.array(out)


@pytest.mark.parametrize(("groups", "per_group", "k", "n"),
                         [(2, 256, 7168, 4096), (8, 512, 7168, 2048), (32, 256, 2048, 7168)])
def test_imbalance_never_faster_than_balance(groups: int, per_group: int, k: int, n: int) -> None:
    # Balanced, tile-aligned routing is a lower bound for every split of the same tokens over
    # the same (non-empty) experts: padding each group to whole tiles only adds rows.
    rng = np.random.default_rng(0)
    counts = _splits(rng, groups * per_group, groups, 200)
    balanced = rl.grouped_gemm(per_group, k, n, groups=groups, dtype="fp8", hardware=HW)
    for layout in ("contiguous", "masked"):
        t = rl.grouped_gemm(None, k, n, counts=counts, layout=layout, dtype="fp8",
                            hardware=HW).time_s
        assert np.all(t >= balanced.time_s * (1 - 1e-12))


def test_masked_more_imbalance_never_faster() -> None:
    # hot expert taking a growing share of 4096 tokens over 8 experts: the maximum grows
    hot = np.arange(512, 4096 - 7 + 1, 97)
    rest = 4096 - hot
    counts = np.stack([hot] + [rest // 7 + (i < rest % 7) for i in range(7)], axis=1)
    assert np.all(counts.sum(axis=1) == 4096)
    t = rl.grouped_gemm(None, 7168, 2048, counts=counts, layout="masked", dtype="fp8",
                        hardware=HW).time_s
    assert np.all(np.diff(t) >= 0)
    c = rl.grouped_gemm(None, 7168, 2048, counts=counts, dtype="fp8", hardware=HW).time_s
    assert np.all(t >= c * (1 - 1e-12))  # masked never beats contiguous


def test_more_tokens_never_faster() -> None:
    rng = np.random.default_rng(1)
    base = rng.integers(0, 600, size=(100, 8))
    base[:, 0] += 1
    more = base.copy()
    more[np.arange(100), rng.integers(0, 8, size=100)] += rng.integers(1, 200, size=100)
    for layout in ("contiguous", "masked"):
        a = rl.grouped_gemm(None, 7168, 4096, counts=base, layout=layout, dtype="fp8",
                            hardware=HW).time_s
        b = rl.grouped_gemm(None, 7168, 4096, counts=more, layout=layout, dtype="fp8",
                            hardware=HW).time_s
        assert np.all(b >= a)


def test_empty_experts_skip_their_weights() -> None:
    # decode: weight reads dominate; an expert no token chose loads nothing (contiguous),
    # while the masked layout still runs every group's buffer.
    spread = rl.grouped_gemm(None, 7168, 4096, counts=[4, 4], dtype="fp8", hardware=HW)
    one = rl.grouped_gemm(None, 7168, 4096, counts=[8, 0], dtype="fp8", hardware=HW)
    assert one.bytes < spread.bytes and one.time_s < spread.time_s
    masked = rl.grouped_gemm(None, 7168, 4096, counts=[8, 0], layout="masked", dtype="fp8",
                             hardware=HW)
    assert masked.time_s > one.time_s


def test_broadcasting() -> None:
    m = np.array([[64], [512]])
    n = np.array([2048, 4096, 7168])
    e = rl.grouped_gemm(m, 7168, n, groups=8, dtype="fp8", hardware=HW)
    assert e.shape == (2, 3)
    for i in range(2):
        for j in range(3):
            one = rl.grouped_gemm(int(m[i, 0]), 7168, int(n[j]), groups=8, dtype="fp8",
                                  hardware=HW)
            assert e.time_s[i, j] == one.time_s
    # counts' leading axes broadcast with k and n; the last axis is the groups
    counts = np.array([[256, 256], [400, 112], [512, 0]])
    c = rl.grouped_gemm(None, 7168, np.array([[2048], [4096]]), counts=counts, dtype="fp8",
                        hardware=HW)
    assert c.shape == (2, 3)
    assert c.time_s[1, 2] == rl.grouped_gemm(None, 7168, 4096, counts=[512, 0], dtype="fp8",
                                             hardware=HW).time_s


def test_deepseek_v3_experts_seed_000() -> None:
    # 512 tokens over 2 local experts, hidden 7168, expert FFN 2048 (up+gate fused: n = 4096)
    up = rl.grouped_gemm(256, 7168, 4096, groups=2, dtype="fp8", out_dtype="fp32", hardware=HW)
    down = rl.grouped_gemm(256, 2048, 7168, groups=2, dtype="fp8", out_dtype="bf16",
                           hardware=HW)
    # bytes: up 512*7168 + 2*7168*4096 + 512*4096*4 = 70,778,880;
    #        down 512*2048 + 2*2048*7168 + 512*7168*2 = 37,748,736 -> 108.5 MB (seed: 103.5 MB
    #        with its rounding, 88.5 MB in + 15 MB out)
    assert up.bytes == 70_778_880 and down.bytes == 37_748_736
    hw = rl.hardware(HW)
    for e in (up, down):
        # both are weight-streaming: memory-bound, between the DRAM roofline and 2x of it
        # (the seed measured 78 us and 37 us, 879 GB/s, with real routing imbalance)
        # (256-row groups leave half of each 2 x 2 CTA cluster of torch's fp8 grouped kernel
        # idle, so the up projection is compute-bound at ~3x its DRAM roofline, as the H100
        # rows of gpu_grouped_gemm_fp8 with 256-row groups measure: no bound on the ratio)
        roof = e.bytes / hw.mem_bytes_per_s
        assert roof < e.time_s
    assert 20e-6 < up.time_s < 78e-6 and 10e-6 < down.time_s < 37e-6


@pytest.mark.parametrize(
    ("args", "kwargs", "exc", "text"),
    [
        ((64, 128, 128), {"groups": 0}, ValueError, "groups must be a positive integer, got 0"),
        ((64, 128, 128), {}, ValueError, "groups is required"),
        ((0, 128, 128), {"groups": 2}, ValueError, "m_per_group must be a positive integer"),
        ((64, 128, -3), {"groups": 2}, ValueError, "n must be a positive integer, got -3"),
        ((None, 128, 128), {"counts": [3, -1]}, ValueError,
         "counts must be a non-negative integer, got -1"),
        ((None, 128, 128), {"counts": [0, 0]}, ValueError, "at least one non-zero group"),
        ((None, 128, 128), {"counts": [1.5, 2]}, ValueError, "counts must be a non-negative"),
        ((None, 128, 128), {"counts": np.array([True, False])}, TypeError, "counts must be"),
        ((None, 128, 128), {"counts": ["a", "b"]}, TypeError, "counts must be"),
        ((None, 128, 128), {"counts": 5}, ValueError, "one entry per group"),
        ((None, 128, 128), {"counts": [1, 2], "groups": 3}, ValueError,
         "groups must equal the length of counts"),
        ((64, 128, 128), {"counts": [1, 2]}, ValueError, "m_per_group must be None"),
        ((16, 128, 128), {"counts": [1, 20], "layout": "masked"}, ValueError,
         "at least the largest count"),
        ((64, 128, 128), {"groups": 2, "layout": "packed"}, KeyError, "unknown layout"),
        ((64, 128, 128), {"groups": 2, "dtype": "fp9"}, KeyError, "unknown dtype"),
        ((64, 128, 128), {"groups": [2, 3], "n": [1, 2, 3]}, ValueError, "do not broadcast"),
    ],
)
def test_bad_input(args: tuple[Any, ...], kwargs: dict[str, Any], exc: type[Exception],
                   text: str) -> None:
    if "n" in kwargs:
        args = args[:2]
    with pytest.raises(exc, match=text):
        rl.grouped_gemm(*args, hardware=HW, **kwargs)


def test_fp8_needs_a_peak() -> None:
    with pytest.raises(ValueError, match="grouped_gemm: A100 SXM 80GB has no fp8 peak"):
        rl.grouped_gemm(64, 128, 128, groups=2, dtype="fp8", hardware="A100 SXM 80GB")


def test_accumulate_reads_each_output_once_more():
    """``accumulate=True`` (beta = 1, a wgrad added to an fp32 main_grad): every C_g is read
    as well as written; FLOPs unchanged."""
    k, n, m, g = 7168, 4096, 1024, 8
    plain = rl.grouped_gemm(None, k, n, hardware="B200", counts=[m] * g, layout="looped_wgrad",
                            out_dtype="fp32")
    acc = rl.grouped_gemm(None, k, n, hardware="B200", counts=[m] * g, layout="looped_wgrad",
                          out_dtype="fp32", accumulate=True)
    # dB_g = A_g^T dC_g: A_g^T is k x m, dC_g is m x n (bf16), B_g k x n (fp32)
    assert plain.bytes == g * (k * m * 2 + m * n * 2 + k * n * 4)
    assert acc.bytes == plain.bytes + g * k * n * 4
    assert acc.flops == plain.flops == 2 * g * m * k * n
    assert acc.memory_s > plain.memory_s and acc.time_s >= plain.time_s
    uni = rl.grouped_gemm(512, 1024, 2048, groups=4, hardware="H100 SXM")
    uni_acc = rl.grouped_gemm(512, 1024, 2048, groups=4, hardware="H100 SXM", accumulate=True)
    assert uni_acc.bytes == uni.bytes + 4 * 512 * 2048 * 2  # bf16 C of each group read
    with pytest.raises(TypeError, match="accumulate"):
        rl.grouped_gemm(512, 1024, 2048, groups=4, hardware="H100 SXM", accumulate="yes")
