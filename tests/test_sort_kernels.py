"""aten's top-k (``torch.topk`` on CUDA): one block per slice (or, past the heuristic, the
multi-block kernels) radix-selects the k-th value in
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


def test_multiblock_config_by_hand() -> None:
    """aten's mbtopk launch configuration (TensorTopK.cu) on 132 SMs: 6 blocks of 256 per SM."""
    assert _core.topk_multiblock_passes(4) == 4 and _core.topk_multiblock_passes(2) == 2
    assert _core.topk_multiblock_passes(8) == 8
    assert _core.topk_multiblock_launches(4) == 21   # as the H200 fp32 profiles
    assert _core.topk_multiblock_launches(2) == 15   # bf16
    # 1024 x 1024: ceil(1048576 / (132 x 6 x 256)) = 6 items, one block per slice
    assert _core.topk_multiblock_items_per_thread(1024, 1024, SMS) == 6
    assert _core.topk_multiblock_blocks_per_slice(1024, 1024, SMS) == 1
    # 32768 x 1024: 166 items clamped to 64
    assert _core.topk_multiblock_items_per_thread(32768, 1024, SMS) == 64
    # one 128256-token vocabulary: 4 items (the floor), ceil(128256 / 1024) = 126 blocks
    assert _core.topk_multiblock_items_per_thread(1, 128256, SMS) == 4
    assert _core.topk_multiblock_blocks_per_slice(1, 128256, SMS) == 126
    for bad in (0.0, -1.0, math.nan):
        assert _core.topk_multiblock_passes(bad) == 0.0
        assert _core.topk_multiblock_launches(bad) == 0.0
        assert _core.topk_multiblock_s(bad, 1024, 4, SMS, CLOCK) == 0.0
        assert _core.topk_multiblock_s(1024, 1024, 4, bad, CLOCK) == 0.0
        assert _core.topk_multiblock_s(1024, 1024, bad, SMS, CLOCK) == 0.0


def test_multiblock_formula_by_hand() -> None:
    trip, base, scan = 0.36e-6, 0.29e-6, 350 / CLOCK
    # 32768 slices of 1024 fp32: one block per slice walking 4 items, 32768 / 792 waves
    waves = 32768 / (SMS * 6)
    digit = base + 5 * trip
    cumsum = base + 1 * trip + scan
    within = base + 3 * trip + scan
    gather = base + 5 * trip + 8 * scan
    want = waves * (4 * (digit + cumsum + within) + gather)
    assert _core.topk_multiblock_s(32768, 1024, 4, SMS, CLOCK) == pytest.approx(want)
    # bf16: 2 passes of the same kernels
    assert _core.topk_multiblock_s(32768, 1024, 2, SMS, CLOCK) == pytest.approx(
        waves * (2 * (digit + cumsum + within) + gather))
    # one vocabulary row: 126 blocks (one wave), the cumsum walks ceil(126 / 4) = 32 rounds
    one = (4 * ((base + 5 * trip) + (base + 32 * trip + scan) + (base + 3 * trip + scan))
           + base + 5 * trip + 8 * scan)
    assert _core.topk_multiblock_s(1, 128256, 4, SMS, CLOCK) == pytest.approx(one)


def test_multiblock_monotone() -> None:
    ts = [_core.topk_multiblock_s(s, 1024, 4, SMS, CLOCK) for s in (1, 64, 1024, 4096, 32768)]
    assert ts == sorted(ts)
    longer = [_core.topk_multiblock_s(4096, n, 4, SMS, CLOCK) for n in (400, 512, 1024, 4096)]
    assert longer == sorted(longer)
    assert _core.topk_multiblock_s(4096, 1024, 2, SMS, CLOCK) < \
        _core.topk_multiblock_s(4096, 1024, 4, SMS, CLOCK)


def test_multiblock_topk_is_priced_as_it_runs() -> None:
    """H200, torch 2.11 (session8b.jsonl): topk(x[32768, 1024], 8) ran 21 kernels in 945 us
    (fp32, unsorted) and 15 in 563 us (bf16); sorted adds the bitonic sort (969 / 589 us).
    One memory pass priced them at ~30 us."""
    x = TensorArg((32768, 1024), "fp32", 4)
    e, how = _price(Call("aten::topk", (x, 8, -1, True, False)))
    assert "multi-block" in how and "21 launches" in how
    p = Pricer(rl.hardware(HW), "default")
    plain = p.traffic(x.nbytes * 5, 32768 * 8 * 12, 0.0, "aten::topk", kernels=21)
    busy = _core.topk_multiblock_s(32768, 1024, 4, SMS, CLOCK)
    assert float(e.time_s) == pytest.approx(float(plain.time_s) + busy - float(plain.memory_s))
    assert float(e.time_s) == pytest.approx(945e-6, rel=0.1)
    bf16, how16 = _price(Call("aten::topk", (TensorArg((32768, 1024), "bf16", 2), 8, -1, True,
                                            False)))
    assert "15 launches" in how16
    assert float(bf16.time_s) == pytest.approx(563e-6, rel=0.1)
    srt, hows = _price(Call("aten::topk", (x, 8, -1, True, True)))
    assert "bitonic" in hows
    assert float(srt.time_s) == pytest.approx(
        float(e.time_s) + _core.topk_bitonic_sort_s(32768, SMS, CLOCK), rel=0.05)
    # a vocabulary-sized slice takes the same path (several blocks per slice)
    vocab = TensorArg((4, 128256), "fp32", 4)
    v, howv = _price(Call("aten::topk", (vocab, 50, -1, True, True)))
    assert "multi-block" in howv and "126 block(s) per slice" in howv
    assert float(v.time_s) > 21 * 1e-6


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


