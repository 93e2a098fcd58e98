"""HybridEP's host waits (Megatron-Core's flex dispatcher, DeepEP hybrid-ep): where the
host waits for the device in each MoE layer, and what that exposes against the all-to-all
dispatcher's single forward wait."""

from __future__ import annotations

import numpy as np
import pytest

import roofline as rl
from roofline._params.resolve import resolve
from roofline.transformer.config import TransformerConfig
from roofline.transformer.layers import moe_mlp
from roofline.transformer.moe_sync import SYNC_POINTS, sync_exposed_s
from roofline.transformer.program import Program

TINY = TransformerConfig(name="tiny-moe", hidden_size=64, num_layers=2, num_heads=4,
                         num_kv_heads=4, head_dim=16, intermediate_size=128, vocab_size=0,
                         num_experts=8, experts_per_token=2, moe_intermediate_size=32)


def _layer(ep: int = 4) -> Program:
    ops = Program(train=True, recipe=None)
    moe_mlp(ops, 0, TINY, 16, 1, ep, 2.0, False, 0.0)
    return ops


def test_sync_rows_exist_in_the_expert_parallel_layer() -> None:
    names = [r[1] for r in _layer().rows]
    for points in SYNC_POINTS.values():
        for row, after in points:
            assert row in names and after in (0, 1)
    # every backward wait sits before a backward row (the backward splits pieces before them)
    assert all(row.endswith(" bwd") and after == 0
               for (_, backward), pts in SYNC_POINTS.items() if backward for row, after in pts)


def test_zero_time_kernels_each_wait_adds_one_kernel_gap() -> None:
    # With zero-time kernels the host is behind everywhere: every launch sequence's wall is
    # its host calls plus its last kernel's gap, whatever the cuts. Two layers: the
    # all-to-all dispatcher runs 2 forward segments (one wait per layer) and 1 backward
    # sequence; HybridEP 3 forward segments per layer (6) and, backward, the first layer's
    # piece before its first wait, then per layer 2 waits (the second layer's first piece
    # joins the first layer's last): 5. 11 - 3 = 8 more gaps, nothing else.
    ops = _layer()
    zero = np.zeros(len(ops.rows))
    hw = rl.hardware("B200")
    a2a = sync_exposed_s(ops, zero, [("moe", [0, 1])], hw, "default")
    hyb = sync_exposed_s(ops, zero, [("moe", [0, 1])], hw, "default", dispatcher="hybridep")
    gap = resolve("B200", "default")[2].host.kernel_gap_s
    assert hyb - a2a == pytest.approx(8 * gap, rel=1e-9)


def test_long_kernels_hide_the_host_only_without_waits() -> None:
    # 1 ms per row: the host is far ahead of the GPU. The all-to-all dispatcher's backward
    # (no wait) then exposes nothing; HybridEP's backward waits twice per layer and exposes
    # the host calls before each first launch after a wait, so it exposes more, and each of
    # its forward segments starts from an idle stream too.
    ops = _layer()
    t = np.full(len(ops.rows), 1e-3)
    hw = rl.hardware("B200")
    one = sync_exposed_s(ops, t, [("moe", [0])], hw, "default")
    hyb = sync_exposed_s(ops, t, [("moe", [0])], hw, "default", dispatcher="hybridep")
    assert 0.0 < one < hyb
    two = sync_exposed_s(ops, t, [("moe", [0, 1])], hw, "default", dispatcher="hybridep")
    assert two > hyb  # more layers, more waits


def test_estimate_takes_the_dispatcher_and_refuses_bad_ones() -> None:
    kw = dict(hardware="GB200", seq_len=512, micro_batch=1, ep=4, dp=4)
    base = rl.transformer.estimate("Qwen3-30B-A3B", "train", **kw)
    hyb = rl.transformer.estimate("Qwen3-30B-A3B", "train", moe_dispatcher="hybridep", **kw)
    # same kernels (HybridEP's are priced as the all-to-all dispatcher's), more host waits
    assert np.array_equal(base.columns["time_s"], hyb.columns["time_s"])
    assert hyb.step.host_s > base.step.host_s
    assert hyb.step.time_s > base.step.time_s
    with pytest.raises(ValueError, match="moe_dispatcher"):
        rl.transformer.estimate("Qwen3-30B-A3B", "train", moe_dispatcher="deepep", **kw)
    with pytest.raises(ValueError, match="moe_dispatcher"):
        rl.transformer.estimate("Qwen3-30B-A3B", "train", moe_dispatcher="hybridep",
                                hardware="GB200", seq_len=512, micro_batch=1)
    with pytest.raises(ValueError, match="moe_dispatcher"):
        rl.transformer.estimate("Qwen3-30B-A3B", "prefill", moe_dispatcher="hybridep",
                                hardware="GB200", seq_len=512, ep=4)
    with pytest.raises(ValueError, match="moe_dispatcher"):
        sync_exposed_s(_layer(), np.zeros(len(_layer().rows)), [("moe", [0])],
                       rl.hardware("B200"), "default", dispatcher=None)  # type: ignore[arg-type]
