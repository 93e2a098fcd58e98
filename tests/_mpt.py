"""MPT-1B as llm-foundry's yamls build it, and one Composer-style FSDP training step of it
(shared by the FSDP1 / Composer and FSDP2 copy tests)."""

from __future__ import annotations

from typing import Any

import roofline as rl

MPT_1B = rl.transformer.TransformerConfig(
    name="MPT-1B", hidden_size=2048, num_layers=24, num_heads=16, num_kv_heads=16,
    head_dim=128, intermediate_size=8192, vocab_size=50368, mlp_gated=False, norm="layernorm",
    tie_embeddings=True, rope=False, attention_bias=True, mlp_bias=True)
H100 = "H100 SXM"


def mpt_step(**kw: Any) -> Any:
    """``rl.transformer.estimate`` of MPT-1B's ZeRO-3 train step on 8 H100s (seq 2048,
    micro-batch 4, 2 micro-batches, fp32 reduce-scatter), ``kw`` overriding any of those."""
    base: dict[str, Any] = dict(seq_len=2048, micro_batch=4, grad_accum=2, dp=8, zero=3,
                                hardware=H100, gpus_per_node=8, reduce_dtype="fp32")
    base.update(kw)
    return rl.transformer.estimate(MPT_1B, "train", **base)
