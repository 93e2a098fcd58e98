"""DeepEP's normal-mode dispatcher as Megatron-Core's flex dispatcher runs it
(``moe_dispatcher="deepep"``, :mod:`roofline.transformer.deepep`): the rows it launches, their
hand-derived times, intranode against internode, its one forward host wait, bad input."""

from __future__ import annotations

import math

import numpy as np
import pytest

import roofline as rl
from roofline.ops.collectives import NCCL_NVLINK_FRACTION
from roofline.transformer.config import TransformerConfig
from roofline.transformer.deepep import (
    DEEPEP_ROUNDS,
    deepep_columns,
    deepep_dispatch,
    node_share,
)
from roofline.transformer.layers import moe_mlp
from roofline.transformer.moe_host import MOE_DISPATCHERS, moe_extra_launches, moe_stages
from roofline.transformer.moe_overlap import DEEPEP_COMM_SMS
from roofline.transformer.moe_sync import SYNC_POINTS, sync_exposed_s
from roofline.transformer.program import Program
from roofline.transformer.routing import ranks_hit

TINY = TransformerConfig(name="tiny-moe", hidden_size=64, num_layers=2, num_heads=4,
                         num_kv_heads=4, head_dim=16, intermediate_size=128, vocab_size=0,
                         num_experts=8, experts_per_token=2, moe_intermediate_size=32)


def _priced(ops: Program, link: float = 100e9, lat: float = 1e-6) -> dict[str, float]:
    """Each collective row's time (its kernels one after another) at ``link``."""
    out: dict[str, float] = {}
    for _, name, _, parts in ops.rows:
        comms = [ops.comms[idx] for kind, idx in parts if kind == "comms"]
        if comms:
            est = deepep_columns(comms, ops.ep_span, ops.deepep_node_share, link, lat, "")
            out[name] = float(np.sum(est.time_s))
    return out


def test_one_layer_by_hand() -> None:
    # 1024 tokens of 1024 (bf16), 8 experts, top-2, ep=4, one node, balanced: 2048 rows per
    # rank; a rank holds a token's experts with p = 13/28, so DeepEP sends 2048·p·4/2 rows
    ops = Program(train=True, recipe=None, dispatcher="deepep")
    sent = deepep_dispatch(ops, 0, 1024, 8, 2, 4, 1024, 2.0, 2048.0)
    assert sent == pytest.approx(2048 * 13 / 14, rel=1e-12)
    t = _priced(ops)
    # dispatch: rows of 2048 B + 2 int64 indices + 2 fp32 weights + an int32 source index
    # (2076 B), 3/4 of them to the other ranks at 100 GB/s, one signal hop of 1 us
    nbytes = math.ceil(sent * 2076)
    assert t["dispatch all_to_all"] == pytest.approx(0.75 * nbytes / 100e9 + 1e-6, rel=1e-12)
    assert t["dispatch all_to_all"] == pytest.approx(30.61e-6, rel=1e-3)
    # notify: 3 rounds over 96 B of counts; the backward combine: a 2-round barrier, then the
    # rows (2048 B) and the weights' fp32 gradients (8 B)
    assert t["deepep notify"] == pytest.approx(3e-6 + 0.75 * 96 / 100e9, rel=1e-12)
    back = 2e-6 + 0.75 * math.ceil(sent * 2056) / 100e9 + 1e-6
    assert t["dispatch all_to_all bwd"] == pytest.approx(back, rel=1e-12)
    names = [r[1] for r in ops.rows]
    assert names == ["deepep layout", "deepep notify", "dispatch all_to_all",
                     "dispatch all_to_all bwd", "deepep multihot", "deepep multihot bwd"]


