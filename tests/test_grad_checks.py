"""estimate(check_for_nan_in_grad=): Megatron-Core DDP's per-bucket gradient checks."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import roofline as rl
from roofline import _core
from roofline.hardware import hardware
from roofline.transformer import TransformerConfig
from roofline.transformer.grad_checks import check_buckets, grad_check_s

NEMOTRON_15B = TransformerConfig(name="nemotron-4-15b-like", hidden_size=6144, num_layers=32,
                                 num_heads=48, num_kv_heads=8, head_dim=128,
                                 intermediate_size=24576, vocab_size=256000, mlp_gated=False,
                                 norm="layernorm", rope=True)
KW: dict[str, Any] = dict(hardware="GB200", seq_len=4096, micro_batch=2, grad_accum=2, dp=64,
                          zero=1, gpus_per_node=72)


def test_bucket_walk_closes_a_bucket_once_it_reaches_the_size():
    assert _core.ddp_bucket_count(np.array([10.0, 50, 30, 5, 0, 100]), 40.0) == 2
    assert _core.ddp_bucket_count(np.array([10.0, 50, 30, 5]), 40.0) == 2  # a partial last
    assert _core.ddp_bucket_count(np.array([10.0, 5.0]), 0.0) == 1  # bucketing off
    assert _core.ddp_bucket_count(np.array([0.0]), 40.0) == 0


def test_nemotron_15b_buckets_by_hand():
    """dp 64: buckets of max(40M, 64M) = 64M elements, walked from the head: the untied head
    (1.57B) closes one; then per layer fc2 (151M, with the final norms before the last
    layer's), fc1 with its norm (151M) and o + qkv with its norm (37.7M + 50.3M) close one
    each (96); the embedding (1.57B) the last: 98. Gradients: all 15.6B parameters."""
    buckets, elements = check_buckets(NEMOTRON_15B, 1, 64, 1, 1)
    assert buckets == 98
    per_layer = 6144 * (6144 + 2 * 1024) + 6144 * 6144 + 2 * 6144 * 24576 + 4 * 6144
    assert elements == pytest.approx(32 * per_layer + 2 * 256000 * 6144 + 2 * 6144)


def test_nemo_buckets_nothing_with_the_param_gather_overlapped_with_the_step():
    """pp > 1, vp > 1, dp > 1: NeMo sets overlap_param_gather_with_optimizer_step and
    MegatronParallel disables bucketing: one bucket per model chunk of the first stage."""
    assert check_buckets(NEMOTRON_15B, 4, 2, 4, 8)[0] == 8
    # without virtual stages the first chunk is bucketed again
    assert check_buckets(NEMOTRON_15B, 4, 2, 4, 1)[0] > 1


def test_checks_add_their_time_to_the_step_and_nothing_else():
    off = rl.transformer.estimate(NEMOTRON_15B, "train", **KW)
    on = rl.transformer.estimate(NEMOTRON_15B, "train", check_for_nan_in_grad=True, **KW)
    extra = grad_check_s(NEMOTRON_15B, 1, dict(check_for_nan_in_grad=True, dp=64, pp=1,
                                               virtual_stages=1), 2.0, hardware("GB200"))
    # 98 norms over 31 GB of bf16 gradients and 2 x 98 idle-stream waits: several ms
    assert 3e-3 < extra < 20e-3
    assert on.step.time_s - off.step.time_s == pytest.approx(extra, rel=1e-6)
    assert on.step.optimizer_s - off.step.optimizer_s == pytest.approx(extra, rel=1e-6)
    assert on.flops == pytest.approx(off.flops)
    assert grad_check_s(NEMOTRON_15B, 1, dict(dp=64, pp=1, virtual_stages=1), 2.0,
                        hardware("GB200")) == 0.0


def test_bad_check_for_nan_in_grad_names_the_argument():
    with pytest.raises(ValueError, match="check_for_nan_in_grad"):  # Megatron-FSDP / FSDP2
        rl.transformer.estimate(NEMOTRON_15B, "train", check_for_nan_in_grad=True,
                                **dict(KW, zero=3))
    with pytest.raises(TypeError, match="check_for_nan_in_grad"):
        rl.transformer.estimate(NEMOTRON_15B, "train", check_for_nan_in_grad="yes", **KW)
    with pytest.raises(ValueError, match="check_for_nan_in_grad"):
        rl.transformer.estimate(NEMOTRON_15B, "prefill", hardware="GB200", seq_len=512,
                                check_for_nan_in_grad=True)
