"""HybridEP as Megatron-Core's flex dispatcher runs it (DeepEP hybrid-ep): the rows it
launches (one row per token and destination rank, no permute before the dispatch, no
weighted sum after the combine) and where the host waits for the device in each MoE layer
in each release (``"hybridep"``: 26.02 on; ``"hybridep_2511"``), against the all-to-all
dispatcher's single forward wait."""

from __future__ import annotations

import numpy as np
import pytest

import roofline as rl
from roofline._params.resolve import resolve
from roofline.ops.host import HOST_CLASSES
from roofline.transformer.config import TransformerConfig
from roofline.transformer.layers import moe_mlp, ranks_hit
from roofline.transformer.moe_host import (
    HYBRIDEP_DISPATCHERS,
    MOE_DISPATCHERS,
    moe_extra_launches,
    moe_stages,
)
from roofline.transformer.moe_sync import SYNC_POINTS, sync_exposed_s
from roofline.transformer.program import Program

TINY = TransformerConfig(name="tiny-moe", hidden_size=64, num_layers=2, num_heads=4,
                         num_kv_heads=4, head_dim=16, intermediate_size=128, vocab_size=0,
                         num_experts=8, experts_per_token=2, moe_intermediate_size=32)


def _layer(ep: int = 4, dispatcher: str = "alltoall") -> Program:
    ops = Program(train=True, recipe=None, dispatcher=dispatcher)
    moe_mlp(ops, 0, TINY, 16, 1, ep, 2.0, False, 0.0)
    return ops


def _comms(ops: Program) -> dict[str, tuple[str, float, float]]:
    return {ops.rows[i][1]: ops.comms[idx] for i, (_, _, _, parts) in enumerate(ops.rows)
            for kind, idx in parts if kind == "comms"}


def test_ranks_hit_by_hand() -> None:
    # 8 experts over 4 ranks (2 each), top-2: a rank is missed when both experts are among
    # the other 6: C(6,2)/C(8,2) = 15/28, hit 13/28
    assert ranks_hit(8, 2, 4) == pytest.approx(13 / 28, rel=1e-12)
    assert ranks_hit(8, 2, 1) == 1.0  # one rank holds every expert
    assert ranks_hit(8, 8, 4) == 1.0  # k above the other ranks' experts: every rank


def test_hybridep_rows_by_hand() -> None:
    # 16 tokens per GPU, EP 4, top-2 of 8 experts (TINY, hidden 64): the all-to-all
    # dispatcher sends 32 rows of 64 bf16 = 4096 B each way (test_moe_training). HybridEP
    # sends one row per token and rank hit: 13/28 · 4 ranks / 2 = 26/28 of them, each with
    # its rank's 2 fp32 probabilities (8 B per row) in the same kernel; the combine sends
    # the same rows without probabilities. The routing map (16 x 8 bool per rank) is
    # all-gathered (4 x 128 B out) in the forward only.
    a2a, hyb = _layer(), _layer(dispatcher="hybridep")
    dedup = 26 / 28
    c = _comms(hyb)
    assert c["dispatch all_to_all"][1] == pytest.approx(dedup * 32 * (128 + 8), rel=1e-12)
    assert c["combine all_to_all"][1] == pytest.approx(dedup * 4096, rel=1e-12)
    assert c["combine all_to_all bwd"][1] == c["combine all_to_all"][1]
    assert c["routing map all_gather"] == ("all_gather", 512.0, 4)
    names = [r[1] for r in hyb.rows]
    assert "routing map all_gather bwd" not in names and "hybridep metadata bwd" not in names
    # the dispatch reads the tokens itself and the combine kernel sums each token's rows
    gone = {"permute", "permute bwd", "dispatch probs all_to_all", "moe weighted sum"}
    assert gone <= {r[1] for r in a2a.rows} and not gone & set(names)
    assert {"sort chunks by expert", "unsort chunks"} <= set(names)


