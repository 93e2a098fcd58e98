"""estimate(pipeline_head=): where a pipeline keeps the embedding and the LM head."""

from __future__ import annotations

from typing import Any

import pytest

import roofline as rl
from roofline.transformer import TransformerConfig

KW: dict[str, Any] = dict(hardware="H100 SXM", seq_len=4096, micro_batch=1, grad_accum=32,
                          dp=4, tp=1, zero=1, gpus_per_node=8)


def _model(vocab: int) -> TransformerConfig:
    """A 7B-class dense model (Llama-2-7B's dims) with the given vocabulary."""
    return TransformerConfig(name=f"dense-7b-v{vocab}", hidden_size=4096, num_layers=32,
                             num_heads=32, num_kv_heads=32, head_dim=128,
                             intermediate_size=11008, vocab_size=vocab, mlp_gated=True,
                             norm="rmsnorm", rope=True)


def _step_s(vocab: int, pp: int, head: str) -> float:
    est = rl.transformer.estimate(_model(vocab), "train", pp=pp, pipeline_head=head, **KW)
    return est.step.time_s


def test_spread_and_last_agree_without_a_pipeline():
    assert _step_s(32000, 1, "last") == pytest.approx(_step_s(32000, 1, "spread"))


def test_the_whole_head_on_the_last_stage_is_never_faster_and_grows_with_the_vocabulary():
    """With pp > 1 the pace gains (1 - 1/pp) of the head's time per micro-batch: more with a
    bigger vocabulary beside the same layers (Nemotron's 256k vs Llama-2's 32k)."""
    for pp in (2, 4):
        for vocab in (32000, 256000):
            assert _step_s(vocab, pp, "last") > _step_s(vocab, pp, "spread"), (vocab, pp)
    small = _step_s(32000, 4, "last") / _step_s(32000, 4, "spread")
    big = _step_s(256000, 4, "last") / _step_s(256000, 4, "spread")
    # per token the 32k head is 2*4096*32000 = 0.26 GFLOP, ~0.65 of a layer's 0.40, the 256k
    # head ~5.2 layers; beside 8 layers per stage the pace is (8 + h) / (8 + h/4): 1.06 and
    # 1.42 on the GEMMs alone (the optimizer step and the data-parallel tail dilute it)
    assert 1.0 < small < 1.08 and 1.25 < big < 1.45


def test_bad_pipeline_head_names_the_argument():
    with pytest.raises(ValueError, match="pipeline_head"):
        _step_s(32000, 2, "first")
    with pytest.raises(ValueError, match="pipeline_head"):
        rl.transformer.estimate(_model(32000), "prefill", hardware="H100 SXM", seq_len=128,
                                pipeline_head="last")
