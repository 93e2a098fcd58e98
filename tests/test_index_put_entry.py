"""``aten::_index_put_impl_`` with ``accumulate=True`` as aten's index_put_with_sort_kernel runs
it: cub's radix sort of the indices, then indexing_backward_kernel whose warps add each run of
duplicate indices serially (load -> add -> store chains). Hand-derived launches and chain
times, properties, and the fallbacks."""

from __future__ import annotations

import math

import pytest

import roofline as rl
from roofline import _core
from roofline.ops.registry import Call, Pricer, TensorArg, price
from roofline.ops.registry.memory_entries import ATEN_LOOP_STEP_S

HW = "H200 SXM"
SMS = 132.0


def test_launches_by_hand() -> None:
    assert _core.index_put_launches(1024, 2) == 2       # cub single tile + backward
    assert _core.index_put_launches(2304, 2) == 2       # 256 threads x 9 int64 items
    assert _core.index_put_launches(4096, 2) == 9       # as the H200 Qwen3-MoE traces list
    assert _core.index_put_launches(131072, 3) == 11
    for bad in (0.0, -1.0, math.nan):
        assert _core.index_put_launches(bad, 2) == 0.0


def test_chain_by_hand() -> None:
    step = 0.8e-6
    # 32768 indices into 4096 rows of 2048: 8 duplicates, 4096 x 16 chunk chains; a block of 4
    # indices holds 0.5 run starts -> 1 live chain per resident block, 16 blocks per SM
    rounds = math.ceil(4096 * 16 / (SMS * 16 * 1))
    assert _core.index_put_accumulate_chain_s(32768, 4096, 2048, SMS, step) == pytest.approx(
        rounds * 8 * step)
    # 2 duplicates of 4096-wide rows: 2 live chains per block, 32 chunks per row
    rounds = math.ceil(16384 * 32 / (SMS * 16 * 2))
    assert _core.index_put_accumulate_chain_s(32768, 16384, 4096, SMS, step) == pytest.approx(
        rounds * 2 * step)
    # no duplicates: 4 chains per block, one step each
    assert _core.index_put_accumulate_chain_s(4096, 4096, 128, SMS, step) == pytest.approx(
        math.ceil(4096 / (SMS * 16 * 4)) * step)
    for bad in (0.0, -1.0, math.nan):
        assert _core.index_put_accumulate_chain_s(bad, 4096, 2048, SMS, step) == 0.0
        assert _core.index_put_accumulate_chain_s(32768, 4096, 2048, bad, step) == 0.0


def test_chain_monotone() -> None:
    ts = [_core.index_put_accumulate_chain_s(8 * r, r, 2048, SMS, 0.8e-6)
          for r in (512, 4096, 16384, 65536)]
    assert ts == sorted(ts)
    dups = [_core.index_put_accumulate_chain_s(4096 * d, 4096, 2048, SMS, 0.8e-6)
            for d in (1, 2, 4, 8, 16)]
    assert dups == sorted(dups)


def _price(call: Call):  # type: ignore[no-untyped-def]
    p = Pricer(rl.hardware(HW), "default")
    costs, how = price(call, p)
    assert costs
    return costs[0][1], how, p


def _call(rows: int, n: int, cols: int, accumulate: str = "True") -> Call:
    return Call("aten::_index_put_impl_", (TensorArg((rows, cols), "bf16", 2), None,
                                           TensorArg((n, cols), "bf16", 2), None, None),
                concrete=("", "", "", accumulate, "True"))


def test_moe_permutation_backward_is_the_chains() -> None:
    """H200, torch 2.11 (moe_qwen3moe_grouped_mm_train_t4096): 9 kernels, the backward kernel
    170 us where one memory pass priced 63 us."""
    e, how, p = _price(_call(4096, 32768, 2048))
    chain = _core.index_put_accumulate_chain_s(32768, 4096, 2048, SMS, ATEN_LOOP_STEP_S)
    sort_bytes = _core.radix_sort_bytes(32768, 8)
    sort = p.traffic(int(sort_bytes / 2), int(sort_bytes / 2), 0.0, "_index_put_impl_",
                     kernels=8)
    assert float(e.time_s) == pytest.approx(float(sort.time_s) + chain)
    assert 150e-6 < float(e.time_s) < 260e-6
    assert "9 launches" in how and "8.0 duplicates" in how
    assert float(e.time_s) >= max(float(e.compute_s), float(e.memory_s))


def test_without_accumulate_or_shapes_stays_a_pass() -> None:
    plain, how, _ = _price(_call(4096, 32768, 2048, accumulate="False"))
    acc, _, _ = _price(_call(4096, 32768, 2048))
    assert "duplicates" not in how and float(plain.time_s) < float(acc.time_s)
    flat, how_flat, _ = _price(Call("aten::_index_put_impl_", (
        TensorArg((32768,), "fp32", 4), None, TensorArg((32768,), "fp32", 4), None, None),
        concrete=("", "", "", "True", "True")))
    assert "duplicates" not in how_flat and "9 launches" in how_flat
    assert float(flat.time_s) > 0