def test_block_radix_sort_formula_by_hand() -> None:
    """aten's radixSortKVInPlace: 32 items per thread, 32-128 threads (Sort.cu's
    MediumRadixSort), cub BlockRadixSort's 4-bit passes over all 64 bits of int64 keys."""
    assert _core.block_radix_sort_threads(4096) == 128
    assert _core.block_radix_sort_threads(2048) == 64
    assert _core.block_radix_sort_threads(1024) == 32
    assert _core.block_radix_sort_threads(300) == 32   # a 1024-key sort (512 ceiling)
    assert _core.block_radix_sort_items(1024) == 32
    assert _core.block_radix_sort_items(100) == 4
    # 1024 int64 keys, int64 values: 1 warp, 16 passes of 32 x 60 chain cycles, a 350-cycle
    # barrier step, 2 x 1 x 32 x (2 + 2) exchange wavefronts
    one = 16 * (32 * 60 + 350 + 2 * 32 * 4) / CLOCK
    assert _core.block_radix_sort_s(1, 1024, 8, 8, SMS, CLOCK) == pytest.approx(one)
    # 4096 keys: 4 warps exchange 4 x as many wavefronts
    four = 16 * (32 * 60 + 350 + 2 * 4 * 32 * 4) / CLOCK
    assert _core.block_radix_sort_s(1, 4096, 8, 8, SMS, CLOCK) == pytest.approx(four)
    # fp32 keys: 8 passes, one wavefront per 32 keys
    assert _core.block_radix_sort_s(1, 1024, 4, 8, SMS, CLOCK) == pytest.approx(
        8 * (32 * 60 + 350 + 2 * 32 * 3) / CLOCK)
    # slices past the SMs run in waves
    assert _core.block_radix_sort_s(2 * SMS, 1024, 8, 8, SMS, CLOCK) == pytest.approx(2 * one)
    for bad in (0.0, -1.0, math.nan):
        assert _core.block_radix_sort_s(bad, 1024, 8, 8, SMS, CLOCK) == 0.0
        assert _core.block_radix_sort_s(1, bad, 8, 8, SMS, CLOCK) == 0.0


def test_small_sort_is_the_block_radix_sort() -> None:
    """H200 MoE traces (torch 2.11): argsort of 1024 int64 expert ids ran one
    radixSortKVInPlace<-2, -1, 32, 32> block of 32 threads for 27.4 us, of 4096 ids a block of
    128 threads for 33.6 us, where one memory pass priced 1.4 us."""
    e, how = _price(Call("aten::sort", (TensorArg((1024,), "i64", 8), True, -1, False)))
    assert "one block of 32 threads x 32 keys" in how and "16 passes" in how
    assert float(e.time_s) > _core.block_radix_sort_s(1, 1024, 8, 8, SMS, CLOCK)
    assert 20e-6 < float(e.time_s) < 30e-6
    e4, how4 = _price(Call("aten::sort", (TensorArg((4096,), "i64", 8), True, -1, False)))
    assert "128 threads" in how4
    assert float(e.time_s) < float(e4.time_s) < 36e-6
    # the longest block sort stays under the shortest cub onesweep sort
    e5, _ = _price(Call("aten::sort", (TensorArg((4097,), "i64", 8), True, -1, False)))
    assert float(e4.time_s) < float(e5.time_s)


def test_warp_and_segmented_sorts_stay_a_pass() -> None:
    for x in (TensorArg((128,), "i64", 8), TensorArg((64, 8192), "fp32", 4),
              TensorArg((8, 512), "i64", 8)):
        _, how = _price(Call("aten::sort", (x, True, -1, False)))
        assert "cub" not in how and "block" not in how


def test_sort_monotone_in_keys() -> None:
    ts = [float(_price(Call("aten::sort", (TensorArg((n,), "i64", 8), True, -1, False)))[0]
                .time_s) for n in (5000, 1 << 14, 1 << 16, 1 << 18, 1 << 20, 1 << 24)]
    assert ts == sorted(ts)
