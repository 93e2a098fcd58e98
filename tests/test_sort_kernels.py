"""aten's top-k (``torch.topk`` on CUDA): one block per slice radix-selects the k-th value in
barrier-synchronized passes, then a bitonic kernel sorts k <= 32 values per slice (time set by
instruction issue and barrier latency, not DRAM bytes); and a one-segment ``torch.sort`` as
cub's onesweep radix sort. Hand-derived values, properties, the fallbacks, and parity of the
trace/registry and the live torch paths."""

from __future__ import annotations

import math

import pytest

import roofline as rl
from roofline import _core
from roofline.ops.registry import Call, Pricer, TensorArg, price

HW = "H200 SXM"
SMS, CLOCK = 132.0, 1.83e9  # the H200 entry's SMs and clock
ISSUE = SMS * 4 * CLOCK     # warp instructions per second over the GPU


def test_block_warps_and_multiblock_heuristic() -> None:
    assert _core.topk_block_warps(8) == 1
    assert _core.topk_block_warps(128) == 4
    assert _core.topk_block_warps(200) == 7      # roundup(200, 32) = 224 threads
    assert _core.topk_block_warps(5000) == 32    # capped at 1024 threads
    # PyTorch's should_use_multiblock: > 4000 slices of >= 400, 800-4000 of >= 800, ...
    assert not _core.topk_multiblock(16384, 128)
    assert _core.topk_multiblock(32768, 512)
    assert not _core.topk_multiblock(1024, 512)
    assert _core.topk_multiblock(1024, 1024)
    assert _core.topk_multiblock(1, 128256)      # one vocabulary-sized slice
    assert not _core.topk_multiblock(1, 10000)


def test_select_formula_by_hand() -> None:
    # 16384 slices of 128: 4 warps each, 1 loop, 32 / 2 + 1 = 17 steps of 90 instructions
    issue = 16384 * 4 * 17 * 90 / ISSUE
    latency = 17 * (350 + 4 * 90 / 4) / CLOCK
    assert issue > latency
    assert _core.topk_select_s(16384, 128, 32, SMS, CLOCK) == pytest.approx(issue)
    # 64 slices of 1024: one block alone per SM: the latency of 17 steps of 32 warps
    latency = 17 * (350 + 32 * 90 / 4) / CLOCK
    assert _core.topk_select_s(64, 1024, 32, SMS, CLOCK) == pytest.approx(latency)
    # a 4096-long slice loops 4 times over its 1024 threads in every step
    assert _core.topk_select_s(64, 4096, 32, SMS, CLOCK) == pytest.approx(
        17 * (350 + 32 * 4 * 90 / 4) / CLOCK)
    # 64-bit radix: 33 steps
    assert _core.topk_select_s(16384, 128, 64, SMS, CLOCK) == pytest.approx(
        16384 * 4 * 33 * 90 / ISSUE)
    for bad in (0.0, -1.0, math.nan):
        assert _core.topk_select_s(bad, 128, 32, SMS, CLOCK) == 0.0
        assert _core.topk_select_s(16, 128, 32, bad, CLOCK) == 0.0


def test_bitonic_formula_by_hand() -> None:
    # 16384 slices: 8192 warps (16 threads a slice) x 15 stages x 90 instructions
    assert _core.topk_bitonic_sort_s(16384, SMS, CLOCK) == pytest.approx(8192 * 15 * 90 / ISSUE)
    # few slices: one 8-warp block's 15 stages
    assert _core.topk_bitonic_sort_s(64, SMS, CLOCK) == pytest.approx(
        15 * (350 + 8 * 90 / 4) / CLOCK)
    assert _core.topk_bitonic_sort_s(0, SMS, CLOCK) == 0.0


@pytest.mark.parametrize("n", [8, 64, 128, 512, 1024])
def test_select_monotone(n: int) -> None:
    ts = [_core.topk_select_s(s, n, 32, SMS, CLOCK) for s in (1, 64, 1024, 4096, 32768)]
    assert ts == sorted(ts)
    longer = [_core.topk_select_s(4096, m, 32, SMS, CLOCK) for m in (8, 64, 128, 512, 1024)]
    assert longer == sorted(longer)


def _price(call: Call):  # type: ignore[no-untyped-def]
    costs, how = price(call, Pricer(rl.hardware(HW), "default"))
    assert costs
    return costs[0][1], how


ROUTER = TensorArg((16384, 128), "fp32", 4)


