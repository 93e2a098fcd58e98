"""index_add_ / scatter_add_ priced at the 16-bit atomic rate (ops/registry/atomic_entries.py):
hand-derived, fp32 unaffected, and against every MoE combine in the H200 traces."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

import roofline as rl
import roofline.torch  # noqa: F401
from roofline.ops.registry.atomic_entries import ATOMIC_UPDATES_PER_SM_CLOCK

ROOT = Path(__file__).resolve().parents[1]


class Combine(torch.nn.Module):
    def forward(self, out: torch.Tensor, idx: torch.Tensor, src: torch.Tensor) -> torch.Tensor:
        return out.index_add_(0, idx, src)


def _combine(tokens: int, rows: int, cols: int, dtype: torch.dtype) -> float:
    out = torch.empty(tokens, cols, dtype=dtype, device="meta")
    idx = torch.empty(rows, dtype=torch.long, device="meta")
    src = torch.empty(rows, cols, dtype=dtype, device="meta")
    est = rl.torch.estimate(Combine(), (out, idx, src), "H200", mode="inference")
    return float(est.time_s)


def test_bf16_index_add_is_priced_at_the_atomic_rate() -> None:
    hw = rl.hardware("H200")
    rows, cols = 131072, 2048
    want = rows * cols / (ATOMIC_UPDATES_PER_SM_CLOCK * hw.sms * hw.clock_hz)
    assert _combine(16384, rows, cols, torch.bfloat16) == pytest.approx(want, rel=1e-6)


def test_fp32_index_add_stays_a_memory_pass() -> None:
    rows, cols = 131072, 2048
    t32 = _combine(16384, rows, cols, torch.float32)
    moved = (16384 * cols * 4) * 2 + rows * cols * 4 + rows * 8  # out r/w, src, index
    assert t32 < 1.5 * moved / rl.hardware("H200").mem_bytes_per_s
    assert t32 < _combine(16384, rows, cols, torch.bfloat16)


def test_monotone_in_updates() -> None:
    times = [_combine(4096, r, 2048, torch.bfloat16) for r in (1024, 8192, 32768, 131072)]
    assert times == sorted(times)


def test_every_h200_moe_combine_within_20_percent() -> None:
    rows = [json.loads(line) for line in open(ROOT / "data/programs/h200/programs.jsonl")]
    errs = []
    for r in rows:
        if not r["name"].startswith("moe_"):
            continue
        rep = rl.trace.explain(ROOT / "data/programs/h200/traces" / r["trace"],
                               hardware="H200", iterations=r["trace_steps"])
        ops = rep.by_op()
        for x in ops[ops["name"].str.contains("index_add")].itertuples():
            errs.append(abs(x.predicted_s / x.measured_s - 1))
    assert len(errs) >= 18
    assert max(errs) < 0.2
    assert sorted(errs)[len(errs) // 2] < 0.06
