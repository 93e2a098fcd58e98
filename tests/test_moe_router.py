"""NeMo AutoModel's FakeBalancedGate as ``estimate(moe_router="fake_balanced")``: the ranks a
token reaches (hand-derived), the gate's kernels, the deduplicating dispatcher's bytes, and
bad input; its shared experts on a side stream (``moe_shared_overlap``)."""

from __future__ import annotations

import math

import numpy as np
import pytest

import roofline as rl
from roofline.transformer.moe_overlap import DEEPEP_COMM_SMS, overlap_shared_experts
from roofline.transformer.routing import MOE_ROUTERS, ranks_hit, token_ranks

_KW = dict(seq_len=1024, hardware="H100 SXM", ep=8, micro_batch=1, dp=8)


def _layer0(router: str, dispatcher: str = "hybridep"):
    df = rl.transformer.estimate("Qwen3-30B-A3B", "train", moe_router=router,
                                 moe_dispatcher=dispatcher, **_KW).to_pandas()
    return df[df.layer == 0].set_index("op")


def test_routers_named() -> None:
    assert MOE_ROUTERS == ("topk", "force_balanced", "fake_balanced")


@pytest.mark.parametrize(("experts", "k", "ep", "ranks"), [
    # Qwen3-30B-A3B, EP 8: 16 experts per rank; token i's window [8i, 8i+8) mod 128 sits in
    # one block of 16
    (128, 8, 8, 1.0),
    # DeepSeek-V3, EP 64: blocks of 4; [8s, 8s+8) covers blocks 2s and 2s+1
    (256, 8, 64, 2.0),
    # Kimi-K2, EP 32: blocks of 12; the starts 8s mod 12 cycle 0, 8, 4: windows [0, 8) one
    # block, [8, 16) two, [4, 12) one: (1 + 2 + 1) / 3
    (384, 8, 32, 4.0 / 3.0),
    # GPT-OSS-120B, EP 64: blocks of 2, windows of 4 aligned on 4: two blocks
    (128, 4, 64, 2.0),
    # one rank holds every expert
    (256, 8, 1, 1.0),
])
def test_fake_balanced_ranks_by_hand(experts: int, k: int, ep: int, ranks: float) -> None:
    assert token_ranks(experts, k, ep, "fake_balanced") == pytest.approx(ranks, rel=1e-12)


