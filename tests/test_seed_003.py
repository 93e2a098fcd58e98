"""Seed 003 (MHA vs MQA inference-time calculator) reproduced with roofline's API.

The seed estimates one decode step per sequence length ``i`` in ``[n_start, n)`` of a
24-layer, d=768, 16-head transformer at batch 10 in fp16, each kernel taking
``max(flops / (0.5 * peak), bytes / bandwidth, 5 us)``, and sums ``layers * step`` over
``i``. Its assumptions are an ``rl.Efficiency(0.5, 1.0, 5e-6)`` on Hardware objects with the
seed's numbers. ``_seed_*`` below is an independent restatement of the seed's formulas
(the reference); the roofline side uses only the public API.

Ops whose byte counts differ from ours (both are below the 5 us floor at the seed's
default sizes, so the times agree):

- MQA QKV projection: the seed reads ``(2/h)·d²`` weights and writes ``(2/h)·d`` outputs per
  token, leaving out the Q projection (``d²`` weights, ``d`` outputs); ``rl.gemm(bs, d,
  d + 2d/h)`` counts them.
- MQA attention-value GEMM: the seed reads the probabilities as ``bs·n·(d/h)`` elements;
  they are ``bs·h·n`` (what ``rl.attention(flash=False)`` counts).
"""

from __future__ import annotations

import numpy as np
import pytest

import roofline as rl
from roofline.ops.attention import attention_kernels

BS, H, D, L, N_START, N = 10, 16, 768, 24, 1, 1024
GPUS = {"A100": (312e12, 1935e9), "V100": (112e12, 900e9)}
EFF = rl.Efficiency(compute_fraction=0.5, memory_fraction=1.0, kernel_floor_s=5e-6)


# ------------------------------------------------------------------ reference (seed formulas)

def _seed_time_ms(flops: float, nbytes: float, tflops: float, gbs: float) -> float:
    return max(max(flops / (0.5 * tflops), nbytes / gbs) * 1e3, 0.005)


def _seed_ops(i: int, mqa: bool) -> list[tuple[float, float]]:
    bs, h, d, n = BS, H, D, i
    dh = d / h
    if mqa:
        qkv = (2 * bs * d * (1 + 2 / h) * d,
               2 * bs * d + 2 * (2 / h) * d * d + 2 * bs * (2 / h) * d)
        att1 = (2 * bs * h * dh * n, 2 * bs * h * dh + 2 * bs * n * dh + 2 * bs * h * n)
        att2 = (2 * bs * h * n * dh, 2 * bs * n * dh + 2 * bs * n * dh + 2 * bs * h * dh)
    else:
        qkv = (2 * bs * d * 3 * d, 2 * bs * d + 2 * 3 * d * d + 2 * bs * 3 * d)
        att1 = (2 * bs * h * dh * n, 2 * bs * h * dh + 2 * bs * h * n * dh + 2 * bs * h * n)
        att2 = (2 * bs * h * n * dh, 2 * bs * h * n + 2 * bs * h * n * dh + 2 * bs * h * dh)
    out = (2 * bs * d * d, 2 * bs * d + 2 * d * d + 2 * bs * d)
    softmax = (0.0, 4 * bs * h * n)
    ln = (0.0, 4 * bs * d)
    mlp = (2 * bs * d * 4 * d, 2 * bs * d + 2 * d * 4 * d + 2 * bs * 4 * d)
    return [qkv, att1, att2, out, softmax, ln, ln, ln, ln, ln, mlp, mlp]


def _seed_total_ms(gpu: str, mqa: bool) -> float:
    tflops, gbs = GPUS[gpu]
    return sum(
        L * sum(_seed_time_ms(f, b, tflops, gbs) for f, b in _seed_ops(i, mqa))
        for i in range(N_START, N)
    )


# ------------------------------------------------------------------ roofline

def _hw(gpu: str) -> rl.Hardware:
    peak, bw = GPUS[gpu]
    base = {"A100": "A100 SXM 80GB", "V100": "V100 SXM2 32GB"}[gpu]
    return rl.hardware(base).replace(bf16_flops_per_s=peak, mem_bytes_per_s=bw)


def _ours_total_s(gpu: str, mqa: bool) -> float:
    hw = _hw(gpu)
    kw = {"hardware": hw, "efficiency": EFF}
    i = np.arange(N_START, N)
    dh = D // H
    qkv = rl.gemm(BS, D, D + 2 * dh * (1 if mqa else H), "fp16", **kw)
    attn = rl.attention(BS, H, 1, i, dh, kv_heads=1 if mqa else H, flash=False,
                        dtype="fp16", **kw)
    out = rl.gemm(BS, D, D, "fp16", **kw)
    ln = rl.elementwise(BS * D, 1, 1, dtype="fp16", **kw)
    mlp = rl.gemm(BS, D, 4 * D, "fp16", **kw) + rl.gemm(BS, 4 * D, D, "fp16", **kw)
    per_layer = qkv + attn + out + 5 * ln + mlp
    return float(L * np.sum(per_layer.time_s))


