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


# --- host time per pipeline stage (issue #24, session 12) ----------------------------------

_HOST = {"host_heavy_layer_s": 3e-3, "host_layers_s": 2 * 3e-3 + 2 * 1e-3,
         "hook_heavy_layer_s": 0.2e-3, "hook_layers_s": 2 * 0.2e-3,
         "host_mtp_s": 2e-3, "hook_mtp_s": 0.1e-3, "host_pass_start_s": 0.5e-3}


def test_stage_host_by_hand() -> None:
    # 4 decoder layers, 2 of them heavy (3 ms of exposed host time each, 0.2 ms of forward
    # pre-hooks), 2 light (1 ms, no hooks); each backward pass of a stage starts at 0.5 ms.
    # pp=2: the busiest stage holds the 2 heavy layers: 2 x 3 + 0.5 = 6.5 ms (6.9 with the
    # hooks), not the mean of the two stages (2 x 3 + 2 x 1 + 2 x 0.5) / 2 = 4.5 ms; the other
    # stage's 2 light layers expose 2 x 1 + 0.5 = 2.5 ms. Two virtual stages: two passes, one
    # more start. A last stage of 1 layer with the MTP block: 3 + 0.5 + 2 (+ 0.2 + 0.1).
    from roofline.transformer.training import stage_host_s
    base = {"num_layers": 4.0, "heavy_layers": 2.0, **_HOST}
    assert stage_host_s(base, 2.0, False, False) == pytest.approx(6.5e-3)
    assert stage_host_s(base, 2.0, True, False) == pytest.approx(6.9e-3)
    assert stage_host_s(base, 2.0, False, False, 2.0) == pytest.approx(7.0e-3)
    assert stage_host_s(base, 4.0, False, False) == pytest.approx(8.5e-3)
    assert stage_host_s(base, 1.0, True, True) == pytest.approx(5.8e-3)
    light = dict(base, host_heavy_layer_s=1e-3, host_layers_s=4e-3)  # one kind of host load
    assert stage_host_s(light, 2.0, False, False) == pytest.approx(2.5e-3)


def _compose(base: dict, pp: int) -> dict:
    from roofline.transformer.training import compose
    out = compose(base, rl.hardware("H100 SXM"), dp=1, pp=pp, tp=1, ep=1, cp=1, zero=0,
                  recompute=0, micro_batch=1, grad_accum=8, virtual_stages=1, seq_len=512,
                  optimizer="adam", overlap=True, sequence_parallel=0,
                  optimizer_update=False, gpus_per_node=8, link_bytes_per_s=4e11,
                  network_bytes_per_s=5e10, latency_s=1e-5, peak_flops_per_s=1e15)
    return {k: float(np.asarray(v).reshape(-1)[0]) for k, v in out.items()}


def test_the_stage_busiest_with_its_host_time_sets_the_pace() -> None:
    # tiny-6 with one MTP block over 4 stages: stages of 2, 2, 2 and 0 decoder layers, the last
    # with the MTP block and the head. 1 ms of exposed host time per decoder layer (one kind),
    # 0.5 ms per backward pass: a full stage exposes 2.5 ms, the last stage the MTP block's
    # host time h + 0.5 ms. The pace is the busier of the two in compute plus host:
    # with h past the full stage's compute lead the last stage sets it; at pp=1 the one stage
    # exposes base["host_s"] (the whole pass's), not a per-layer sum.
    cfg = rl.transformer.TransformerConfig(
        name="tiny-6-mtp", hidden_size=256, num_layers=6, num_heads=4, num_kv_heads=4,
        head_dim=64, intermediate_size=512, vocab_size=32000, mtp_layers=1)
    base = dict(rl.transformer.estimate(cfg, "train", hardware="H100 SXM", seq_len=512,
                                        micro_batch=1, grad_accum=8,
                                        optimizer_update=False)._cache["train_base"])
    mtp = base["fwd_mtp_s"] + base["bwd_mtp_s"]
    layers = base["fwd_layers_s"] + base["bwd_layers_s"] - mtp
    head = base["fwd_head_s"] + base["bwd_head_s"]
    full, last = layers * 2 / 6 + head / 4, mtp + head
    base.update(host_heavy_layer_s=1e-3, host_layers_s=6e-3, host_pass_start_s=0.5e-3,
                host_s=7e-3)
    for h in (0.0, max(full - last, 0.0) + 10e-3):
        base["host_mtp_s"] = h
        got = _compose(base, 4)
        want = max(full + 2.5e-3, last + h + 0.5e-3)
        assert got["compute_s"] == pytest.approx(8 * want, rel=1e-9)
        assert got["host_s"] == pytest.approx(8 * (2.5e-3 if want == full + 2.5e-3
                                                   else h + 0.5e-3), rel=1e-9)
    one = _compose(base, 1)
    assert one["host_s"] == pytest.approx(8 * 7e-3, rel=1e-9)
    assert one["compute_s"] == pytest.approx(8 * (layers + mtp + head + 7e-3), rel=1e-9)


