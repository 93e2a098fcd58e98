"""Seed 000 (FlashMLA issue #15): decode attention and MoE expert GEMMs on H800, measured
against modeled.

The seed's question: DeepSeek-V3 decode on H800 (EP = 128, two micro-batches of 64
sequences) shows 240 µs for MLA decode attention and 78 µs / 37 µs for the two expert GEMMs;
the author's hand estimates were far lower. The seed mixes binary and decimal prefixes
("36 GFLOPS" is 36 GiFLOP = 38.65e9 FLOPs, "88.5 MB" is 88.5 MiB = 92.8e6 B, and its
"580 * 1024" turns FlashMLA's 580 TFLOP/s into 593.9e12). Everything here is SI.

Assumptions stated once:

- Attention: FlashMLA's absorbed form, one latent KV head of 576 (512 + 64 rope) shared by K
  and V (V is its first 512 columns), bf16, q_len 1, kv_len 4096 for all 64 sequences.
- MoE: 64 sequences x top-8 = 512 routed tokens per GPU, spread evenly over its 2 local
  experts: 256 tokens per expert (the seed's "evenly assigned"). fp8 e4m3 inputs; up+gate
  writes fp32, down writes bf16 (the seed says FP16: same 2 bytes). The seed's down weight
  "[2, 2048, 7196]" is a typo for 7168 (DeepSeek-V3's hidden size).
- Datasheet H800 (hardware.json): bf16 989 TFLOP/s, fp8 1979 TFLOP/s dense, 3.35 TB/s.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import roofline as rl

HW = "H800"
MEASURED_S = {"attention": 240e-6, "up_gate": 78e-6, "down": 37e-6}
ROOT = Path(__file__).resolve().parents[1]


def mla_decode(efficiency: str = "default") -> rl.Estimate:
    return rl.attention(64, 128, 1, 4096, head_dim=576, kv_heads=1, v_head_dim=512,
                        shared_kv=True, dtype="bf16", hardware=HW, efficiency=efficiency)


def up_gate(efficiency: str = "default") -> rl.Estimate:
    # 2 experts x (256 x 7168 @ 7168 x 4096): gate and up projections side by side (2 x 2048)
    return rl.gemm(256, 7168, 4096, dtype="fp8", out_dtype="fp32", batch=2, hardware=HW,
                   efficiency=efficiency)


def down(efficiency: str = "default") -> rl.Estimate:
    # 2 experts x (256 x 2048 @ 2048 x 7168), bf16 out
    return rl.gemm(256, 2048, 7168, dtype="fp8", out_dtype="bf16", batch=2, hardware=HW,
                   efficiency=efficiency)


# ------------------------------------------------------------------ FLOPs and bytes, in SI


def test_attention_flops_and_bytes() -> None:
    e = mla_decode()
    qk = 2 * 64 * 128 * 1 * 4096 * 576  # 38,654,705,664 = 38.65 GFLOP (the seed's "36": GiFLOP)
    pv = 2 * 64 * 128 * 1 * 4096 * 512  # 34,359,738,368 = 34.36 GFLOP (the seed's "32")
    assert qk == 36 * 2**30 and pv == 32 * 2**30
    assert e.flops == qk + pv == 73_014_444_032  # 73.01 GFLOP (the seed's "68")
    latent = 64 * 4096 * 576 * 2  # the cache, read once for K and V: 301,989,888 B
    q = 64 * 128 * 576 * 2  # 9,437,184 B
    o = 64 * 128 * 512 * 2  # 8,388,608 B
    lse = 64 * 128 * 4  # fp32 log-sum-exp per query row: 32,768 B
    assert e.bytes == latent + q + o + lse == 319_848_448  # 319.8 MB
    assert e.intensity == pytest.approx(228.3, abs=0.05)  # FLOP/B; bf16 ridge 989/3.35 = 295


def test_moe_flops_and_bytes() -> None:
    ug, dn = up_gate(), down()
    assert ug.flops == 2 * 2 * 256 * 7168 * 4096 == 30_064_771_072  # 30.06 GFLOP
    assert dn.flops == 2 * 2 * 256 * 2048 * 7168 == 15_032_385_536  # 15.03 GFLOP
    # up+gate: x 2·256·7168·1 = 3,670,016; W 2·7168·4096·1 = 58,720,256; out fp32
    # 2·256·4096·4 = 8,388,608
    assert ug.bytes == 3_670_016 + 58_720_256 + 8_388_608 == 70_778_880
    # down: x 2·256·2048 = 1,048,576; W 2·2048·7168 = 29,360,128; out bf16 2·256·7168·2
    # = 7,340,032
    assert dn.bytes == 1_048_576 + 29_360_128 + 7_340_032 == 37_748_736
    inputs = 3_670_016 + 58_720_256 + 1_048_576 + 29_360_128  # 92,798,976 B = 92.8 MB
    outputs = 8_388_608 + 7_340_032  # 15,728,640 B = 15.7 MB
    assert inputs / 2**20 == pytest.approx(88.5, abs=0.05)  # the seed's "88.5 MB" is MiB
    assert outputs / 2**20 == 15.0  # and its "15 MB"
    assert ug.bytes + dn.bytes == inputs + outputs == 108_527_616  # 108.5 MB


def test_grouped_gemm_agrees_when_available() -> None:
    if not hasattr(rl, "grouped_gemm"):
        pytest.skip("rl.grouped_gemm not in this build")
    g = rl.grouped_gemm(256, 2048, 7168, groups=2, dtype="fp8", hardware=HW)
    assert g.flops == down().flops


# ------------------------------------------------------------------ the seed's arithmetic


def test_seed_hand_numbers_in_si() -> None:
    flops = 73_014_444_032
    # The seed: 68 / (580 * 1024) "= 114 us". In SI at FlashMLA's 580 TFLOP/s: 125.9 µs.
    assert 68 / (580 * 1024) * 1e6 == pytest.approx(114.5, abs=0.1)
    assert flops / 580e12 == pytest.approx(125.9e-6, rel=1e-3)
    # At the dense bf16 datasheet peak: 73.8 µs; the memory side is longer: 95.5 µs.
    assert flops / 989e12 == pytest.approx(73.83e-6, rel=1e-3)
    assert 319_848_448 / 3.35e12 == pytest.approx(95.48e-6, rel=1e-3)
    # The seed's MoE bandwidth: (88.5 + 15) / (78 + 37) "= 879 GB/s". In SI:
    # 108,527,616 B / 115 µs = 943.7 GB/s = 28.2 % of 3.35 TB/s.
    assert 108_527_616 / 115e-6 == pytest.approx(943.7e9, rel=1e-4)


def test_datasheet_roofline() -> None:
    assert mla_decode("peak").time_s == pytest.approx(319_848_448 / 3.35e12)  # 95.48 µs
    assert mla_decode("peak").bound == "memory"
    assert up_gate("peak").time_s == pytest.approx(70_778_880 / 3.35e12)  # 21.13 µs
    assert down("peak").time_s == pytest.approx(37_748_736 / 3.35e12)  # 11.27 µs
    # All three are memory-bound on the datasheet: intensities 228, 425, 398 FLOP/B against
    # ridges of 295 (bf16) and 591 (fp8) FLOP/B.
    assert up_gate("peak").bound == down("peak").bound == "memory"


# ------------------------------------------------------------------ what 240 / 78 / 37 µs mean


def test_attention_240us() -> None:
    x = rl.explain(mla_decode(), MEASURED_S["attention"])
    assert x.achieved_flops_per_s == pytest.approx(304.2e12, rel=1e-3)  # 73.01e9 / 240e-6
    assert x.pct_of_peak_flops == pytest.approx(30.76, abs=0.01)  # of 989 TFLOP/s
    assert x.achieved_bytes_per_s == pytest.approx(1.3327e12, rel=1e-3)  # 319.8e6 / 240e-6
    assert x.pct_of_peak_bandwidth == pytest.approx(39.78, abs=0.01)  # of 3.35 TB/s
    assert x.pct_of_roofline == pytest.approx(39.78, abs=0.01)  # 95.48 / 240
    # At FlashMLA's own headline rates (660 TFLOP/s, 3000 GB/s) the kernel sits at the ridge:
    # max(110.6, 106.6) = 110.6 µs; the model predicts ~100-135 µs, so the measured 240 µs
    # is 1.8-2.4x the expectation. The bound under the model is memory or compute (at the
    # ridge, which one depends on the attention efficiency terms).
    assert 35 < x.pct_of_model < 75
    assert x.bound in ("memory", "compute")
    assert "look for" in x.reading
    assert f"reaches {x.pct_of_peak_bandwidth:.0f}% of the memory bandwidth" in x.reading or (
        f"reaches {x.pct_of_peak_flops:.0f}% of the dense bf16 peak" in x.reading)


def test_moe_78us_and_37us() -> None:
    ug = rl.explain(up_gate(), MEASURED_S["up_gate"])
    assert ug.achieved_bytes_per_s == pytest.approx(907.4e9, rel=1e-3)  # 70.78e6 / 78e-6
    assert ug.pct_of_peak_bandwidth == pytest.approx(27.09, abs=0.01)
    assert ug.achieved_flops_per_s == pytest.approx(385.4e12, rel=1e-3)  # 30.06e9 / 78e-6
    assert ug.pct_of_peak_flops == pytest.approx(19.48, abs=0.01)  # of 1979 TFLOP/s fp8
    dn = rl.explain(down(), MEASURED_S["down"])
    assert dn.achieved_bytes_per_s == pytest.approx(1.0202e12, rel=1e-3)  # 37.75e6 / 37e-6
    assert dn.pct_of_peak_bandwidth == pytest.approx(30.45, abs=0.01)
    assert dn.pct_of_peak_flops == pytest.approx(20.53, abs=0.01)  # 406.3 TFLOP/s
    both = rl.explain(up_gate() + down(), 115e-6, dtype="fp8")
    assert both.pct_of_peak_bandwidth == pytest.approx(28.17, abs=0.01)  # 943.7 GB/s
    # DeepGEMM streams these weights at ~2.2-2.5 TB/s in isolation (gemm_fp8_dense_h800.csv,
    # M = 64/128 with the same N, K); the model predicts 20-40 µs and 10-25 µs: the
    # measured kernels take 2-3x longer.
    for x in (ug, dn, both):
        assert x.bound == "memory"
        assert 25 < x.pct_of_model < 60
        assert "look for" in x.reading