def test_layer_rows_against_the_alltoall_dispatcher() -> None:
    deep = Program(train=True, recipe=None, dispatcher="deepep")
    moe_mlp(deep, 0, TINY, 16, 1, 4, 2.0, False, 0.0)
    nccl = Program(train=True, recipe=None)
    moe_mlp(nccl, 0, TINY, 16, 1, 4, 2.0, False, 0.0)
    names = {r[1] for r in deep.rows}
    # no permute before the dispatch, no weighted sum after the combine, no probabilities'
    # all-to-all; the fused permute / unpermute around the experts
    assert not names & {"permute", "moe weighted sum", "dispatch probs all_to_all"}
    assert {"sort chunks by expert", "unsort chunks", "combine all_to_all bwd"} <= names
    # each exchange row: the combine is a barrier and a combine kernel, both ways
    parts = {r[1]: [deep.comms[i][0] for k, i in r[3] if k == "comms"] for r in deep.rows}
    assert parts["combine all_to_all"] == ["deepep_barrier", "deepep_combine"]
    assert parts["combine all_to_all bwd"] == ["deepep_barrier", "deepep_dispatch"]
    # a token goes once per rank holding its experts: fewer bytes than one row per expert
    sent = {deep.comms[i][0]: deep.comms[i][1] for r in deep.rows for k, i in r[3]
            if k == "comms" and r[1] == "combine all_to_all"}
    a2a = [nccl.comms[i][1] for r in nccl.rows for k, i in r[3]
           if k == "comms" and r[1] == "combine all_to_all"]
    assert sent["deepep_combine"] == pytest.approx(a2a[0] * ranks_hit(8, 2, 4) * 4 / 2)


def test_node_share_by_hand() -> None:
    # 8 experts, top-2, ep=4 on 2 nodes: a node (4 experts) is hit with 1 - C(4,2)/C(8,2)
    # = 22/28, a rank with 13/28: rows per node over rows per rank = 2·22 / (4·13)
    assert node_share(8, 2, 4, 2) == pytest.approx(44 / 52, rel=1e-12)
    assert node_share(8, 2, 4, 4) == 1.0


def test_internode_by_hand() -> None:
    # one row of 1 MB to each of 16 ranks on 2 nodes of 8: NVLink carries 7/8 of it, the NIC
    # share·(N-1)/N of it, both at once
    share = 0.3
    est = deepep_columns([("deepep_dispatch", 16e6, 16)], (8, 40e9), share, 300e9, 1e-6, "")
    nvl, rdma = 16e6 * 7 / 8 / 300e9, 16e6 * share / 2 / 40e9
    assert float(np.sum(est.time_s)) == pytest.approx(max(nvl, rdma) + 1e-6, rel=1e-12)
    one = deepep_columns([("deepep_dispatch", 16e6, 16)], None, 1.0, 300e9, 1e-6, "")
    assert float(np.sum(one.time_s)) == pytest.approx(16e6 * 15 / 16 / 300e9 + 1e-6, rel=1e-12)
    assert DEEPEP_ROUNDS == {"deepep_notify": 3.0, "deepep_barrier": 2.0,
                             "deepep_dispatch": 1.0, "deepep_combine": 1.0}


def test_readme_bandwidth_check() -> None:
    # DeepEP's README @9af0e0d: H800 (NVLink 200 GB/s per direction, "~160 GB/s maximum"),
    # 8 ranks, 4096 tokens of 7168: dispatch 153 GB/s, combine 158 GB/s of NVLink bytes. The
    # model prices NVLink bytes at NCCL's share of the line rate: 164 GB/s, 4 % / 7 % above
    link = 200e9 * NCCL_NVLINK_FRACTION
    nbytes = 4096 * 7168 * 2.0 * 8 * 0.9
    est = deepep_columns([("deepep_combine", nbytes, 8)], None, 1.0, link, 1e-6, "")
    rate = nbytes * 7 / 8 / float(np.sum(est.time_s))
    for published in (153e9, 158e9):
        assert rate / published == pytest.approx(1.0, abs=0.08)


def _dispatch_s(est: rl.transformer.ModelEstimate) -> tuple[float, float]:
    g = min(g for g, n, _ in est.rows if n == "router")
    t = {n: float(x) for (gg, n, _), x in zip(est.rows, est.columns["time_s"], strict=True)
         if gg == g}
    return t["dispatch all_to_all"], t["combine all_to_all"]


KW = dict(hardware="H100 SXM", micro_batch=1, moe_dispatcher="deepep")


def test_estimate_runs_and_is_monotone() -> None:
    cfg = rl.transformer.config("Qwen3-30B-A3B")
    small = rl.transformer.estimate(cfg, "train", seq_len=1024, ep=8, dp=8, **KW)
    long = rl.transformer.estimate(cfg, "train", seq_len=2048, ep=8, dp=8, **KW)
    wide = rl.transformer.estimate(cfg.replace(hidden_size=4096), "train", seq_len=1024,
                                   ep=8, dp=8, **KW)
    for a, b in ((small, long), (small, wide)):
        assert all(x < y for x, y in zip(_dispatch_s(a), _dispatch_s(b), strict=True))
    assert small.step.host_s > 0.0
    ds = rl.transformer.estimate("DeepSeek-V3", "train", seq_len=4096, tp=2, pp=8, ep=16,
                                 dp=8, gpus_per_node=8, **KW)
    assert ds.step.time_s > 0.0


