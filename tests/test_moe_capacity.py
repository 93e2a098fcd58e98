"""Megatron-Core token dropping (``moe_capacity_factor``, ``moe_pad_to_capacity``): the
capacity, the rows each expert computes and each rank sends, the host waits and launches the
all-to-all dispatcher makes with and without padding (core_v0.11 / core_v0.12
``token_dispatcher.py``, ``moe_utils.py``), and the arguments' checks."""

from __future__ import annotations

import math

import numpy as np
import pytest

import roofline as rl
from roofline.ops.host import HOST_CLASSES
from roofline.transformer.moe_host import moe_capacity_options, moe_extra_launches
from roofline.transformer.moe_sync import SYNC_POINTS, sync_points
from roofline.transformer.program import Program
from roofline.transformer.routing import capacity_counts, expert_capacity, expert_counts

_VIEW, _KERNEL, _BWD = (HOST_CLASSES.index(k) for k in ("view", "kernel", "backward"))
_NONE: frozenset[str] = frozenset()


def test_expert_capacity_by_hand():
    """``get_capacity(num_tokens=T·k, E, f) = ceil(T·k / E · f)``."""
    assert expert_capacity(8192, 8, 2, 1.0) == 2048  # Mixtral-8x7B, MBS 2 x 4096
    assert expert_capacity(4096, 128, 8, 1.0) == 256  # Qwen3-235B, MBS 1 x 4096
    assert expert_capacity(1000, 64, 6, 1.25) == 118  # 93.75 · 1.25 = 117.19 -> 118
    assert expert_capacity(10, 8, 2, 1.0) == 3  # 2.5 -> 3


def test_capacity_counts_padded_dropped_dropless():
    # padded: every local expert ep·C rows, a rank sends E·C, whatever the skew
    local, sent = capacity_counts(8192, 8, 2, 8, (1.0, True), skew=1.5)
    assert local.tolist() == [8 * 2048] and sent == 8 * 2048
    local, sent = capacity_counts(1000, 64, 6, 4, (1.25, True))
    assert local.tolist() == [4 * 118] * 16 and sent == 64 * 118
    # dropless: the balanced split, T·k rows sent
    local, sent = capacity_counts(8192, 8, 2, 8, None)
    assert local.tolist() == [16384] and sent == 8192 * 2
    # dropping without padding, balanced and a factor >= 1: nothing is dropped
    assert capacity_counts(4096, 64, 6, 8, (1.0, False))[0].tolist() == \
        capacity_counts(4096, 64, 6, 8, None)[0].tolist()
    # skewed: the hot experts are cut at ep·C (C = ceil(4096·6/64) = 384), the others kept
    group = expert_counts(4096 * 8, 64, 6, 1.0)
    local, sent = capacity_counts(4096, 64, 6, 8, (1.0, False), skew=1.0)
    assert max(local) == 8 * 384 < group.max()
    assert sent == pytest.approx(np.minimum(group, 8 * 384).sum() / 8)
    assert sent < 4096 * 6


def test_sync_points_with_and_without_padding():
    """Dropless: the copy's wait after the permute; capacity unpadded: before the permute
    (``before_permutation_1``); padded: no wait, either pass."""
    ops = Program(train=True, recipe=None)
    assert sync_points(ops, False) == SYNC_POINTS[("alltoall", False)] == (("permute", 1),)
    ops.moe_capacity = (1.0, False)
    assert sync_points(ops, False) == (("permute", 0),) and sync_points(ops, True) == ()
    ops.moe_capacity = (1.0, True)
    assert sync_points(ops, False) == () and sync_points(ops, True) == ()


def test_capacity_launches_by_hand():
    """The router's capacity mask (topk, fill, clone, scatter, bool, mul; + logical_and
    unpadded) and its MulBackward; padded: a preprocess of one CPU full and one device fill,
    no copies; unpadded: the count's sum kernel and copy more."""
    pad, drop = (1.0, True), (1.0, False)
    base = moe_extra_launches("router", 8, _NONE)
    assert moe_extra_launches("router", 8, _NONE, capacity=pad)[:, _KERNEL].sum() == \
        base[:, _KERNEL].sum() + 6
    assert moe_extra_launches("router", 8, _NONE, capacity=drop)[:, _KERNEL].sum() == \
        base[:, _KERNEL].sum() + 7
    b = moe_extra_launches("router bwd", 8, _NONE, capacity=pad)
    assert b[:, _KERNEL].sum() == 5 and b[:, _BWD].sum() == 2
    p = moe_extra_launches("preprocess", 8, _NONE, capacity=pad)
    assert p.shape[0] == 1 and p[0, _KERNEL] == 1 and p[0, _VIEW] == 1
    assert moe_extra_launches("preprocess", 8, _NONE, capacity=drop).shape[0] == 9
    assert moe_extra_launches("d2h", 8, _NONE, capacity=pad).shape[0] == 0
    assert moe_extra_launches("d2h", 8, _NONE, capacity=drop)[0, _KERNEL] == 5
    assert moe_extra_launches("d2h", 1, _NONE, capacity=drop)[0, _KERNEL] == 2
    # a graphed router / preprocess replays the mask and the fill too
    g = frozenset({"moe_router", "moe_preprocess"})
    assert moe_extra_launches("router", 8, g, capacity=pad).sum() == 0


def _mixtral(**kw):
    return rl.transformer.estimate("Mixtral-8x7B", "train", seq_len=512, micro_batch=1,
                                   hardware="H100 SXM", **{"ep": 8, **kw})