def test_router_topk_is_the_select_not_a_pass() -> None:
    """H200, torch 2.11 (data/programs/h200/session8.jsonl): a MoE router's
    topk(probs[16384, 128] fp32, 8) ran gatherTopK 98-104 us + bitonic sort 14 us."""
    e, how = _price(Call("aten::topk", (ROUTER, 8, -1, True, True)))
    busy = (_core.topk_select_s(16384, 128, 32, SMS, CLOCK)
            + _core.topk_bitonic_sort_s(16384, SMS, CLOCK))
    assert float(e.memory_s) == pytest.approx(busy)
    assert 100e-6 < float(e.time_s) < 140e-6
    assert "4 warp" in how and "bitonic" in how
    unsorted, how_u = _price(Call("aten::topk", (ROUTER, 8, -1, True, False)))
    assert float(unsorted.time_s) < float(e.time_s)
    assert "bitonic" not in how_u
    # k = 1 needs no sort; k > 32 runs other sort kernels (not the bitonic one)
    _, how1 = _price(Call("aten::topk", (ROUTER, 1, -1, True, True)))
    assert "bitonic" not in how1
    _, how64 = _price(Call("aten::topk", (ROUTER, 64, -1, True, True)))
    assert "bitonic" not in how64


def test_multiblock_shapes_stay_a_memory_pass() -> None:
    vocab = TensorArg((4, 128256), "fp32", 4)
    e, how = _price(Call("aten::topk", (vocab, 50, -1, True, True)))
    assert "radix-selects" not in how
    assert float(e.bytes) >= vocab.nbytes


def test_dim_argument_picks_the_slice() -> None:
    x = TensorArg((128, 16384), "fp32", 4)
    along0, _ = _price(Call("aten::topk", (x, 8, 0, True, False)))
    flat, _ = _price(Call("aten::topk", (TensorArg((16384, 128), "fp32", 4), 8, -1, True,
                                         False)))
    assert float(along0.memory_s) == pytest.approx(float(flat.memory_s))


def test_torch_estimate_prices_the_same_kernel() -> None:
    torch = pytest.importorskip("torch")
    import roofline.torch as rt

    class Router(torch.nn.Module):  # type: ignore[misc]
        def forward(self, probs: torch.Tensor) -> object:
            return torch.topk(probs, 8, dim=-1)

    probs = torch.empty(16384, 128, dtype=torch.float32, device="meta")
    live = float(rt.estimate(Router(), (probs,), hardware=HW, mode="inference").time_s)
    traced, _ = _price(Call("aten::topk", (ROUTER, 8, -1, True, True)))
    assert live == pytest.approx(float(traced.time_s), rel=0.02)


def test_radix_sort_formulas_by_hand() -> None:
    assert _core.radix_sort_passes(64) == 8
    assert _core.radix_sort_passes(32) == 4
    assert _core.radix_sort_passes(16) == 2
    assert _core.radix_sort_launches(8) == 22   # as the H200 profile of an int64 argsort
    assert _core.radix_sort_launches(4) == 14   # int32
    # 1 M int64 keys: the histogram reads 8 MB; 8 passes read + write keys and indices
    assert _core.radix_sort_bytes(1 << 20, 8) == (1 << 20) * 8 + 8 * 2 * (1 << 20) * 16
    assert _core.radix_sort_lookback_s(8) == pytest.approx(8 * 4.4e-6)
    for bad in (0.0, -3.0, math.nan):
        assert _core.radix_sort_passes(bad) == 0.0
        assert _core.radix_sort_bytes(bad, 8) == 0.0
        assert _core.radix_sort_lookback_s(bad) == 0.0


def test_one_segment_sort_is_cub_radix_sort() -> None:
    """H200, torch 2.11 (session8b.jsonl): stable argsort of 1 M int64 ids took 137-140 us in
    22 launches; of 16 K, 66 us (launches and look-back chains, not bytes)."""
    ids = TensorArg((1 << 20,), "i64", 8)
    e, how = _price(Call("aten::sort", (ids, True, -1, False)))
    assert "8 passes, 22 launches" in how
    p = Pricer(rl.hardware(HW), "default")
    moved = _core.radix_sort_bytes(1 << 20, 8)
    plain = p.traffic(int(moved / 2), int(moved / 2), 0.0, "aten::sort", kernels=22)
    assert float(e.time_s) == pytest.approx(float(plain.time_s) + 8 * 4.4e-6)
    assert 110e-6 < float(e.time_s) < 170e-6
    small, _ = _price(Call("aten::sort", (TensorArg((16384,), "i64", 8), True, -1, False)))
    assert 50e-6 < float(small.time_s) < 80e-6
    int32, how32 = _price(Call("aten::sort", (TensorArg((1 << 20,), "i32", 4), True, -1,
                                              False)))
    assert "4 passes, 14 launches" in how32
    assert float(int32.time_s) < float(e.time_s)


def test_small_and_segmented_sorts_stay_a_pass() -> None:
    for x in (TensorArg((4096,), "i64", 8), TensorArg((64, 8192), "fp32", 4)):
        _, how = _price(Call("aten::sort", (x, True, -1, False)))
        assert "cub" not in how


def test_sort_monotone_in_keys() -> None:
    ts = [float(_price(Call("aten::sort", (TensorArg((n,), "i64", 8), True, -1, False)))[0]
                .time_s) for n in (5000, 1 << 14, 1 << 16, 1 << 18, 1 << 20, 1 << 24)]
    assert ts == sorted(ts)