def test_stage_backward_exposure_is_linear_in_its_layers() -> None:
    # Qwen3-30B-A3B (one kind of layer, host-bound under MXFP8 with 16 local experts) at
    # pp=4: each stage's micro-batch exposes its 12 layers' per-layer terms plus one
    # backward pass's start
    cfg = rl.transformer.config("Qwen3-30B-A3B")
    est = rl.transformer.estimate(cfg, "train", hardware="B200", seq_len=4096, micro_batch=1,
                                  ep=8, dp=8, gpus_per_node=8, linear_recipe="mxfp8_te",
                                  pp=4, grad_accum=8, zero=1, overlap_param_gather=True)
    base = est._cache["train_base"]
    assert base["host_pass_start_s"] > 0 and base["host_heavy_layer_s"] > 0
    # one kind of layer: the sum over the layers is 48 x the per-layer term
    assert base["host_layers_s"] == pytest.approx(48 * base["host_heavy_layer_s"], rel=1e-9)
    # pp=4: 12 layers per stage, one backward pass per micro-batch; Megatron's forward
    # pre-hooks on (ZeRO-1 with overlap_param_gather)
    per = base["host_heavy_layer_s"] + base["hook_heavy_layer_s"]
    assert est.step is not None
    assert est.step.host_s == pytest.approx(8 * (12 * per + base["host_pass_start_s"]),
                                            rel=1e-9)


def test_backward_pass_exposure_from_idle_is_linear_in_layers() -> None:
    # identical layers launched one after another from an idle stream: e(n) = c + n·d, the
    # form stage_host_terms extrapolates from n = 1 and 2 (checked at n = 3 and 5)
    from roofline.transformer import moe_sync as ms
    cfg = rl.transformer.config("Qwen3-30B-A3B")
    cap: dict = {}
    orig = ms.stage_host_terms

    def keep(*a: object, **k: object) -> dict:
        cap["a"] = a
        return orig(*a, **k)  # type: ignore[arg-type]

    try:  # the arguments moe_host_terms passes (ops, row times, groups, ...)
        ms.stage_host_terms = keep  # type: ignore[assignment]
        rl.transformer.estimate(cfg, "train", hardware="B200", seq_len=4096, micro_batch=1,
                                ep=8, dp=8, gpus_per_node=8, linear_recipe="mxfp8_te")
    finally:
        ms.stage_host_terms = orig  # type: ignore[assignment]
    ops, t, groups, hw, eff, graphed, router, f8 = cap["a"][:8]
    e = [ms._backward_exposed_s(ops, t, groups, hw, eff, graphed, router, f8, plan=[(0, n)],
                                idle_start=True) for n in (1, 2, 3, 5)]
    d = e[1] - e[0]
    assert d > 0
    assert e[2] == pytest.approx(e[0] + 2 * d, rel=1e-6)
    assert e[3] == pytest.approx(e[0] + 4 * d, rel=1e-6)
