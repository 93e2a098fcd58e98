"""The GPT-OSS-120B per-kernel budget (benchmarks/gptoss_kernel_budget.py, #24): every op the
model prices for the GB200 row is lined up with a Megatron-Core / TE kernel, and the parts sum
to the micro-batch that benchmarks/train_moe_breakdown.py reports."""

from __future__ import annotations

import pytest

from tests._benchmarks import load_benchmark


def test_every_priced_op_is_lined_up_and_the_parts_sum() -> None:
    mod = load_benchmark("gptoss_kernel_budget")
    b = mod.budget()
    names = {name.removesuffix(" bwd") for _, name, _, _, _, _ in b["rows"]}
    assert names <= set(mod.LAUNCHED), names - set(mod.LAUNCHED)
    # every op has its backward: 24 per layer kind (2 kinds), 4 in the head
    assert len(b["rows"]) == 2 * (2 * 24 + 4)
    assert all(ms > 0 for *_, ms in b["rows"])
    # the parts sum to the micro-batch train_moe_breakdown.py prints (GB200: 387.7 ms; PP1,
    # so every layer is on the busiest stage; 385.1 before NCCL's NVLink 5 share, 40.1 / 50,
    # 386.0 before Megatron-Core's GQA Q / K / V split; 388.6 with GB200's HBM peak at its
    # 7936-bit bus, 7.928 TB/s instead of 8.0: its streaming kernels 0.9 % slower,
    # hardware-notes §41; 377.6 with GB200's GEMM ceilings refitted to its 152 SMs, its GEMMs
    # and attention 3-6 % faster, hardware-notes §42; 380.1 with the busiest EP rank's rows
    # under the row's force-balanced routing, +1.28 %, moe_router="force_balanced", hardware-notes
    # §46), and the measurement implies more (-26 %)
    assert b["total_ms"] == pytest.approx(380.1, abs=0.5)
    assert b["implied_ms"] > 1.2 * b["total_ms"]


def test_unknown_row_raises() -> None:
    mod = load_benchmark("gptoss_kernel_budget")
    with pytest.raises(ValueError, match="no job row 'nope'"):
        mod.budget("nope")
