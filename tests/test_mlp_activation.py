"""estimate(mlp_activation=): a non-gated MLP's squared ReLU as NeMo 2.x runs it, eagerly."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import roofline as rl
from roofline.transformer import TransformerConfig

KW: dict[str, Any] = dict(hardware="H100 SXM", seq_len=4096, micro_batch=2, grad_accum=2,
                          dp=8, tp=2, zero=1, gpus_per_node=8)


def _model(gated: bool = False) -> TransformerConfig:
    """Nemotron-4-15B's dims (squared-ReLU 2-matrix MLP) or a gated twin."""
    return TransformerConfig(name="nemotron-like", hidden_size=6144, num_layers=32,
                             num_heads=48, num_kv_heads=8, head_dim=128,
                             intermediate_size=24576, vocab_size=256000, mlp_gated=gated,
                             norm="layernorm", rope=True)


def _rows(est: Any, name: str) -> dict[str, float]:
    """The bytes and kernel counts of a dense-layer row and of its backward row."""
    out = {}
    for i, (g, row, _) in enumerate(est.rows):
        if est.groups[g][0] == "dense" and row in (name, name + " bwd"):
            out[row] = float(est.columns["bytes"][i])
    return out


def test_eager_squared_relu_moves_the_bytes_counted_from_the_source():
    """Per element of the activation (tokens x intermediate / tp, bf16): fused 2 + 2 bytes
    forward and 2 + 2 + 2 backward; relu then pow 4 + 4 forward; pow's backward (copy,
    x2, x grad) and relu's threshold_backward 4 + 4 + 6 + 6 backward."""
    fused = rl.transformer.estimate(_model(), "train", **KW)
    eager = rl.transformer.estimate(_model(), "train", mlp_activation="relu_pow", **KW)
    n = 2 * 4096 * 24576 / 2  # this GPU's tokens (micro-batch 2 x 4096) x intermediate / tp
    f, e = _rows(fused, "act"), _rows(eager, "act (relu, pow)")
    assert f["act"] == pytest.approx(4 * n) and f["act bwd"] == pytest.approx(6 * n)
    assert e["act (relu, pow)"] == pytest.approx(8 * n)
    assert e["act (relu, pow) bwd"] == pytest.approx(20 * n)


def test_eager_squared_relu_only_adds_time_and_keeps_the_flops():
    fused = rl.transformer.estimate(_model(), "train", **KW)
    eager = rl.transformer.estimate(_model(), "train", mlp_activation="relu_pow", **KW)
    assert eager.step.time_s > fused.step.time_s
    assert eager.flops == pytest.approx(fused.flops)
    # the same activation memory: relu's output is what autograd keeps, as the fused input
    assert eager.step.memory["activations_bytes"] == pytest.approx(
        fused.step.memory["activations_bytes"])
    # inference runs the two forward kernels only
    pf = rl.transformer.estimate(_model(), "prefill", hardware="H100 SXM", seq_len=4096,
                                 mlp_activation="relu_pow")
    assert not any(r.endswith(" bwd") for _, r, _ in pf.rows)
    assert np.isfinite(pf.time_s)


def test_bad_mlp_activation_names_the_argument():
    with pytest.raises(ValueError, match="mlp_activation"):
        rl.transformer.estimate(_model(), "train", mlp_activation="gelu", **KW)
    with pytest.raises(ValueError, match="mlp_activation"):  # a gated MLP has no such kernel
        rl.transformer.estimate(_model(gated=True), "train", mlp_activation="relu_pow", **KW)
    with pytest.raises(ValueError, match="mlp_activation"):  # a Megatron kernel choice
        rl.transformer.estimate(_model(), "prefill", hardware="H100 SXM", seq_len=512,
                                runtime="hf", mlp_activation="relu_pow")