def test_sync_rows_exist_in_the_expert_parallel_layer() -> None:
    names = [r[1] for r in _layer().rows]
    for points in SYNC_POINTS.values():
        for row, after in points:
            assert row in names and after in (0, 1)
    # every backward wait sits before a backward row (the backward splits pieces before them)
    assert all(row.endswith(" bwd") and after == 0
               for (_, backward), pts in SYNC_POINTS.items() if backward for row, after in pts)


def test_zero_time_kernels_each_wait_adds_one_kernel_gap() -> None:
    # With zero-time kernels the host is behind everywhere: every launch sequence's wall is
    # its host calls plus its last kernel's gap, whatever the cuts. Two layers: HybridEP
    # from 26.02 on, as the all-to-all dispatcher, runs 2 forward segments (one wait per
    # layer) and 1 backward sequence; as 25.11 ran it 3 forward segments per layer (6) and,
    # backward, the first layer's piece before its first wait, then per layer 2 waits (the
    # second layer's first piece joins the first layer's last): 5. 11 - 3 = 8 more gaps,
    # nothing else. (the same rows and host calls for both: the all-to-all dispatcher's
    # program, HybridEP's preprocess)
    ops = _layer()
    ops.dispatcher = "hybridep"
    zero = np.zeros(len(ops.rows))
    hw = rl.hardware("B200")
    a2a = sync_exposed_s(ops, zero, [("moe", [0, 1])], hw, "default")
    ops.dispatcher = "hybridep_2511"
    hyb = sync_exposed_s(ops, zero, [("moe", [0, 1])], hw, "default")
    gap = resolve("B200", "default")[2].host.kernel_gap_s
    assert hyb - a2a == pytest.approx(8 * gap, rel=1e-9)


def test_hybridep_waits_where_the_alltoall_dispatcher_does() -> None:
    # DeepEP hybrid-ep eb9cee7 / 34152ae under Megatron-Core's non_blocking=False: one
    # cudaStreamSynchronize per layer, before the dispatch kernel, none in the backward. On
    # the same rows that is the all-to-all dispatcher's cut (after its permute, the row
    # before its dispatch) and its wait-free backward. With 1 ms per row the host hides
    # behind the GPU except before each segment's first launch, the same dispatch call for
    # both; what differs is the preprocess after the top-k: the all-to-all dispatcher's 8
    # zero-time launches at EP 4 and its copies' row against HybridEP's one compiled call,
    # each such launch a kernel gap of GPU time: 8 gaps fewer per layer.
    ops = _layer()
    assert SYNC_POINTS[("hybridep", False)] == (("dispatch all_to_all", 0),)
    assert SYNC_POINTS[("hybridep", True)] == ()
    fwd = [r[1] for r in ops.rows if not r[1].endswith(" bwd")]
    assert fwd[fwd.index("permute") + 1] == "dispatch all_to_all"
    hw = rl.hardware("B200")
    t = np.full(len(ops.rows), 1e-3)
    gap = resolve("B200", "default")[2].host.kernel_gap_s
    for layers in ([0], [0, 1]):
        a2a = sync_exposed_s(ops, t, [("moe", layers)], hw, "default")
        ops.dispatcher = "hybridep"
        assert sync_exposed_s(ops, t, [("moe", layers)], hw, "default") == pytest.approx(
            a2a - 8 * gap * len(layers), rel=1e-9)
        ops.dispatcher = "hybridep_2511"
        assert sync_exposed_s(ops, t, [("moe", layers)], hw, "default") > a2a
        ops.dispatcher = "alltoall"


def test_both_hybridep_releases_launch_the_same_rows() -> None:
    a, b = _layer(dispatcher="hybridep"), _layer(dispatcher="hybridep_2511")
    assert a.rows == b.rows and a.comms == b.comms
    assert set(HYBRIDEP_DISPATCHERS) == set(MOE_DISPATCHERS) - {"alltoall", "deepep"}