def test_nodes_reached_are_groups_of_ranks() -> None:
    # DeepSeek-V3 at EP 64 over 8-GPU nodes (32 experts per node): the fake gate's window of
    # 8 experts [8s, 8s+8) lies in one node; uniform subsets reach 8·(1 - C(224, 8)/C(256, 8))
    assert token_ranks(256, 8, 64 // 8, "fake_balanced") == 1.0
    assert token_ranks(256, 8, 64 // 8) == pytest.approx(
        8 * (1 - math.comb(224, 8) / math.comb(256, 8)), rel=1e-12)


def test_topk_ranks_are_the_uniform_subsets() -> None:
    # ep ranks each hit with probability 1 - C(E - E/ep, k) / C(E, k)
    assert token_ranks(256, 8, 64) == pytest.approx(
        64 * (1 - math.comb(252, 8) / math.comb(256, 8)), rel=1e-12)
    assert token_ranks(8, 2, 4) == pytest.approx(4 * ranks_hit(8, 2, 4), rel=1e-12)
    # a consecutive window never reaches more ranks than k random experts do
    for e, k, ep in ((128, 8, 8), (256, 8, 64), (384, 8, 32), (32, 4, 8)):
        assert token_ranks(e, k, ep, "fake_balanced") <= token_ranks(e, k, ep)


def test_fake_gate_replaces_router_and_topk() -> None:
    topk, fake = _layer0("topk"), _layer0("fake_balanced")
    assert {"router", "router bwd", "topk", "topk bwd"} <= set(topk.index)
    assert not {"router", "topk"} & set(fake.index)
    # six t·k kernels: ones (fp32 write), / k (fp32 read + write), arange (int64 write),
    # % E and + skip (int64 read + write), type_as (fp32 read, bf16 write): 29 two-byte
    # elements per assignment, t·k = 1024·8; no backward row (the gate does not read x)
    assert fake.loc["fake gate", "bytes"] == pytest.approx(1024 * 8 * 29 * 2, rel=1e-12)
    assert "fake gate bwd" not in fake.index
    # the rest of the layer before the dispatch is the same program
    for op in ("mlp_norm", "o_proj", "attention"):
        assert fake.loc[op, "time_s"] == topk.loc[op, "time_s"]


def test_dedup_dispatch_bytes_follow_token_ranks() -> None:
    # HybridEP sends one row per token and rank reached: Qwen3-30B-A3B at EP 8 reaches
    # 1 rank under the fake gate, 8·(1 - C(112, 8)/C(128, 8)) under a uniform top-k
    topk, fake = _layer0("topk"), _layer0("fake_balanced")
    ratio = token_ranks(128, 8, 8, "fake_balanced") / token_ranks(128, 8, 8)
    # the dispatch carries hidden rows (2 bytes) and the probabilities of the rank's 16
    # experts (fp32) per row: both scale with the rows sent
    assert fake.loc["dispatch all_to_all", "bytes"] == pytest.approx(
        topk.loc["dispatch all_to_all", "bytes"] * ratio, rel=1e-6)  # bytes whole
    assert fake.loc["combine all_to_all", "bytes"] == pytest.approx(
        topk.loc["combine all_to_all", "bytes"] * ratio, rel=1e-6)  # bytes whole


def test_all_to_all_dispatcher_sends_every_assignment() -> None:
    # Megatron's all-to-all dispatcher permutes t·k rows whatever the router: same bytes
    topk, fake = _layer0("topk", "alltoall"), _layer0("fake_balanced", "alltoall")
    assert fake.loc["dispatch all_to_all", "bytes"] == topk.loc["dispatch all_to_all", "bytes"]
    assert fake.loc["experts gate_up", "time_s"] == topk.loc["experts gate_up", "time_s"]


def test_default_is_topk() -> None:
    a = rl.transformer.estimate("Qwen3-30B-A3B", "train", **_KW)
    b = rl.transformer.estimate("Qwen3-30B-A3B", "train", moe_router="topk", **_KW)
    assert a.time_s == b.time_s


@pytest.mark.parametrize("bad", ["fake", "FakeBalanced", None, 1])
def test_unknown_router_raises(bad: object) -> None:
    with pytest.raises(ValueError, match="moe_router"):
        rl.transformer.estimate("Qwen3-30B-A3B", "train", moe_router=bad, **_KW)


def test_fake_gate_needs_moe_training() -> None:
    with pytest.raises(ValueError, match="moe_router='fake_balanced'"):
        rl.transformer.estimate("Qwen3-30B-A3B", "prefill", seq_len=128, hardware="H100 SXM",
                                moe_router="fake_balanced")
    with pytest.raises(ValueError, match="moe_router"):
        rl.transformer.estimate("Llama-3-8B", "train", seq_len=128, hardware="H100 SXM",
                                moe_router="fake_balanced")


# ---- the shared experts on AutoModel's side stream (moe_shared_overlap) ----


def test_shared_overlap_by_hand() -> None:
    # one MoE group: shared rows 1 + 1 ms forward, dispatch 3 ms; 132 SMs, DeepEP holds 20:
    # S' = 2 · 132/112 = 2.357 ms < E = 3 ms: the whole S is hidden
    rows = [(0, "shared gate_up", "gemm"), (0, "shared down", "gemm"),
            (0, "dispatch all_to_all", "collective"), (0, "shared gate_up bwd", "gemm"),
            (0, "combine all_to_all bwd", "collective"), (0, "experts gate_up", "gemm")]
    t = np.array([1e-3, 1e-3, 3e-3, 4e-3, 1e-3, 5e-3])
    out = overlap_shared_experts(rows, t, "deepep", 132)
    assert out[0] == out[1] == 0.0
    # backward: S = 4 ms, E = 1 ms: S' = 4 · 132/112 = 4.714 ms; saved = 4 + 1 - 4.714
    saved = 4e-3 + 1e-3 - 4e-3 * 132 / (132 - DEEPEP_COMM_SMS)
    assert out[3] == pytest.approx(4e-3 - saved, rel=1e-12)
    # the exchanges and the routed experts keep their time
    assert list(out[[2, 4, 5]]) == list(t[[2, 4, 5]])


def test_shared_overlap_rows() -> None:
    # four MoE layers at 4096 tokens (shorter steps are host-bound: then nothing changes)
    kw = dict(seq_len=4096, hardware="H100 SXM", ep=8, micro_batch=1, dp=8,
              moe_dispatcher="deepep", moe_router="fake_balanced")
    cfg = rl.transformer.config("DeepSeek-V3").replace(num_layers=4, mtp_layers=0,
                                                       dense_layers=())
    plain = rl.transformer.estimate(cfg, "train", **kw)
    side = rl.transformer.estimate(cfg, "train", moe_shared_overlap=True, **kw)
    a, b = (e.to_pandas().query("layer == 3").set_index("op")["time_s"] for e in (plain, side))
    assert b["shared gate_up"] <= a["shared gate_up"] and b["dispatch all_to_all"] == a[
        "dispatch all_to_all"]
    # never more hidden than the shared work itself: the step shrinks by at most it
    shared = sum(a[o] - b[o] for o in a.index if o.startswith("shared"))
    assert 0 < shared <= sum(a[o] for o in a.index if o.startswith("shared"))
    assert side.time_s < plain.time_s


def test_shared_overlap_needs_shared_experts() -> None:
    with pytest.raises(ValueError, match="moe_shared_overlap"):
        rl.transformer.estimate("Qwen3-30B-A3B", "train", moe_shared_overlap=True, **_KW)
    with pytest.raises(TypeError, match="moe_shared_overlap"):
        rl.transformer.estimate("Qwen3-30B-A3B", "train", moe_shared_overlap=1, **_KW)
