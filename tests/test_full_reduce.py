"""aten's full reductions (``x.sum()``, ``x.mean()`` into one value): the launch configuration
``setReduceConfig`` (ATen Reduce.cuh) picks, the latency chain of a small reduction, and the
registry entry (only full reductions of eager aten ops move; row reductions stay a pass)."""

from __future__ import annotations

import math

import pytest

import roofline as rl
from roofline import _core
from roofline.ops.registry import Call, Pricer, TensorArg, price

HW = "H200 SXM"
SMS = 132.0
TRIP = 0.36e-6  # select.hpp's kBlockRoundTripS


def test_config_by_hand() -> None:
    # bf16 (8 elements per load): 1024 -> 128 threads; >= 4096 -> 512 threads
    assert _core.full_reduce_threads(1024, 8) == 128
    assert _core.full_reduce_threads(16384, 8) == 512
    assert _core.full_reduce_threads(100, 8) == 64       # < 128 elements: not vectorized
    assert _core.full_reduce_threads(1000, 4) == 128     # last_pow2(250)
    # 16384: 32 values per thread < 256: one block, 4 loads of 8
    assert _core.full_reduce_blocks(16384, 8, SMS) == 1
    assert _core.full_reduce_loads(16384, 8, SMS) == 4
    # 262144: 512 values per thread -> max(2, min(132 x 4, 32)) = 32 blocks of 16 values
    assert _core.full_reduce_blocks(262144, 8, SMS) == 32
    assert _core.full_reduce_loads(262144, 8, SMS) == 2
    # 4 M: max(32, min(528, 512)) = 512 blocks; 16 M: capped at 132 x 4 = 528
    assert _core.full_reduce_blocks(1 << 22, 8, SMS) == 512
    assert _core.full_reduce_blocks(1 << 24, 8, SMS) == 528
    # 256 M: ceil(524288 / 256) = 2048 blocks keep 256 values per thread
    assert _core.full_reduce_blocks(1 << 28, 8, SMS) == 2048
    for bad in (0.0, -5.0, math.nan):
        assert _core.full_reduce_loads(bad, 8, SMS) == 0.0
        assert _core.full_reduce_chain_s(bad, 8, 0.0, SMS) == 0.0
        assert _core.full_reduce_blocks(1024, 8, bad) == 1.0


def test_chain_by_hand() -> None:
    # one block, 4 dependent loads: 4 round trips (the bytes are negligible)
    assert _core.full_reduce_chain_s(16384, 8, 1e-8, SMS) == pytest.approx(4 * TRIP)
    # 32 blocks, 2 loads each, and the global tail's 3 round trips
    assert _core.full_reduce_chain_s(262144, 8, 1e-7, SMS) == pytest.approx(5 * TRIP)
    # many bytes: they stream behind the first round trip, then the tail
    assert _core.full_reduce_chain_s(1 << 22, 8, 2e-6, SMS) == pytest.approx(
        2e-6 + TRIP + 3 * TRIP)


def test_chain_monotone_within_each_config() -> None:
    def chain(n: int) -> float:
        return float(_core.full_reduce_chain_s(n, 8, n * 2 / 4.4e12, SMS))

    one_block = [chain(1 << k) for k in range(8, 17)]       # up to 64 K: one block
    assert one_block == sorted(one_block)
    multi = [chain(1 << k) for k in range(18, 29)]          # 256 K and up: the global tail
    assert multi == sorted(multi)
    # aten's switch is not monotone: 64 K elements in one block walk 16 loads per thread,
    # 256 K over 32 blocks walk 2 and the tail
    assert _core.full_reduce_loads(1 << 16, 8, SMS) == 16
    assert chain(1 << 16) > chain(1 << 18)


def _price(call: Call):  # type: ignore[no-untyped-def]
    costs, how = price(call, Pricer(rl.hardware(HW), "default"))
    assert costs
    return costs[0][1], how


def _stream(nbytes: int) -> float:
    return float(Pricer(rl.hardware(HW), "default").traffic(nbytes, 0, nbytes / 2,
                                                            "aten::mean").time_s)


@pytest.mark.parametrize(("n", "measured"), [(1024, 1.71e-6), (16384, 2.62e-6),
                                             (262144, 5.07e-6), (1 << 22, 7.13e-6)])