def test_internode_sends_fewer_nic_bytes_than_nccl() -> None:
    # DeepSeek-V3 over 2 nodes: a token crosses the NIC once per node, not once per rank
    kw = dict(seq_len=4096, tp=2, pp=8, ep=16, dp=8, gpus_per_node=8, hardware="H100 SXM",
              micro_batch=1)
    deep = rl.transformer.estimate("DeepSeek-V3", "train", moe_dispatcher="deepep", **kw)
    nccl = rl.transformer.estimate("DeepSeek-V3", "train", **kw)
    assert _dispatch_s(deep)[0] < 0.5 * _dispatch_s(nccl)[0]
    one = rl.transformer.estimate("DeepSeek-V3", "train", moe_dispatcher="deepep",
                                  **dict(kw, ep=8, dp=4))
    # within a node the dispatch has no NIC term: per sent row, NVLink is the faster path
    assert _dispatch_s(one)[0] < _dispatch_s(deep)[0]


def test_one_forward_wait_like_the_alltoall_dispatcher() -> None:
    assert "deepep" in MOE_DISPATCHERS
    # the all-to-all dispatcher waits once per layer's forward (after its permute), DeepEP
    # once (before its dispatch kernel, after the notify kernel); neither in the backward
    assert len(SYNC_POINTS[("deepep", False)]) == len(SYNC_POINTS[("alltoall", False)]) == 1
    assert SYNC_POINTS[("deepep", False)] == (("dispatch all_to_all", 0),)
    assert SYNC_POINTS[("deepep", True)] == SYNC_POINTS[("alltoall", True)] == ()
    ops = Program(train=True, recipe=None, dispatcher="deepep")
    moe_mlp(ops, 0, TINY, 16, 1, 4, 2.0, False, 0.0)
    names = [r[1] for r in ops.rows]
    assert names.index("dispatch all_to_all") == names.index("deepep notify") + 1
    t = np.full(len(ops.rows), 1e-3)  # long kernels: only the waits expose the host
    hw = rl.hardware("H100 SXM")
    one = sync_exposed_s(ops, t, [("moe", [0])], hw, "default")
    two = sync_exposed_s(ops, t, [("moe", [0, 1])], hw, "default")
    assert 0.0 < one < two
    # the compiled preprocess runs DeepEP's top-k: one compiled call and one kernel
    i = names.index("topk")
    assert moe_stages(ops, i, False) == ["router", "deepep preprocess"]
    row = moe_extra_launches("deepep preprocess", 4, frozenset())
    assert row.shape[0] == 1 and row.sum() == 2.0


def test_comm_sms() -> None:
    assert DEEPEP_COMM_SMS == 20  # Megatron-Core's moe_deepep_num_sms default


def test_bad_input() -> None:
    kw = dict(hardware="H100 SXM", seq_len=512, micro_batch=1, ep=4, dp=4)
    for bad in ("deepEP", "deep_ep", 3):
        with pytest.raises(ValueError, match="moe_dispatcher"):
            rl.transformer.estimate("Qwen3-30B-A3B", "train", moe_dispatcher=bad, **kw)
    with pytest.raises(ValueError, match="moe_dispatcher"):  # needs ep > 1
        rl.transformer.estimate("Qwen3-30B-A3B", "train", moe_dispatcher="deepep",
                                hardware="H100 SXM", seq_len=512, micro_batch=1)
    with pytest.raises(ValueError, match="moe_dispatcher"):  # training only
        rl.transformer.estimate("Qwen3-30B-A3B", "prefill", moe_dispatcher="deepep",
                                hardware="H100 SXM", seq_len=512, ep=4)
    ops = Program(train=True, recipe=None, dispatcher="deepep")
    ops.ep_span = (8, 50e9)
    with pytest.raises(ValueError, match="ep=12"):  # internode: whole nodes
        deepep_dispatch(ops, 0, 64, 96, 2, 12, 64, 2.0, 128.0)
