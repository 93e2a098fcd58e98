"""Recomputation modes of training: layer-selective (``recompute="layer:k"``, torchtitan's
``selective_ac_option="k"``) and op-level selective (``recompute="op"``)."""

from __future__ import annotations

import pytest

import roofline as rl
from roofline import _core
from roofline._errors import ArgumentTypeError, ArgumentValueError, UnknownNameError

T = rl.transformer
KW = {"batch": 1, "seq_len": 2048, "hardware": "H100 SXM"}


@pytest.mark.parametrize(("layers", "every", "wrapped"), [
    (32, 2, 16),   # blocks 2, 4, ..., 32
    (40, 3, 13),   # 3, 6, ..., 39: floor(40/3)
    (32, 1, 32),   # every block = full recomputation
    (80, 7, 11),   # floor(80/7)
    (5, 6, 0),     # a count that never reaches k wraps nothing
])
def test_checkpointed_layers_counts_like_torchtitan(layers: int, every: int, wrapped: int) -> None:
    # torchtitan: a running count c = 1..L, block c wrapped when c % k == 0
    assert sum(1 for c in range(1, layers + 1) if c % every == 0) == wrapped
    assert float(_core.checkpointed_layers(layers, every)) == wrapped


def test_layer_two_is_half_of_full_recomputation() -> None:
    none = T.estimate("Llama-3-8B", "train", **KW)
    full = T.estimate("Llama-3-8B", "train", recompute="full", **KW)
    half = T.estimate("Llama-3-8B", "train", recompute="layer:2", **KW)
    # 16 of 32 blocks: half the recomputed forward, half the extra FLOPs
    assert half.step.recompute_s == pytest.approx(full.step.recompute_s / 2)
    assert half.step.hfu / half.step.mfu - 1 == pytest.approx(
        (full.step.hfu / full.step.mfu - 1) / 2)
    # kept activations: half the blocks keep their input, half keep everything; plus the
    # working set of one recomputed block (as full recomputation has)
    a_none, a_full = none.memory["activations_bytes"], full.memory["activations_bytes"]
    block = 2 * half._cache["train_base"]["saved_largest_layer"]  # bf16 bytes of one block
    # half = (none + kept_full)/2 + block; a_full = kept_full + block
    assert half.memory["activations_bytes"] == pytest.approx((a_none + a_full) / 2 + block / 2)
    assert half.step.layout["recompute"] == "layer:2"


def test_layer_one_is_full() -> None:
    full = T.estimate("Llama-3-8B", "train", recompute="full", **KW)
    one = T.estimate("Llama-3-8B", "train", recompute="layer:1", **KW)
    assert one.time_s == pytest.approx(full.time_s)
    assert one.memory["activations_bytes"] == pytest.approx(full.memory["activations_bytes"])


def test_layer_recompute_between_none_and_full_and_monotone_in_k() -> None:
    kw = dict(KW, dp=8, zero=3)
    none = T.estimate("Llama-3-8B", "train", **kw)
    full = T.estimate("Llama-3-8B", "train", recompute="full", **kw)
    times, acts = [], []
    for k in (1, 2, 3, 4, 8, 16, 32):
        e = T.estimate("Llama-3-8B", "train", recompute=f"layer:{k}", **kw)
        assert none.time_s <= e.time_s <= full.time_s * (1 + 1e-12)
        # at most one recomputed block's working set above keeping everything
        block = 2 * e._cache["train_base"]["saved_largest_layer"]
        assert full.memory["activations_bytes"] <= e.memory["activations_bytes"] \
            <= none.memory["activations_bytes"] + block
        assert e.wall_s >= e.time_s
        times.append(e.time_s)
        acts.append(e.memory["activations_bytes"])
    # a larger k recomputes fewer blocks: faster, more memory
    assert all(a >= b for a, b in zip(times[:-1], times[1:], strict=True))
    assert all(a <= b for a, b in zip(acts[:-1], acts[1:], strict=True))
    assert acts[1] < 0.6 * none.memory["activations_bytes"]  # layer:2 saves about half


def test_layer_recompute_with_pipeline_and_planner_row() -> None:
    kw = dict(KW, pp=4, grad_accum=8, dp=2)
    e = T.estimate("Llama-3-8B", "train", recompute="layer:4", **kw)
    full = T.estimate("Llama-3-8B", "train", recompute="full", **kw)
    # 8 of 32 blocks recomputed: a quarter of full recomputation's time
    assert e.step.recompute_s == pytest.approx(full.step.recompute_s / 4)


def test_planner_searches_layer_recompute() -> None:
    df = T.plan("Llama-3-8B", 8, "H100 SXM", seq_len=4096, global_batch_tokens=8 * 4096 * 4)
    assert {"layer:2", "op"} <= set(df["recompute"])
    i = int(df.index[df["recompute"] == "layer:2"][0])
    row = df.iloc[i]
    from roofline.transformer.planner.train_search import row_settings

    e = T.estimate("Llama-3-8B", "train", **row_settings(df, i))
    assert e.time_s == pytest.approx(row["time_s"])
    assert e.memory["total_bytes"] == pytest.approx(row["total_bytes"])