def test_small_mean_is_the_chain(n: int, measured: float) -> None:
    """H200, torch 2.11 (data/programs/h200/session8.jsonl): x.mean() of bf16 elements (the
    kernel, plus the memset above 16 K); one streaming pass priced 16 K-4 M 45-69 % fast."""
    x = TensorArg((n,), "bf16", 2, (1,))
    e, how = _price(Call("aten::mean", (x, None), outputs=(TensorArg((), "bf16", 2),)))
    assert "full reduction" in how
    gap = float(Pricer(rl.hardware(HW), "default").traffic(0, 0, 0.0, "l").time_s)
    blocks = _core.full_reduce_blocks(n, 8, SMS)
    assert float(e.time_s) >= (2 if blocks > 1 else 1) * gap
    assert float(e.time_s) >= _stream(x.nbytes)
    assert float(e.time_s) == pytest.approx(measured, rel=0.15)


def test_large_mean_stays_the_pass() -> None:
    x = TensorArg((1 << 28,), "bf16", 2, (1,))
    e, _ = _price(Call("aten::mean", (x, None), outputs=(TensorArg((), "bf16", 2),)))
    assert float(e.time_s) == pytest.approx(_stream(x.nbytes), rel=0.03)


def test_only_full_reductions_move() -> None:
    rows = TensorArg((4096, 4096), "bf16", 2, (4096, 1))
    e, how = _price(Call("aten::mean", (rows, [-1], True), outputs=(
        TensorArg((4096, 1), "bf16", 2),)))
    assert "full reduction" not in how
    # a trace records no outputs: the dim list decides
    _, how_dim = _price(Call("aten::sum", (TensorArg((64, 128), "fp32", 4), [1], False),
                             concrete=("", "[1]", "False")))
    assert "full reduction" not in how_dim
    _, how_all = _price(Call("aten::sum", (TensorArg((64, 128), "fp32", 4), [0, 1], False),
                             concrete=("", "[0, 1]", "False")))
    assert "full reduction" in how_all
    _, how_none = _price(Call("aten::sum", (TensorArg((64, 128), "fp32", 4), None)))
    assert "full reduction" in how_none
    # one row of a decode batch (1 x 1 x 4096 -> mean over -1) is a full reduction
    _, how_row = _price(Call("aten::mean", (TensorArg((1, 1, 4096), "fp32", 4), [-1], True),
                             concrete=("", "[-1]", "True")))
    assert "full reduction" in how_row
    # a non-contiguous input runs another loop: left as the pass
    t = TensorArg((128, 64), "fp32", 4, (1, 128))
    _, how_t = _price(Call("aten::sum", (t, None)))
    assert "full reduction" not in how_t


def test_torch_estimate_prices_the_same() -> None:
    torch = pytest.importorskip("torch")
    import roofline.torch as rt

    class Mean(torch.nn.Module):  # type: ignore[misc]
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return x.mean()

    x = torch.empty(262144, dtype=torch.bfloat16, device="meta")
    live = float(rt.estimate(Mean(), (x,), hardware=HW, mode="inference").time_s)
    traced, _ = _price(Call("aten::mean", (TensorArg((262144,), "bf16", 2, (1,)), None)))
    assert live == pytest.approx(float(traced.time_s), rel=0.02)


def test_max_and_min_run_sums_reduce_kernel() -> None:
    """``x.max()`` / ``x.min()`` (torch.bincount's range of the MoE expert ids) run the same
    one-block ``reduce_kernel<512, 1>`` as ``sum`` (vector width 4 for every type): H200 MoE
    traces, 32768 int64 ids 5.4-5.6 us, 1024 ids 2.2-2.5 us, where one pass priced 1.5 / 1.0."""
    ids = TensorArg((32768,), "i64", 8, (1,))
    s, _ = _price(Call("aten::sum", (ids, None)))
    for op in ("aten::max", "aten::min", "aten::amax", "aten::amin"):
        e, how = _price(Call(op, (ids,)))
        assert "full reduction of 32768 elements: one block of 512 threads" in how
        assert float(e.time_s) == pytest.approx(float(s.time_s))
    # 16-bit: sum loads 8 at a time, max 4 (a longer chain)
    h = TensorArg((32768,), "bf16", 2, (1,))
    hs, _ = _price(Call("aten::sum", (h, None)))
    hm, _ = _price(Call("aten::max", (h,)))
    assert float(hm.time_s) > float(hs.time_s)
    # a dim reduction and the elementwise max of two tensors stay a pass
    _, how_dim = _price(Call("aten::max", (TensorArg((64, 128), "fp32", 4), 1, False),
                             concrete=("", "1", "False")))
    assert "full reduction" not in how_dim
    two = TensorArg((4096,), "fp32", 4, (1,))
    _, how_two = _price(Call("aten::max", (two, two)))
    assert "full reduction" not in how_two