@pytest.mark.parametrize("gpu", ["A100", "V100"])
def test_totals_and_speedup_within_2_percent(gpu: str) -> None:
    ref_mha, ref_mqa = _seed_total_ms(gpu, False), _seed_total_ms(gpu, True)
    mha, mqa = _ours_total_s(gpu, False) * 1e3, _ours_total_s(gpu, True) * 1e3
    assert mha == pytest.approx(ref_mha, rel=0.02)
    assert mqa == pytest.approx(ref_mqa, rel=0.02)
    assert mha / mqa == pytest.approx(ref_mha / ref_mqa, rel=0.02)
    assert mha / mqa > 1.0  # MQA is faster


def test_ops_that_match_exactly() -> None:
    """Ops with identical formulas give identical FLOPs and bytes."""
    hw, n = _hw("A100"), 777
    kw = {"hardware": hw, "efficiency": EFF}
    mha, mqa = _seed_ops(n, False), _seed_ops(n, True)
    g = rl.gemm(BS, D, 3 * D, "fp16", **kw)
    assert (g.flops, g.bytes) == pytest.approx(mha[0])
    for ref, kvh in ((mha, H), (mqa, 1)):
        rows = attention_kernels(BS, H, 1, n, D // H, kv_heads=kvh, flash=False,
                                    dtype="fp16", **kw)
        qk, sm = rows[0], rows[1]
        assert (qk["flops"], qk["bytes_read"] + qk["bytes_written"]) == pytest.approx(ref[1])
        assert sm["bytes_read"] + sm["bytes_written"] == pytest.approx(ref[4][1])
    pv = attention_kernels(BS, H, 1, n, D // H, flash=False, dtype="fp16", **kw)[2]
    assert (pv["flops"], pv["bytes_read"] + pv["bytes_written"]) == pytest.approx(mha[2])
    e = rl.elementwise(BS * D, 1, 1, dtype="fp16", **kw)
    assert e.bytes == pytest.approx(mha[5][1])
    m = rl.gemm(BS, D, 4 * D, "fp16", **kw)
    assert (m.flops, m.bytes) == pytest.approx(mha[10])


def test_documented_byte_differences() -> None:
    """MQA QKV and PV: we count the Q projection and the h·n probabilities the seed omits."""
    n = 1023
    dh = D // H
    ours_qkv = rl.gemm(BS, D, D + 2 * dh, "fp16", hardware=_hw("A100"), efficiency=EFF)
    seed_qkv = _seed_ops(n, True)[0]
    assert ours_qkv.flops == pytest.approx(seed_qkv[0])
    # difference = Q weights d² and Q outputs bs·d, 2 bytes each
    assert ours_qkv.bytes - seed_qkv[1] == pytest.approx(2 * D * D + 2 * BS * D)
    pv = attention_kernels(BS, H, 1, n, dh, kv_heads=1, flash=False, dtype="fp16",
                              hardware=_hw("A100"), efficiency=EFF)[2]
    seed_pv = _seed_ops(n, True)[2]
    # seed reads bs·n·dh probabilities, we read bs·h·n
    assert pv["bytes_read"] + pv["bytes_written"] - seed_pv[1] == pytest.approx(
        2 * BS * H * n - 2 * BS * n * dh)


def _seed_config(kv_heads: int) -> rl.transformer.TransformerConfig:
    return rl.transformer.TransformerConfig(
        name=f"seed-003 kv_heads={kv_heads}", hidden_size=D, num_layers=L, num_heads=H,
        num_kv_heads=kv_heads, head_dim=D // H, intermediate_size=4 * D, vocab_size=0,
        mlp_gated=False, norm="layernorm", rope=False,
    )


@pytest.mark.parametrize(("kv_heads", "params_b", "stored_gb", "kv_gb"), [
    # seed: 12·l·d² params; 2 bytes each; KV 2·bs·l·(d/h)·h·2·n bytes
    (H, round(12 * L * D * D / 1e9, 3), round(2 * 12 * L * D * D / 1e9, 3),
     round(2 * BS * L * (D / H) * H * 2 * N / 1e9, 2)),
    # seed: (10 + 2/h)·l·d² params; KV 2·bs·l·(d/h)·2·n bytes
    (1, round((10 + 2 / H) * L * D * D / 1e9, 3), round(2 * (10 + 2 / H) * L * D * D / 1e9, 3),
     round(2 * BS * L * (D / H) * 2 * N / 1e9, 2)),
])
def test_memory_numbers_exact(kv_heads: int, params_b: float, stored_gb: float,
                              kv_gb: float) -> None:
    cfg = _seed_config(kv_heads)
    c = cfg.param_counts()
    linear = c["attention"] + c["mlp"]  # the seed counts the blocks' linear weights only
    assert round(linear / 1e9, 3) == params_b
    assert round(2 * linear / 1e9, 3) == stored_gb
    assert round(cfg.kv_cache_bytes(BS, N, 2) / 1e9, 2) == kv_gb
