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


def test_last_stage_layers_by_hand() -> None:
    # DeepSeek-V3 at pp=16: 15 x 4 = 60 decoder layers before it, 1 left (Megatron-Bridge's
    # layout: [decoder, mtp, loss]); at pp=8: 61 - 7 x 8 = 5; at pp=4: 61 - 3 x 16 = 13 (both
    # the recipe's layouts); 64 over 16: 4; 4 over 3: 2 + 2, none left; one stage holds all.
    got = _core.last_stage_layers(np.array([61.0, 61.0, 61.0, 64.0, 4.0, 10.0]),
                                  np.array([16.0, 8.0, 4.0, 16.0, 3.0, 1.0]))
    assert got.tolist() == [1.0, 5.0, 13.0, 4.0, 0.0, 10.0]


def test_mtp_and_the_loss_sit_on_the_last_stage() -> None:
    # A 6-layer model with one MTP block over 4 stages: stages hold 2, 2, 2 and 0 decoder
    # layers; the last holds the MTP block (its own head included) and the loss. The busier of
    # (2 layers + the 1/4 head share the pace without MTP gives a full stage) and (0 layers +
    # MTP + head) sets the pace: an MTP block only adds work (never a faster step than the
    # same model without it).
    cfg = rl.transformer.TransformerConfig(
        name="tiny-6-mtp", hidden_size=256, num_layers=6, num_heads=4, num_kv_heads=4,
        head_dim=64, intermediate_size=512, vocab_size=32000, mtp_layers=1)
    kw = dict(hardware="H100 SXM", seq_len=512, micro_batch=1, grad_accum=8,
              optimizer_update=False)
    one = rl.transformer.estimate(cfg, "train", **kw)
    base = one._cache["train_base"]
    mtp = base["fwd_mtp_s"] + base["bwd_mtp_s"]
    assert mtp > 0
    layers = base["fwd_layers_s"] + base["bwd_layers_s"] - mtp  # the 6 decoder layers
    head = base["fwd_head_s"] + base["bwd_head_s"]
    assert one.step is not None  # pp=1: everything on the one stage
    assert one.step.compute_s - one.step.host_s == pytest.approx(
        8 * (layers + mtp + head), rel=1e-9)
    four = rl.transformer.estimate(cfg, "train", pp=4, **kw)
    assert four.step is not None
    want = 8 * max(layers * 2 / 6 + head / 4, mtp + head)
    assert four.step.compute_s - four.step.host_s == pytest.approx(want, rel=1e-9)


@pytest.mark.parametrize("pp", [1, 2, 4, 8, 16])
def test_more_mtp_blocks_never_make_a_step_faster(pp: int) -> None:
    # DeepSeek-V3: where a full stage is the busiest, one MTP block on the last stage used
    # to drop the full stages' head share from the pace (ep=64, pp=16, dp=64 on H100s:
    # 2.2488 -> 2.2447 s per step; here pp=4 and 8 failed); monotone in mtp_layers
    ds = rl.transformer.config("DeepSeek-V3")
    t = [rl.transformer.estimate(ds.replace(mtp_layers=m), "train", 1, seq_len=4096,
                                 hardware="H100 SXM", ep=8, pp=pp, dp=8).time_s
         for m in (0, 1, 2)]
    assert t[0] <= t[1] <= t[2]


def test_mtp_layers_bounded_like_num_layers() -> None:
    ds = rl.transformer.config("DeepSeek-V3")
    with pytest.raises(ValueError, match="mtp_layers must be a non-negative integer no larger "
                       "than 100000, got 1000000"):
        ds.replace(mtp_layers=10**6)  # was accepted, then failed inside wall_time


def test_busiest_stage_takes_the_longest_layers_by_hand() -> None:
    # 61 layers, 3 short (1 s forward, 2 s backward each) then 58 long (3 s, 6 s): a stage of
    # 4 holds 4 long layers (12 s forward, 24 s backward), not 4/61 of the total; a stage of
    # 60 holds the 58 long and 2 short; one kind only: n/L of the total.
    from roofline.transformer.training import stage_layers_s
    base = {"num_layers": 61.0, "heavy_layers": 58.0, "fwd_heavy_layer_s": 3.0,
            "bwd_heavy_layer_s": 6.0}
    fwd, bwd = 3 * 1.0 + 58 * 3.0, 3 * 2.0 + 58 * 6.0
    assert stage_layers_s(base, fwd, 4.0, False) == pytest.approx(12.0)
    assert stage_layers_s(base, bwd, 4.0, True) == pytest.approx(24.0)
    assert stage_layers_s(base, fwd, 60.0, False) == pytest.approx(58 * 3.0 + 2 * 1.0)
    assert stage_layers_s(base, fwd, 61.0, False) == pytest.approx(fwd)
    one_kind = {"num_layers": 61.0, "heavy_layers": 61.0, "fwd_heavy_layer_s": 3.0}
    assert stage_layers_s(one_kind, 183.0, 4.0, False) == pytest.approx(12.0)


def test_deepseek_v3_busiest_stage_is_moe_layers() -> None:
    # DeepSeek-V3 (3 dense + 58 MoE layers) at pp=16 without MTP: one micro-batch's stage
    # time is 4 MoE layers plus 1/16 of the head, above 4/61 of all layers
    model = rl.transformer.config("DeepSeek-V3").replace(mtp_layers=0)
    kw = dict(hardware="B200", seq_len=4096, micro_batch=1, grad_accum=32, ep=8,
              optimizer_update=False)
    base = rl.transformer.estimate(model, "train", **kw)._cache["train_base"]
    moe = base["fwd_heavy_layer_s"] + base["bwd_heavy_layer_s"]
    assert base["heavy_layers"] == 58.0
    assert moe > (base["fwd_layers_s"] + base["bwd_layers_s"]) / 61
    est = rl.transformer.estimate(model, "train", pp=16, **kw)
    assert est.step is not None
    head = base["fwd_head_s"] + base["bwd_head_s"]
    assert est.step.compute_s - est.step.host_s == pytest.approx(32 * (4 * moe + head / 16),
                                                                 rel=1e-9)
