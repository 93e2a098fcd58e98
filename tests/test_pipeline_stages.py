"""Pipeline stages hold whole layers: the busiest stage sets each micro-batch's pace."""

from __future__ import annotations

import numpy as np
import pytest

import roofline as rl
from roofline import _core


def test_busiest_stage_layers_by_hand() -> None:
    # DeepSeek-V3 at pp=16 (Megatron-Bridge's layout: 4 decoder layers on 15 stages, 1 on the
    # last): ceil(61/16) = 4; Qwen3-235B's 94 layers over 8 stages: 12; even splits exact.
    got = _core.busiest_stage_layers(np.array([61.0, 94.0, 80.0, 61.0, 7.0]),
                                     np.array([16.0, 8.0, 4.0, 1.0, 8.0]))
    assert got.tolist() == [4.0, 12.0, 20.0, 61.0, 1.0]


def test_uneven_stages_cost_the_busiest_stage() -> None:
    # A 6-layer model over 4 stages: the busiest holds 2 layers (not 1.5), so one
    # micro-batch's layer time per stage is 2/6 of the model's, not 1/4.
    cfg = rl.transformer.TransformerConfig(
        name="tiny-6", hidden_size=256, num_layers=6, num_heads=4, num_kv_heads=4,
        head_dim=64, intermediate_size=512, vocab_size=0)
    kw = dict(hardware="H100 SXM", seq_len=512, micro_batch=1, grad_accum=8,
              optimizer_update=False)
    one = rl.transformer.estimate(cfg, "train", **kw)
    base = one._cache["train_base"]
    four = rl.transformer.estimate(cfg, "train", pp=4, **kw)
    layers = base["fwd_layers_s"] + base["bwd_layers_s"]
    head = base["fwd_head_s"] + base["bwd_head_s"]
    want = 8 * (layers * 2 / 6 + head / 4)
    assert four.step is not None
    assert four.step.compute_s - four.step.host_s == pytest.approx(want, rel=1e-9)
