"""Seed 004 (after-session exercises): relu(A @ B) fusion, C @ relu(A @ B) intensity, and
the order of C @ A @ B, reproduced with rl.fusion."""

from __future__ import annotations

import pytest

import roofline as rl
from roofline.fusion import Graph

KV_HEAD, SEQUENCE = 128, 10000
H100 = rl.hardware("H100 SXM")
# ridge point of the bf16 roofline: 989.5e12 / 3.35e12 = 295.4 FLOP/B
RIDGE = H100.bf16_flops_per_s / H100.mem_bytes_per_s


@pytest.mark.parametrize("n", [128, 512, 4096])
def test_relu_gemm_bytes_6_vs_10_n_squared(n: int) -> None:
    c = rl.fusion.epilogue_fusion(n, n, n, op="relu", hardware=H100)
    # 2 B/element: fused reads A, B and writes relu(C): 3·2·n² = 6·n²
    assert c.candidate.bytes == 6 * n * n
    # unfused also writes C and reads it back: + 2·2·n² = 10·n²
    assert c.baseline.bytes == 10 * n * n


@pytest.mark.parametrize("n", [64, 256, 512, 886])
def test_forty_percent_faster_while_memory_bound(n: int) -> None:
    c = rl.fusion.epilogue_fusion(n, n, n, hardware=H100, efficiency="peak")
    assert str(rl.gemm(n, n, n, hardware=H100, efficiency="peak").bound) == "memory"
    # time proportional to bytes: 1 - 6/10 = 40 % less time
    assert c.saving == pytest.approx(0.4, rel=1e-9)


def test_fusion_stops_mattering_past_the_ridge() -> None:
    # GEMM intensity 2n³ / 6n² = n/3 reaches the ridge at n = 3·295.4 = 886.1
    n_ridge = 3 * RIDGE
    assert n_ridge == pytest.approx(886.1, abs=0.05)
    assert str(rl.gemm(886, 886, 886, hardware=H100, efficiency="peak").bound) == "memory"
    assert str(rl.gemm(887, 887, 887, hardware=H100, efficiency="peak").bound) == "compute"
    # past it, saving = (4n²/BW) / (2n³/P + 4n²/BW) = 2 / (n/R + 2)
    for n in (1024, 4096, 16384):
        c = rl.fusion.epilogue_fusion(n, n, n, hardware=H100, efficiency="peak")
        assert c.saving == pytest.approx(2 / (n / RIDGE + 2), rel=1e-6)
    # under 10 % from n = 18·R = 5317 on
    assert 18 * RIDGE == pytest.approx(5316.7, abs=0.1)
    # the default (calibrated) model agrees on the trend: > 10 % at 4096, < 10 % at 6144,
    # and more than 20 % of the GPU time for small n, where the relu kernel's fixed time
    # (~1.4 us on the GPU, ~5 us per call) dominates
    sav = {n: rl.fusion.epilogue_fusion(n, n, n, hardware=H100).saving for n in (256, 4096, 6144)}
    assert sav[256] > 0.2 and sav[4096] > 0.1 > sav[6144]


def attention_like() -> Graph:
    g = Graph("C @ relu(A @ B)")
    g.input("A", (SEQUENCE, KV_HEAD))
    g.input("B", (KV_HEAD, SEQUENCE))
    g.input("C", (KV_HEAD, SEQUENCE))
    g.gemm("S", "A", "B")  # [SEQUENCE, SEQUENCE]
    g.elementwise("P", ["S"], op="relu")
    g.gemm("O", "C", "P")  # [KV_HEAD, SEQUENCE]
    return g


def test_attention_like_bytes_flops_and_intensity() -> None:
    g = attention_like()
    io = sum(g.tensors[t].nbytes for t in ("A", "B", "C", "O"))
    assert io == 8 * KV_HEAD * SEQUENCE  # 4 tensors of 2·KV_HEAD·SEQUENCE bytes
    fused = g.estimate([["S", "P", "O"]], hardware=H100)
    # two products of 2·KV_HEAD·SEQUENCE² each
    assert fused.flops == 4 * KV_HEAD * SEQUENCE**2
    # fused: intensity ≈ SEQUENCE / 2 (+ the flash kernel's fp32 log-sum-exp per row)
    assert fused.intensity == pytest.approx(SEQUENCE / 2, rel=0.01)
    # relu in the first GEMM's epilogue, scores through HBM once: + 2·2·SEQUENCE² bytes
    through_hbm = g.estimate([["S", "P"]], hardware=H100)
    assert through_hbm.bytes == 4 * SEQUENCE**2 + 8 * KV_HEAD * SEQUENCE
    assert through_hbm.intensity == pytest.approx(KV_HEAD, rel=0.03)  # 124.8
    # nothing fused (the relu also a kernel): twice the score traffic, intensity ≈ KV_HEAD/2
    assert g.estimate(hardware=H100).intensity == pytest.approx(KV_HEAD / 2, rel=0.03)
    # below the H100's ridge (295 FLOP/B) the materialized form is memory-bound
    assert through_hbm.intensity < RIDGE < fused.intensity
    # peak roofline: compute-bound fused beats memory-bound materialized; the default model's
    # flash kernel runs far below the GEMM peak (one head: 79 query blocks for 132 SMs), so
    # it does not win here (see the notebook)
    peak = [g.estimate(grp, hardware=H100, efficiency="peak").time_s
            for grp in ([["S", "P", "O"]], [["S", "P"]])]
    assert peak[0] < peak[1] / 2


def test_chain_order_without_relu() -> None:
    # C [KV_HEAD x SEQ] @ A [SEQ x KV_HEAD] @ B [KV_HEAD x SEQ]
    ch = rl.fusion.matmul_chain([KV_HEAD, SEQUENCE, KV_HEAD, SEQUENCE], names=["C", "A", "B"],
                                hardware=H100)
    right = ch.plan("C @ (A @ B)")
    left = ch.plan("(C @ A) @ B")
    assert right.flops == 4 * KV_HEAD * SEQUENCE**2  # 5.12e10
    assert left.flops == 4 * KV_HEAD**2 * SEQUENCE  # 6.55e8, SEQUENCE/KV_HEAD = 78x fewer
    assert ch.best[0] == "(C @ A) @ B"
    assert ch.compare().speedup > 10
    # (C @ A) is only KV_HEAD x KV_HEAD: the left order never materializes SEQUENCE²
    assert left.bytes < right.bytes / 30
