"""HybridEP's exchange kernels priced against DeepEP's published GB200 table (issue #24,
session 12): deepseek-ai/DeepEP ``docs/README_Hybrid-EP.md`` @41cad94, "HybridEP Performance
Results", 4096 tokens per rank of hidden 7168, top-8 over 8 local experts per rank (random
uniform routing), 32 SMs, BF16, kernel-only algorithm bandwidth = received rows x 7168 x 2 B
over the kernel time (``tests/test_hybrid_ep.py``: ``dispatched_hidden.numel() * 2``).

The two per-peer constants (``pricing.HYBRIDEP_PEER_S``) are least squares over these ten
rows, so this is a calibration check (held in), not an out-of-sample test."""

from __future__ import annotations

from math import comb

import pytest

import roofline as rl
from roofline.transformer.pricing import HYBRIDEP_PEER_S

#: ranks -> (dispatch BF16, combine) GB/s, kernel only, 32 SMs
PUBLISHED = {8: (764.03, 737.13), 16: (706.95, 666.26), 24: (665.97, 639.80),
             32: (642.23, 605.15), 36: (632.31, 596.99)}


def _published_s(ranks: int, gbps: float) -> float:
    experts = 8 * ranks
    hit = 1 - comb(experts - 8, 8) / comb(experts, 8)  # a token reaches a rank
    return ranks * 4096 * hit * 7168 * 2 / (gbps * 1e9)


def test_hybridep_kernels_against_deepep_gb200_table() -> None:
    cfg = rl.transformer.config("DeepSeek-V3")
    for ranks, (disp, comb_) in PUBLISHED.items():
        df = rl.transformer.estimate(cfg.replace(num_experts=8 * ranks), "train",
                                     hardware="GB200", seq_len=4096, micro_batch=1, ep=ranks,
                                     dp=ranks, moe_dispatcher="hybridep").to_pandas()
        t = df.drop_duplicates("op").set_index("op")["time_s"]
        assert t["dispatch all_to_all"] / _published_s(ranks, disp) == pytest.approx(1, abs=0.03)
        assert t["combine all_to_all"] / _published_s(ranks, comb_) == pytest.approx(1, abs=0.04)
        # the backward runs the other kernel (dispatch's backward is the combine)
        assert t["dispatch all_to_all bwd"] == pytest.approx(t["combine all_to_all"], rel=0.01)
        assert t["combine all_to_all bwd"] == pytest.approx(t["dispatch all_to_all"], rel=0.01)


def test_hybridep_per_peer_cost_by_hand() -> None:
    # 16 ranks: 15 peers x 2.9 us on the dispatch, x 4.3 us on the combine, above the bytes
    # at NCCL's NVLink 5 share (721.8 GB/s)
    cfg = rl.transformer.config("DeepSeek-V3").replace(num_experts=128)
    df = rl.transformer.estimate(cfg, "train", hardware="GB200", seq_len=4096, micro_batch=1,
                                 ep=16, dp=16, moe_dispatcher="hybridep").to_pandas()
    for op, key in (("dispatch all_to_all", "hybridep_dispatch"),
                    ("combine all_to_all", "hybridep_combine")):
        row = df[df.op == op].iloc[0]
        assert row["overhead_s"] == pytest.approx(15 * HYBRIDEP_PEER_S[key], rel=1e-9)
        assert row["memory_s"] == pytest.approx(row["bytes"] / 721.8e9, rel=1e-9)
    # the all-to-all dispatcher keeps NCCL's 1 us per step
    a2a = rl.transformer.estimate(cfg, "train", hardware="GB200", seq_len=4096, micro_batch=1,
                                  ep=16, dp=16).to_pandas()
    assert a2a[a2a.op == "dispatch all_to_all"].iloc[0]["overhead_s"] == pytest.approx(15e-6)
