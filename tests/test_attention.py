"""rl.attention: hand-derived FLOPs and bytes, causal counts, GQA/MQA/MLA, flash vs materialized."""

from __future__ import annotations

import numpy as np
import pytest

import roofline as rl
from roofline.ops.attention import attention_kernels, attention_pairs

PEAK = "peak"
HW = "H100 SXM"


def test_mha_forward_flash_by_hand() -> None:
    # b=2, h=4, q=kv=8, d=16, bf16 (2 bytes)
    e = rl.attention(2, 4, 8, 8, 16, hardware=HW, efficiency=PEAK)
    # FLOPs = 2·b·h·q·kv·(d + dv) = 2·2·4·8·8·32 = 32768
    assert e.flops == 32768
    # Q 2·4·8·16·2 = 2048, K 2048, V 2048, O 2048, LSE 2·4·8·4 = 256
    assert e.bytes == 4 * 2048 + 256


def test_causal_counts_exact() -> None:
    # q == kv = 5: 1+2+3+4+5 = 15 pairs
    assert attention_pairs(5, 5, causal=True) == 15
    # q=3 against kv=5 (bottom-right): query i sees 5-3+i+1 = 3, 4, 5 keys -> 12
    assert attention_pairs(3, 5, causal=True) == 12
    # decode q=1: all kv keys
    assert attention_pairs(1, 4096, causal=True) == 4096
    # q=5 > kv=3: rows see 0, 0, 1, 2, 3 keys -> 6 = 3·4/2
    assert attention_pairs(5, 3, causal=True) == 6
    assert attention_pairs(4, 7) == 28


def test_causal_about_halves_prefill() -> None:
    full = rl.attention(1, 8, 4096, 4096, 128, hardware=HW)
    causal = rl.attention(1, 8, 4096, 4096, 128, causal=True, hardware=HW)
    # s(s+1)/2 / s² = 4097 / 8192
    assert causal.flops / full.flops == pytest.approx(4097 / 8192)
    assert causal.bytes == full.bytes  # every key is still read once


def test_gqa_reads_kv_once_per_kv_head() -> None:
    # decode: b=4, h=32, q=1, kv=1000, d=128
    mha = rl.attention(4, 32, 1, 1000, 128, hardware=HW, efficiency=PEAK)
    gqa = rl.attention(4, 32, 1, 1000, 128, kv_heads=8, hardware=HW, efficiency=PEAK)
    mqa = rl.attention(4, 32, 1, 1000, 128, kv_heads=1, hardware=HW, efficiency=PEAK)
    assert mha.flops == gqa.flops == mqa.flops
    kv_per_head = 2 * 4 * 1000 * 128 * 2  # K and V: 2·b·kv·d·2 bytes = 2,048,000
    assert mha.bytes - gqa.bytes == pytest.approx((32 - 8) * kv_per_head)
    assert gqa.bytes - mqa.bytes == pytest.approx((8 - 1) * kv_per_head)


def test_mla_absorbed_decode_seed_000_shape() -> None:
    # FlashMLA: b=64, h=128, q=1, kv=4096, d=576, dv=512, one latent cache read once
    e = rl.attention(64, 128, 1, 4096, 576, kv_heads=1, v_head_dim=512, shared_kv=True,
                     hardware="H800", efficiency=PEAK)
    # 2·64·128·4096·(576 + 512) = 73,014,444,032 FLOPs (seed: "36 + 32 GFLOPS")
    assert e.flops == 2 * 64 * 128 * 4096 * (576 + 512) == 73_014_444_032
    q = 64 * 128 * 576 * 2          # 9,437,184
    cache = 64 * 4096 * 576 * 2      # 301,989,888: read once for K and V
    out = 64 * 128 * 512 * 2         # 8,388,608
    lse = 64 * 128 * 4               # 32,768
    assert e.bytes == q + cache + out + lse
    not_shared = rl.attention(64, 128, 1, 4096, 576, kv_heads=1, v_head_dim=512,
                              hardware="H800", efficiency=PEAK)
    assert not_shared.bytes - e.bytes == 64 * 4096 * 512 * 2