def test_flex_preprocess_is_one_compiled_call() -> None:
    # MoEFlexTokenDispatcher.dispatch_preprocess is @jit_fuser: one compiled call (priced as a
    # module call), reshapes only at tp = 1; no all-to-all split sizes, no side-stream copies
    # (HybridEP copies inside its dispatch). Graphed with the router: nothing on the host;
    # graphed alone: its replay, one module call.
    ops = _layer(dispatcher="hybridep")
    topk = next(i for i, r in enumerate(ops.rows) if r[1] == "topk")
    assert moe_stages(ops, topk, False) == ["router", "flex preprocess"]
    assert moe_stages(_layer(), topk, False) == ["router", "preprocess", "d2h"]
    one = moe_extra_launches("flex preprocess", 8, frozenset())
    assert one.shape == (1, len(HOST_CLASSES)) and one.sum() == one[0, 4] == 1.0  # module
    replay = moe_extra_launches("flex preprocess", 8, frozenset({"moe_preprocess"}))
    assert np.array_equal(replay, one)
    both = frozenset({"moe_router", "moe_preprocess"})
    assert moe_extra_launches("flex preprocess", 8, both).shape == (0, len(HOST_CLASSES))


def test_long_kernels_hide_the_host_only_without_waits() -> None:
    # 1 ms per row: the host is far ahead of the GPU. The all-to-all dispatcher's backward
    # (no wait) then exposes nothing, nor does HybridEP's from 26.02 on; 25.11's HybridEP
    # backward waits twice per layer and exposes the host calls before each first launch
    # after a wait, so it exposes more, and each of its forward segments starts from an
    # idle stream too.
    ops = _layer()
    ops.dispatcher = "hybridep"
    t = np.full(len(ops.rows), 1e-3)
    hw = rl.hardware("B200")
    one = sync_exposed_s(ops, t, [("moe", [0])], hw, "default")
    ops.dispatcher = "hybridep_2511"
    hyb = sync_exposed_s(ops, t, [("moe", [0])], hw, "default")
    assert 0.0 < one < hyb
    two = sync_exposed_s(ops, t, [("moe", [0, 1])], hw, "default")
    assert two > hyb  # more layers, more waits


def test_estimate_takes_the_dispatcher_and_refuses_bad_ones() -> None:
    kw = dict(hardware="GB200", seq_len=512, micro_batch=1, ep=4, dp=4)
    base = rl.transformer.estimate("Qwen3-30B-A3B", "train", **kw)
    hyb = rl.transformer.estimate("Qwen3-30B-A3B", "train", moe_dispatcher="hybridep", **kw)
    old = rl.transformer.estimate("Qwen3-30B-A3B", "train", moe_dispatcher="hybridep_2511",
                                  **kw)
    # fewer bytes and passes on the GPU; 25.11's release waits more often on the host; a
    # host-bound toy (512 tokens): the flex preprocess's one call against the all-to-all's
    # split sizes and copies leaves HybridEP less host time
    assert sum(hyb.columns["time_s"]) < sum(base.columns["time_s"])
    assert sum(old.columns["time_s"]) == sum(hyb.columns["time_s"])
    assert base.step.host_s > old.step.host_s > hyb.step.host_s
    with pytest.raises(ValueError, match="moe_dispatcher"):
        rl.transformer.estimate("Qwen3-30B-A3B", "train", moe_dispatcher="deepEP", **kw)
    with pytest.raises(ValueError, match="moe_dispatcher"):
        rl.transformer.estimate("Qwen3-30B-A3B", "train", moe_dispatcher="hybridep",
                                hardware="GB200", seq_len=512, micro_batch=1)
    with pytest.raises(ValueError, match="moe_dispatcher"):
        rl.transformer.estimate("Qwen3-30B-A3B", "prefill", moe_dispatcher="hybridep",
                                hardware="GB200", seq_len=512, ep=4)
    with pytest.raises(ValueError, match="moe_dispatcher"):
        sync_exposed_s(_layer(dispatcher="deepEP"), np.zeros(len(_layer().rows)),
                       [("moe", [0])], rl.hardware("B200"), "default")
