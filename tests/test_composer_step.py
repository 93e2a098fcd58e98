"""Composer + PyTorch FSDP1's step (roofline.transformer.composer): counts by hand."""

from __future__ import annotations

import numpy as np
import pytest
from _mpt import H100, MPT_1B, mpt_step

import roofline as rl
from roofline import _core
from roofline.ops.collectives import all_reduce
from roofline.ops.elementwise import elementwise
from roofline.ops.host import HOST_CLASSES, calls_wall
from roofline.transformer.composer import (
    ADAMW_PASSES,
    clip_grad_norm_s,
    decoupled_adamw_s,
    fsdp1_grad_passes,
    fsdp1_grad_s,
    layer_tensors,
    rank_tensors,
    root_tensors,
)


def test_predivide_factor_as_fsdp1_computes_it():
    # f doubles while world % f == 0 and world / f > f: 8 -> 4 (then 8 / 4 = 2 < 4),
    # 16 -> 4 (16 / 4 = 4, not > 4), 64 -> 8, 512 -> 32; one rank divides by nothing
    got = _core.fsdp_predivide_factor(np.array([1, 2, 4, 8, 16, 64, 512], dtype=float))
    assert list(got) == [1, 2, 2, 4, 4, 8, 32]


def test_mpt_block_shard_tensors_by_hand():
    """MPT-1B's block (d 2048): norm_1 w, b; Wqkv 3d^2 + b; out_proj d^2 + b; norm_2 w, b;
    up 4d^2 + b; down 4d^2 + b = 50,358,272 elements, 6,294,784 per rank of 8. Rank 2's
    chunk [12,589,568, 18,884,352) holds Wqkv's bias (from 12,587,008), out_proj's weight and
    bias, norm_2's weight and bias and the head of up_proj's weight: 6, the busiest."""
    sizes = layer_tensors(MPT_1B)
    assert list(sizes) == [2048, 2048, 3 * 2048**2, 6144, 2048**2, 2048, 2048, 2048,
                           4 * 2048**2, 8192, 4 * 2048**2, 2048]
    assert sizes.sum() == 50_358_272
    one = np.zeros(len(sizes))
    assert _core.flat_shard_tensors(sizes, one, np.array([1.0]), 8) == 6
    assert _core.flat_shard_tensors(sizes, one, np.array([1.0]), 1) == 12  # unsharded
    # two 4-element tensors and an empty one on 2 ranks: [0, 4) | [4, 8) -> one each
    assert _core.flat_shard_tensors(np.array([4.0, 0.0, 4.0]), np.zeros(3), np.array([1.0]),
                                    2) == 1
    # root: wte (50368 x 2048), wpe (seq x 2048), norm_f w, b = 107,352,064 elements,
    # 13,419,008 per rank: ranks 0-6 hold wte alone, rank 7 wte's tail, wpe and the norm (4)
    root = root_tensors(MPT_1B, 2048)
    assert list(root) == [50368 * 2048, 2048 * 2048, 2048, 2048]
    assert _core.flat_shard_tensors(root, np.zeros(4), np.array([1.0]), 8) == 4
    # the busiest rank in all is rank 2: 24 blocks x 6 + wte = 145 (rank 7: 24 x 2 + 4 = 52),
    # not the sum of the two maxima (148)
    assert rank_tensors(sizes, root, 24, 8) == 24 * 6 + 1


def test_fsdp1_gradient_passes_by_hand():
    """A 1000-element unit on 8 ranks, fp32 reduction, resharded after the forward: the flat
    gradient's cat (1, 1), its cast to fp32 (1, 2), the pre-divide by 4 in fp32 (2, 2); on
    the 125-element shard the post-divide by 2 (2, 2) and the parameter shard's cast to bf16
    before each of the two all-gathers (2, 1) (2-byte units)."""
    assert fsdp1_grad_passes(1000, 8, 4.0, True, 0.0) == [
        (1000, 1, 1), (1000, 1, 2), (1000, 2, 2), (125, 2, 2), (125, 2, 1), (125, 2, 1)]
    # bf16 reduction (PURE), no reshard, 3 micro-batches: no cast before the reduce-scatter,
    # bf16 divides, the bf16 shard cast to the fp32 parameter's dtype, 2/3 accumulating
    assert fsdp1_grad_passes(1000, 8, 2.0, False, 2 / 3) == [
        (1000, 1, 1), (1000, 1, 1), (125, 1, 1), (125, 1, 2), (2 / 3 * 125, 4, 2),
        (125, 2, 1)]
    # two ranks: factor 2, nothing left to post-divide
    assert (250, 2, 2) not in fsdp1_grad_passes(500, 2, 4.0, False, 0.0)
    t = float(fsdp1_grad_s(2**26, 8, 4.0, True, 0.0, H100)[()])
    parts = sum(float(elementwise(int(np.ceil(n)), r, w, 0.0, "bf16", H100).time_s)
                for n, r, w in fsdp1_grad_passes(2**26, 8, 4.0, True, 0.0))
    assert t == pytest.approx(parts)
    assert float(fsdp1_grad_s(0, 8, 4.0, True, 0.0, H100)[()]) == 0.0


