"""Seed 000 asked through rl.trace: the FlashMLA issue's three measured kernels as records.

The seed (DeepSeek-V3 decode on H800, 64 sequences per micro-batch, EP over 2 local experts)
measured 240 us for MLA decode attention and 78 us / 37 us for the up+gate and down expert
GEMMs. As a trace would record them:

- attention as ``aten::_flash_attention_forward`` (layout B, L, H, E): q (64, 1, 128, 576),
  k (64, 4096, 1, 576), v (64, 4096, 1, 512). aten shapes cannot say that V is a slice of K
  (FlashMLA's shared latent cache), so the trace prices K and V reads separately:
  ``rl.attention(..., shared_kv=False, backend="flash")``;
- the expert GEMMs as ``aten::bmm`` over the 2 local experts with 256 tokens each, fp8 inputs
  (bf16 output: bmm records no output dtype; test_seed_000.py uses fp32 for up+gate).
"""

from __future__ import annotations

import dataclasses

import pytest

import roofline as rl
from roofline import _core
from roofline.ops.sustained import settled_clock

pytest.importorskip("pandas")

HW = "H800"
E4M3 = "c10::Float8_e4m3fn"
RECORDS = [
    {"op": "aten::_flash_attention_forward", "name": "flash_fwd_splitkv_mla_kernel",
     "shapes": [[64, 1, 128, 576], [64, 4096, 1, 576], [64, 4096, 1, 512]],
     "types": ["bf16", "bf16", "bf16"], "measured_s": 240e-6, "module": "attention"},
    {"op": "aten::bmm", "name": "sm90_xmma_gemm_e4m3_up_gate",
     "shapes": [[2, 256, 7168], [2, 7168, 4096]], "types": [E4M3, E4M3],
     "measured_s": 78e-6, "module": "moe.experts"},
    {"op": "aten::bmm", "name": "sm90_xmma_gemm_e4m3_down",
     "shapes": [[2, 256, 2048], [2, 2048, 7168]], "types": [E4M3, E4M3],
     "measured_s": 37e-6, "module": "moe.experts"},
]


@pytest.fixture(scope="module")
def rep() -> rl.trace.TraceReport:
    return rl.trace.from_records(RECORDS, hardware=HW)


#: The power limiter's load at each record's midpoint (records run back to back from 0, the
#: GPU idle before them): its busy time so far over the 100 ms window.
LOADS = (120e-6 / 0.1, (240e-6 + 39e-6) / 0.1, (240e-6 + 78e-6 + 18.5e-6) / 0.1)


def _at_load(e: rl.Estimate, load: float) -> rl.Estimate:
    """``e`` (run alone) at the clock ``1 - (1 - f) load`` the trace pricer gives it."""
    clock = settled_clock(rl.hardware(HW), "default")
    assert clock is not None
    f, tau, p = clock
    t = float(_core.limited_gemm_time_s(e.time_s, e.compute_s, e.memory_s, f, tau, p, load))
    return dataclasses.replace(e, time_s=t)


def expected() -> list[rl.Estimate]:
    alone = [
        rl.attention(64, 128, 1, 4096, 576, kv_heads=1, v_head_dim=512, dtype="bf16",
                     hardware=HW, backend="flash"),
        rl.gemm(256, 7168, 4096, dtype="fp8", batch=2, hardware=HW),
        rl.gemm(256, 2048, 7168, dtype="fp8", batch=2, hardware=HW),
    ]
    return [_at_load(e, x) for e, x in zip(alone, LOADS, strict=True)]


def test_each_kernel_priced_as_the_api_would(rep: rl.trace.TraceReport) -> None:
    k = rep.kernels()
    assert k.kind.tolist() == ["attention", "gemm", "gemm"]
    assert k.predicted_s.tolist() == pytest.approx([e.time_s for e in expected()], rel=1e-12)
    assert rep.measured_s == pytest.approx(240e-6 + 78e-6 + 37e-6)


def test_percentages_match_rl_explain(rep: rl.trace.TraceReport) -> None:
    k = rep.kernels()
    for (_, row), e in zip(k.iterrows(), expected(), strict=True):
        x = rl.explain(e, row.measured_s)
        assert row.pct_of_model == pytest.approx(x.pct_of_model, rel=1e-12)
        assert row.pct_of_roofline == pytest.approx(x.pct_of_roofline, rel=1e-12)
        assert row.achieved_flops_per_s == pytest.approx(x.achieved_flops_per_s, rel=1e-12)


def test_the_seeds_answer(rep: rl.trace.TraceReport) -> None:
    # The seed's question, answered per module: where is the time above the model?
    mods = rep.by_module().set_index("name")
    assert set(mods.index) == {"attention", "moe.experts"}
    assert mods.loc["moe.experts", "measured_s"] == pytest.approx(115e-6)
    losses = rep.losses("op")
    assert losses.lost_s.iloc[0] >= losses.lost_s.iloc[-1]
    assert rep.opportunities()  # plain-language lines name the largest losses