@pytest.mark.parametrize(("value", "error", "match"), [
    ("layer:0", ArgumentValueError, r"recompute got 'layer:0': k must be >= 1"),
    ("layer:x", ArgumentValueError, r"recompute got 'layer:x'"),
    ("layer", ArgumentValueError, r"recompute got 'layer'"),
    ("layer:-2", ArgumentValueError, r"recompute got 'layer:-2'"),
    ("layers:2", ArgumentValueError, r"recompute got 'layers:2'"),
    ("layer:33", ArgumentValueError, r"recompute got 'layer:33': k must be <= 32"),
    ("lyer:2", UnknownNameError, r"unknown recompute 'lyer:2'.*layer:k"),
    (2, ArgumentTypeError, r"recompute must be a string, got 2"),
])
def test_bad_recompute_names_the_argument(value: object, error: type, match: str) -> None:
    with pytest.raises(error, match=match):
        T.estimate("Llama-3-8B", "train", recompute=value, **KW)  # type: ignore[arg-type]


def test_layer_recompute_is_training_only() -> None:
    with pytest.raises(ValueError, match="recompute applies to phase='train' only"):
        T.estimate("Llama-3-8B", "prefill", seq_len=2048, hardware="H100 SXM",
                   recompute="layer:2")


def test_op_recompute_flops_hand_derived() -> None:
    # Llama-3-8B: 32 layers, hidden 4096, 32 heads / 8 KV heads of 128, MLP 14336 (gated).
    # torchtitan's op SAC recomputes the 2nd, 4th and 6th mm of a block: wk (4096 x 1024),
    # wo (4096 x 4096), w3 (4096 x 14336); elementwise kernels count no FLOPs here.
    r = T.estimate("Llama-3-8B", "train", recompute="op", **KW)
    tokens = 2048
    rec = 32 * tokens * 2 * 4096 * (1024 + 4096 + 14336)  # = 2.611e12... per micro-batch
    assert r.step.hfu / r.step.mfu == pytest.approx((r.flops + rec) / r.flops, rel=1e-9)
    none = T.estimate("Llama-3-8B", "train", **KW)
    full = T.estimate("Llama-3-8B", "train", recompute="full", **KW)
    assert none.time_s < r.time_s < full.time_s
    assert full.memory["activations_bytes"] < r.memory["activations_bytes"] \
        < none.memory["activations_bytes"]
    assert r.step.layout["recompute"] == "op"
    assert r.wall_s >= r.time_s


def test_op_recompute_same_flops_in_the_hf_program() -> None:
    # runtime="hf" runs q/k/v and gate/up as separate mms: k_proj, o_proj and up_proj are the
    # recomputed ones, the same FLOPs as the shares of the fused qkv / gate_up rows
    kw = dict(KW, runtime="hf")
    r = T.estimate("Llama-3-8B", "train", recompute="op", **kw)
    ops = r.ops()
    # HF's eager elementwise kernels count FLOPs (fp32 norms, RoPE): all recomputed too
    elt = ops[(ops["block"] != "head") & (ops["kind"] == "elementwise")
              & ~ops["op"].str.endswith("bwd")]
    rec = 32 * 2048 * 2 * 4096 * (1024 + 4096 + 14336) + (elt["flops"] * elt["layers"]).sum()
    assert r.step.hfu / r.step.mfu == pytest.approx((r.flops + rec) / r.flops, rel=1e-9)


def test_op_share_per_row() -> None:
    from roofline.transformer.recompute import op_recompute_share

    groups = [("dense", [0, 1]), ("head", [])]
    rows = [(0, "attn_norm", "elementwise"), (0, "qkv_proj", "gemm"), (0, "qkv_proj bwd", "gemm"),
            (0, "attention", "attention"), (0, "o_proj (fwd+bwd)", "linear"),
            (0, "gate_up_proj", "gemm"), (0, "down_proj", "gemm"), (1, "lm_head", "gemm"),
            (1, "final_norm", "elementwise")]
    share = op_recompute_share(rows, groups, heads=32, kv_heads=8, gated=True)
    # qkv: wk's share 8/(32+16) = 1/6; o: all; gate_up: w3 = 1/2; down (7th): none; head: none
    assert share.tolist() == pytest.approx([1, 1 / 6, 0, 0, 1, 0.5, 0, 0, 0])
    ungated = op_recompute_share([(0, "up_proj", "gemm"), (0, "down_proj", "gemm")], groups,
                                 heads=32, kv_heads=32, gated=False)
    assert ungated.tolist() == [0.0, 1.0]  # ungated: up is the 5th mm, down the 6th