def test_decoupled_adamw_per_tensor_loop():
    per = float(decoupled_adamw_s(1, 4096, H100)[()])
    # the iterations add up: twice the tensors of the same size take twice as long
    assert float(decoupled_adamw_s(200, 200 * 4096, H100)[()]) == pytest.approx(200 * per)
    # each iteration is at least its 10 host calls (8 kernels, step += 1, the next .item())
    counts = np.zeros((11, len(HOST_CLASSES)))
    counts[1:, HOST_CLASSES.index("kernel")] = 1.0
    host = calls_wall(np.zeros(11), counts, H100).wall_s
    assert per >= host > 0
    # a large shard streams 12 fp32 reads and 8 writes per element at least
    big = 2**28
    reads = sum(r for r, _ in ADAMW_PASSES)
    writes = sum(w for _, w in ADAMW_PASSES)
    assert (reads, writes) == (12, 8)
    stream = float(elementwise(big, reads, writes, 0.0, "fp32", H100).time_s)
    assert float(decoupled_adamw_s(1, big, H100)[()]) >= 0.95 * stream


_step = mpt_step


def test_train_metrics_row_is_forward_only_and_counted():
    plain, metered = _step(), _step(train_metrics=2)
    rows = [r for r in metered.rows if r[1].startswith("train metrics")]
    assert [r[1] for r in rows] == ["train metrics (composer)"]  # no backward row
    g = rows[0][0]
    assert metered.groups[g][0] == "head"
    i = metered.rows.index(rows[0])
    t = float(metered.columns["time_s"][i])
    e = 4 * 2048 * 50368  # tokens x vocab logits
    expect = 2 * sum(float(elementwise(e, r, w, 0.0, "bf16", H100).time_s)
                     for r, w in ((1, 2), (2, 2)))
    assert t == pytest.approx(expect)
    assert metered.step.compute_s - plain.step.compute_s == pytest.approx(2 * t, rel=1e-6)
    # the head is never recomputed: full recomputation adds nothing for it
    rec, rec_m = _step(recompute="full"), _step(recompute="full", train_metrics=2)
    assert rec_m.step.recompute_s == pytest.approx(rec.step.recompute_s)


def test_fsdp1_adds_the_gradient_path_to_every_backward():
    two, one = _step(fsdp="megatron"), _step(fsdp="fsdp1")  # megatron: no copies priced
    counts = MPT_1B.param_counts()
    layer = layer_tensors(MPT_1B).sum() - 2 * 2048  # the config counts no norm biases
    assert counts["attention"] + counts["mlp"] + counts["norms"] - 2048 == pytest.approx(
        24 * layer, rel=1e-6)
    per_mb = (24 * float(fsdp1_grad_s(layer, 8, 4.0, True, 0.5, H100)[()])
              + float(fsdp1_grad_s(counts["embedding"], 8, 4.0, False, 0.5, H100)[()]))
    assert one.step.compute_s - two.step.compute_s == pytest.approx(2 * per_mb, rel=0.02)
    assert one.step.time_s > two.step.time_s


def test_decoupled_adamw_step_and_refusals():
    fused, loop = _step(), _step(optimizer="decoupled_adamw")
    assert loop.step.optimizer_s > fused.step.optimizer_s
    shard = MPT_1B.param_counts()["total"] / 8
    n = rank_tensors(layer_tensors(MPT_1B), root_tensors(MPT_1B, 2048), 24, 8)
    assert loop.step.optimizer_s == pytest.approx(
        float(decoupled_adamw_s(n, shard, H100)[()]), rel=0.01)
    with pytest.raises(ValueError, match="fsdp"):
        _step(fsdp="fsdp3")
    with pytest.raises(ValueError, match="fsdp"):
        _step(fsdp="fsdp1", zero=2, reduce_dtype=None)
    for bad in (-1, True, 2.0, 17):
        with pytest.raises(ValueError, match="train_metrics"):
            _step(train_metrics=bad)
    with pytest.raises(ValueError, match="train_metrics"):
        rl.transformer.estimate(MPT_1B, "prefill", 1, seq_len=128, hardware=H100,
                                 train_metrics=2)


