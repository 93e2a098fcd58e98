"""looped_wall_time: a compiled training step repeated in a (do_bench) loop, with a head kernel
(the L2 flush) launched before each timed call."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import roofline as rl
from roofline import _core

US = 1e-6
# eager 10 µs per op, compiled 2 µs per kernel + 100 µs per region entry, kernel gap 1 µs,
# kernel latency 4 µs
T = dict(eager_launch_s=10 * US, compiled_launch_s=2 * US, compiled_call_s=100 * US,
         graph_launch_s=5 * US, kernel_gap_s=1 * US, kernel_latency_s=4 * US)


def _terms() -> Any:
    t = _core.HostTerms()
    for k, v in T.items():
        setattr(t, k, v)
    return t


def looped(times: list[float], regions: int, head_s: float) -> tuple[float, float, float, bool]:
    out: tuple[float, float, float, bool] = _core.looped_wall_time(
        np.array(times, dtype=float), _core.LaunchMode.compiled, regions, head_s, _terms())
    return out


def _simulate_loop(times: list[float], regions: int, head_s: float, iters: int = 400) -> float:
    """Event simulation of the benchmark loop (independent of the closed form): each iteration
    the host launches the head kernel, records the start event, then launches kernel i at
    A_i after the head's launch (gaps: compiled launch, plus a region entry where a region
    starts), then records the end event; the next iteration begins eager_launch_s after the
    last launch (the head's own launch; none without a head). One FIFO stream. Returns the
    event span (end - start) of the last iteration, after the loop reached its steady state."""
    n = len(times)
    starts = {(r * n) // regions for r in range(regions)}
    gaps = [T["compiled_launch_s"] + (T["compiled_call_s"] if i in starts else 0.0)
            for i in range(n)]
    host, free, span = 0.0, 0.0, 0.0
    for _ in range(iters):
        if head_s > 0:
            free = max(host, free) + head_s  # the flush, outside the timed span
        start = max(host, free)  # the start event fires when the stream reaches it
        launched = host
        for g, t in zip(gaps, times, strict=True):
            launched += g
            free = max(launched, free) + max(t, T["kernel_gap_s"])
        span = free - start
        host = launched + (T["eager_launch_s"] if head_s > 0 else 0.0)
    return span


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("head_us", [0.0, 50.0, 400.0])
def test_formula_matches_a_simulated_loop(seed: int, head_us: float) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 30))
    times = list(rng.choice([0.0, 1e-6, 5e-6, 30e-6, 200e-6, 1e-3], n))
    regions = int(rng.integers(1, min(n, 3) + 1))
    expected = max(_simulate_loop(times, regions, head_us * US), T["kernel_latency_s"])
    assert looped(times, regions, head_us * US)[0] == pytest.approx(expected, rel=1e-9)


def test_hand_derived_host_bound_step_behind_a_flush() -> None:
    # 4 kernels of 5 µs in 2 regions (region 1 starts at kernel 2): issue times from the flush's
    # launch A = 102, 104, 206, 208 µs; the GPU finishes the last region at 206 + 10 = 216 µs,
    # the host period is 208 + 10 (the flush's launch) = 218 µs; the 50 µs flush hides 50 µs:
    # 216 - 50 = 166 µs per call
    w, gpu, host, bound = looped([5 * US] * 4, 2, 50 * US)
    assert w == pytest.approx(166 * US)
    assert gpu == pytest.approx(20 * US)
    assert host == pytest.approx(218 * US)
    assert bound


def test_plain_loop_costs_the_host_period() -> None:
    # no head kernel: one step costs max(GPU, host) = max(20, 208) µs
    assert looped([5 * US] * 4, 2, 0.0)[0] == pytest.approx(208 * US)


def test_gpu_bound_step_costs_its_gpu_time() -> None:
    for head in (0.0, 50 * US, 1e-3):
        w, gpu, _, bound = looped([1e-3] * 4, 2, head)
        assert w == pytest.approx(4e-3) == gpu
        assert not bound


def test_a_longer_head_hides_more_host_time_until_the_gpu_binds() -> None:
    walls = [looped([5 * US] * 4, 2, h * US)[0] for h in (0, 20, 50, 100, 150, 200, 400)]
    assert all(b <= a + 1e-15 for a, b in zip(walls, walls[1:], strict=False))
    assert walls[-1] == pytest.approx(20 * US)  # the flush hides all host time: GPU time


@pytest.mark.parametrize("seed", range(4))
def test_monotone_in_kernel_times_and_call_cost(seed: int) -> None:
    rng = np.random.default_rng(100 + seed)
    times = rng.choice([0.0, 2e-6, 40e-6, 300e-6], 12)
    base = looped(list(times), 2, 90 * US)[0]
    bigger = times.copy()
    bigger[int(rng.integers(0, 12))] += 50e-6
    assert looped(list(bigger), 2, 90 * US)[0] >= base
    t = _terms()
    t.compiled_call_s *= 1.5
    assert _core.looped_wall_time(times, _core.LaunchMode.compiled, 2, 90 * US, t)[0] >= base


def test_float8_training_wall_is_the_plain_loop() -> None:
    # Float8Linear.wall_s of a training step: looped_wall_time with no head over its kernels
    r = rl.float8.linear(4096, 4096, 4096, "tensorwise", "H100 SXM")
    lowp, bf16 = r.step_kernel_times()
    terms = r._args[4].host
    expected = _core.linear_call_wall_time(lowp, _core.LaunchMode.compiled, True, True, 0.0,
                                           terms)[0]
    assert r.wall_s == pytest.approx(expected)
    # host-bound at 4096^3: two region entries of a torchao linear and 13 launches exceed the
    # ~0.5 ms of kernels
    assert r.launch_bound and r.wall_s == pytest.approx(
        2 * (terms.compiled_call_s + terms.torchao_call_s) + len(lowp) * terms.compiled_launch_s)
    # a plain (bf16) linear's entries are the same less torchao_call_s: its looped_wall_time
    assert _core.linear_call_wall_time(bf16, _core.LaunchMode.compiled, True, False, 0.0,
                                       terms)[0] == pytest.approx(
        _core.looped_wall_time(bf16, _core.LaunchMode.compiled, 2, 0.0, terms)[0])
    assert r.bf16_wall_s >= r.bf16_s
    big = rl.float8.linear(16384, 8192, 16384, "rowwise", "H100 SXM")
    assert big.wall_s == pytest.approx(big.fp8_s, rel=1e-3)  # GPU-bound
