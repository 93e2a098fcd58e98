"""cuDNN's sm90 attention on a long query under a mask (HF's compiled train step: SDPA with a
materialized 1x1x4096x4096 mask, ``is_causal=False``): the unmasked kernel's time plus one
dependent load of the mask tile per block, hand-derived on the H200 (132 SMs)."""

from __future__ import annotations

import pytest

import roofline as rl
from roofline.ops.registry import Call, Pricer, TensorArg, price
from roofline.ops.registry.memory_entries import CAT_STEP_S

HW = "H200 SXM"
QKV = TensorArg((1, 32, 4096, 128), "bf16", 2)
LSE = TensorArg((1, 32, 4096, 1), "fp32", 4)
MASK = TensorArg((1, 1, 4096, 4096), "bf16", 2)
SEED = TensorArg((), None, 8)


def _time(call: Call) -> float:
    costs, _ = price(call, Pricer(rl.hardware(HW), "default"))
    assert costs
    return sum(float(e.time_s) for _, e in costs)


def _forward(mask: TensorArg | None) -> Call:
    return Call("aten::_cudnn_attention_forward", (QKV, QKV, QKV, mask),
                concrete=("", "", "", "", "", "", "4096", "4096", "True", "0.", "False"))


def _backward(mask: TensorArg | None) -> Call:
    return Call("aten::_cudnn_attention_backward",
                (QKV, QKV, QKV, QKV, QKV, LSE, SEED, SEED, mask),
                concrete=("",) * 11 + ("4096", "4096", "0.", "False"))


def test_forward_adds_one_round_trip_per_block() -> None:
    # 32 heads x 4096 / 64 = 2048 query tiles on 132 SMs: ceil(15.5) = 16 waves,
    # each over 4096 / 128 = 32 key blocks: 16 x 32 x 0.8 us = 409.6 us
    assert CAT_STEP_S == 0.8e-6
    extra = _time(_forward(MASK)) - _time(_forward(None))
    assert extra == pytest.approx(16 * 32 * 0.8e-6, rel=1e-9)


def test_backward_adds_one_round_trip_per_block() -> None:
    # 32 heads x 4096 / 64 = 2048 key tiles: 16 waves, each over 4096 / 64 = 64 query
    # blocks: 16 x 64 x 0.8 us = 819.2 us
    extra = _time(_backward(MASK)) - _time(_backward(None))
    assert extra == pytest.approx(16 * 64 * 0.8e-6, rel=1e-9)


def test_short_query_keeps_its_own_model() -> None:
    """A 4-row query (HF StaticCache decode) is priced by the short-query floor, not by the
    long-query term: one 64-row tile."""
    q = TensorArg((1, 8, 4, 128), "bf16", 2)
    kv = TensorArg((1, 8, 4097, 128), "bf16", 2)
    mask = TensorArg((1, 1, 1, 4097), "bf16", 2)
    call = Call("aten::_cudnn_attention_forward", (q, kv, kv, mask))
    _, how = price(call, Pricer(rl.hardware(HW), "default"))
    assert "round trip per" not in how


def test_masked_kernel_stays_clocked() -> None:
    """The masked estimate is still a compute kernel the power limiter's clock reprices."""
    p = Pricer(rl.hardware(HW), "default")
    costs, _ = price(_forward(MASK), p)
    assert costs and id(costs[0][1]) in p.clocked