def test_torch_modules_backward_by_hand():
    """MPT-1B's layer under PyTorch's eager modules, t = 4 x 2048 tokens: bias gradients of
    QKV (t x 6144), out_proj (t x 2048), up (t x 8192), down (t x 2048) read once; the two
    LayerNorms' gamma/beta kernels read x and dy (t x 2048, twice each); the qkv chunk's cat
    reads and writes t x 6144. One backward row, no forward row."""
    te, torch = _step(), _step(modules="torch")
    rows = [(i, r) for i, r in enumerate(torch.rows) if r[1].startswith("torch modules")]
    assert [r[1] for _, r in rows] == ["torch modules (bias grads, norm grads, qkv cat) bwd"]
    t = 4 * 2048
    parts = [(t * 6144, 1, 0), (t * 2048, 1, 0), (t * 8192, 1, 0), (t * 2048, 1, 0),
             (t * 2048, 2, 0), (t * 2048, 2, 0), (t * 6144, 1, 1)]
    expect = sum(float(elementwise(n, r, w, 0.0, "bf16", H100).time_s) for n, r, w in parts)
    assert float(torch.columns["time_s"][rows[0][0]]) == pytest.approx(expect)
    assert torch.step.compute_s - te.step.compute_s == pytest.approx(2 * 24 * expect, rel=1e-6)
    # recomputation repeats the forward only: the same difference with full recompute
    te_r, torch_r = _step(recompute="full"), _step(recompute="full", modules="torch")
    assert torch_r.step.recompute_s == pytest.approx(te_r.step.recompute_s)
    # TE linears under a float8 recipe fuse the bias gradients: norms and cat remain
    f8 = _step(modules="torch", linear_recipe="tensorwise")
    i = next(i for i, r in enumerate(f8.rows) if r[1].startswith("torch modules"))
    assert float(f8.columns["time_s"][i]) == pytest.approx(sum(
        float(elementwise(n, r, w, 0.0, "bf16", H100).time_s) for n, r, w in parts[4:]))
    with pytest.raises(ValueError, match="modules"):
        _step(modules="torch", runtime="hf")
    with pytest.raises(ValueError, match="modules"):
        _step(modules="jax")


def test_clip_grad_norm_per_tensor():
    """FSDP1's clip_grad_norm_ over n shards: n norms, 7 scalar kernels (stack, norm, ** 2,
    ** 0.5, + eps, division, clamp), n mul_; one host call each from an idle stream; plus the
    4-byte all-reduce over the data-parallel ranks, added to the optimizer step."""
    n, e = 145, 1.3e9 / 8
    per = int(np.ceil(e / n))
    times = ([float(elementwise(per, 1, 0, 0.0, "fp32", H100).time_s)] * n
             + [float(elementwise(n, 1, 1, 0.0, "fp32", H100).time_s)] * 7
             + [float(elementwise(per, 1, 1, 0.0, "fp32", H100).time_s)] * n)
    counts = np.zeros((len(times), len(HOST_CLASSES)))
    counts[1:, HOST_CLASSES.index("kernel")] = 1.0
    expect = calls_wall(times, counts, H100).wall_s
    assert float(clip_grad_norm_s(n, e, H100)[()]) == pytest.approx(expect)
    assert expect >= sum(times)
    plain, clipped = _step(optimizer="decoupled_adamw"), _step(optimizer="decoupled_adamw",
                                                               clip_grad_norm=True)
    shard = MPT_1B.param_counts()["total"] / 8
    tensors = rank_tensors(layer_tensors(MPT_1B), root_tensors(MPT_1B, 2048), 24, 8)
    extra = clipped.step.optimizer_s - plain.step.optimizer_s
    clip = float(clip_grad_norm_s(tensors, shard, H100)[()])
    assert extra > clip
    # the rest is the 4-byte all-reduce: latency-bound, whatever the link's rate
    assert extra - clip == pytest.approx(float(all_reduce(4, 8, hardware=H100).time_s),
                                         rel=0.05)
    with pytest.raises(TypeError, match="clip_grad_norm"):
        _step(clip_grad_norm=1)