def test_flash_vs_materialized_bytes() -> None:
    # b=1, h=2, q=kv=64, d=32
    f = rl.attention(1, 2, 64, 64, 32, hardware=HW, efficiency=PEAK)
    m = rl.attention(1, 2, 64, 64, 32, flash=False, hardware=HW, efficiency=PEAK)
    assert m.flops == f.flops
    qkvo = 4 * (1 * 2 * 64 * 32 * 2)  # 32768
    scores = 1 * 2 * 64 * 64 * 2      # 16384 per pass of S or P
    # QK^T writes S, softmax reads S writes P, PV reads P: 4 passes
    assert m.bytes == qkvo + 4 * scores
    assert f.bytes == qkvo + 1 * 2 * 64 * 4
    rows = attention_kernels(1, 2, 64, 64, 32, flash=False, hardware=HW, efficiency=PEAK)
    assert [r["kernel"] for r in rows] == ["QK^T", "softmax", "PV"]
    # The default model runs SDPA's math path (fp32 upcast, see test_attention_backends.py).
    rows = attention_kernels(1, 2, 64, 64, 32, flash=False, hardware=HW)
    assert rows[0]["kernel"] == "upcast Q, K, V" and rows[0]["backend"] == "math"
    assert sum(r["time_s"] for r in rows) == pytest.approx(
        float(rl.attention(1, 2, 64, 64, 32, flash=False, hardware=HW).time_s))


def test_materialized_causal_computes_every_score() -> None:
    m = rl.attention(1, 2, 64, 64, 32, causal=True, flash=False, hardware=HW)
    assert m.flops == 2 * 2 * 64 * 64 * 64  # 2·h·q·kv·(d+dv), unmasked


def test_backward_flops_ratio() -> None:
    fwd = rl.attention(2, 16, 2048, 2048, 128, causal=True, hardware=HW)
    bwd = rl.attention(2, 16, 2048, 2048, 128, causal=True, backward=True, hardware=HW)
    assert bwd.flops / fwd.flops == pytest.approx(2.5)  # 2·P·(3d+2dv) / 2·P·(d+dv)
    mat_f = rl.attention(2, 16, 512, 512, 64, flash=False, hardware=HW)
    mat_b = rl.attention(2, 16, 512, 512, 64, flash=False, backward=True, hardware=HW)
    assert mat_b.flops / mat_f.flops == pytest.approx(2.0)  # no recomputation
    rows = attention_kernels(2, 16, 2048, 2048, 128, backward=True, hardware=HW)
    assert len(rows) == 3


def test_arrays_broadcast_and_match_scalars() -> None:
    kv = np.array([128, 1024, 8192])
    e = rl.attention(8, 32, 1, kv, 128, kv_heads=8, hardware=HW)
    assert e.shape == (3,)
    for i, k in enumerate(kv):
        s = rl.attention(8, 32, 1, int(k), 128, kv_heads=8, hardware=HW)
        assert e.time_s[i] == pytest.approx(s.time_s)
    grid = rl.attention(np.array([[1], [2]]), 32, 1, kv, 128, hardware=HW)
    assert grid.shape == (2, 3)


def test_decode_is_memory_bound_prefill_compute_bound() -> None:
    assert rl.attention(8, 32, 1, 8192, 128, kv_heads=8, hardware=HW).bound == "memory"
    assert rl.attention(1, 32, 8192, 8192, 128, causal=True, hardware=HW).bound == "compute"


@pytest.mark.parametrize(("kwargs", "exc", "text"), [
    ({"heads": 0}, ValueError, "heads must be a positive integer, got 0"),
    ({"batch": -1}, ValueError, "batch must be a positive integer, got -1"),
    ({"q_len": 0}, ValueError, "q_len must be a positive integer, got 0"),
    ({"kv_len": 0}, ValueError, "kv_len must be a positive integer, got 0"),
    ({"head_dim": 1.5}, ValueError, "head_dim must be a positive integer, got 1.5"),
    ({"kv_heads": 3}, ValueError, "kv_heads must divide heads, got kv_heads=3, heads=8"),
    ({"kv_heads": 0}, ValueError, "kv_heads must be a positive integer, got 0"),
    ({"v_head_dim": 80, "shared_kv": True}, ValueError, "v_head_dim <= head_dim"),
    ({"causal": 1}, TypeError, "causal must be a bool"),
    ({"heads": "8"}, TypeError, "heads must be a positive integer"),
    ({"dtype": "bf17"}, KeyError, "unknown dtype"),
])
def test_bad_input(kwargs: dict, exc: type, text: str) -> None:
    args = {"batch": 1, "heads": 8, "q_len": 16, "kv_len": 16, "head_dim": 64}
    args.update(kwargs)
    with pytest.raises(exc, match=text.replace("(", r"\(").replace(")", r"\)")):
        rl.attention(**args, hardware=HW)


def test_missing_peak_raises() -> None:
    with pytest.raises(ValueError, match="no fp8 peak"):
        rl.attention(1, 8, 16, 16, 64, dtype="fp8", hardware="A100 SXM 80GB")
