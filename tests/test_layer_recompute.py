"""Layer-selective activation recomputation (``recompute="layer:k"``, torchtitan's
``selective_ac_option="k"``): every k-th transformer block fully recomputed."""

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
    assert "layer:2" in set(df["recompute"])
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