def _op(est, name, col="flops"):
    df = est.to_pandas()
    return float(df[df["op"] == name][col].iloc[0])


def test_estimate_prices_capacity_rows_and_drops_the_wait():
    """Mixtral-8x7B, 512 tokens per GPU, EP 8 (one local expert): C = ceil(512·2/8·f); the
    expert GEMMs run ep·C rows, the permute and all-to-alls move E·C rows; padded, the host
    never waits (no exposed host time), unpadded it still does."""
    dropless = _mixtral()
    half = _mixtral(moe_capacity_factor=0.5, moe_pad_to_capacity=True)
    c = expert_capacity(512, 8, 2, 0.5)
    assert c == 64
    hid, width = 4096, 14336
    assert _op(half, "experts gate_up") == pytest.approx(2 * 8 * c * hid * 2 * width)
    assert _op(half, "experts gate_up") == pytest.approx(_op(dropless, "experts gate_up") / 2)
    assert _op(half, "permute", "bytes") == pytest.approx(_op(dropless, "permute", "bytes") / 2)
    assert _op(half, "dispatch all_to_all", "bytes") == pytest.approx(
        _op(dropless, "dispatch all_to_all", "bytes") / 2)
    assert half.step.host_s == 0.0 and dropless.step.host_s > 0
    unpadded = _mixtral(moe_capacity_factor=0.5)
    assert unpadded.step.host_s > 0
    # factor 1 with padding under balanced routing: the dropless GEMMs, minus the wait
    full = _mixtral(moe_capacity_factor=1.0, moe_pad_to_capacity=True)
    assert _op(full, "experts gate_up") == pytest.approx(_op(dropless, "experts gate_up"))
    assert full.step.time_s < dropless.step.time_s


def test_sort_chunks_only_with_more_than_one_local_expert():
    """Megatron-Core's all-to-all dispatcher regroups the received rows by local expert only
    when ``num_local_experts > 1`` (dropless or padded)."""
    for kw in ({}, {"moe_capacity_factor": 1.0, "moe_pad_to_capacity": True}):
        ops8 = set(_mixtral(**kw).to_pandas()["op"])
        ops4 = set(_mixtral(ep=4, **kw).to_pandas()["op"])
        assert "sort chunks by expert" not in ops8 and "unsort chunks" not in ops8
        assert "sort chunks by expert" in ops4 and "unsort chunks" in ops4


def test_fp8_padding_skipped_when_capacity_rows_are_aligned():
    """TE's Fp8Padding returns early when every local expert's rows are aligned: padded to
    capacity, ep·C = 8·128 rows are (16); dropless, the model prices it as running."""
    kw = {"linear_recipe": "tensorwise_te"}
    assert "experts fp8 padding" in set(_mixtral(**kw).to_pandas()["op"])
    padded = _mixtral(moe_capacity_factor=1.0, moe_pad_to_capacity=True, **kw)
    assert "experts fp8 padding" not in set(padded.to_pandas()["op"])
    assert "experts quantize" in set(padded.to_pandas()["op"])


@pytest.mark.parametrize("kw, exc, match", [
    ({"moe_pad_to_capacity": True}, ValueError, "moe_pad_to_capacity=True needs"),
    ({"moe_capacity_factor": 0.0}, ValueError, "moe_capacity_factor"),
    ({"moe_capacity_factor": -1.0}, ValueError, "moe_capacity_factor"),
    ({"moe_capacity_factor": math.inf}, ValueError, "moe_capacity_factor"),
    ({"moe_capacity_factor": math.nan}, ValueError, "moe_capacity_factor"),
    ({"moe_capacity_factor": "1.0"}, TypeError, "moe_capacity_factor"),
    ({"moe_capacity_factor": True}, TypeError, "moe_capacity_factor"),
    ({"moe_capacity_factor": 1.0, "moe_pad_to_capacity": "yes"}, TypeError,
     "moe_pad_to_capacity"),
    ({"moe_capacity_factor": 1.0, "moe_dispatcher": "hybridep"}, ValueError,
     "moe_dispatcher='hybridep'"),
])
def test_bad_capacity_arguments(kw, exc, match):
    with pytest.raises(exc, match=match):
        _mixtral(**kw)


def test_capacity_is_megatron_training_only():
    with pytest.raises(ValueError, match="phase='train'"):
        rl.transformer.estimate("Mixtral-8x7B", "prefill", seq_len=512, hardware="H100 SXM",
                                moe_capacity_factor=1.0)
    with pytest.raises(ValueError, match="runtime='megatron'"):
        moe_capacity_options("t", "train", "hf", "alltoall", 1.0, False)
    assert moe_capacity_options("t", "train", "megatron", "alltoall", None, False) is None
    assert moe_capacity_options("t", "train", "megatron", "alltoall", 2, True) == (2.0, True)


def test_clamped_activation_keeps_its_wait_under_drop_and_pad():
    """GPT-OSS's clamped GLU still copies its offset host-to-device and waits
    (``weighted_bias_quick_geglu_impl``): drop-and-pad removes the dispatcher's wait, not that
    one, so the layer still exposes host time (Mixtral's layers, without it, expose none)."""
    kw = {"seq_len": 512, "micro_batch": 1, "ep": 8, "hardware": "B200"}
    padded = rl.transformer.estimate("GPT-OSS-120B", "train", moe_capacity_factor=1.0,
                                     moe_pad_to_capacity=True, **kw)
    dropless = rl.transformer.estimate("GPT-OSS-120B", "train", **kw)
    assert 0 < padded.step.host_s <= dropless.step.host_s
