"""The power limiter's clock in a profiler trace (issue #23): the load over a window
(``_core.limiter_load``, :func:`roofline.ops.sustained.timeline_load`), the clock
``1 - (1 - f) L`` it sets (``_core.limited_compute_s``), and ``rl.trace.explain``'s
``prior_load``: hand-derived values, properties and bad inputs."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

import roofline as rl
from roofline import _core
from roofline.ops.sustained import LIMITER_WINDOW_S, timeline_load

W = LIMITER_WINDOW_S
F, TAU = 0.87, 2e-3
FLOAT8 = (Path(__file__).resolve().parent / "data" / "traces"
          / "float8_tensorwise_linear_16384x4096x14336.json.gz")


def test_window_is_the_measured_100_ms() -> None:
    assert W == 0.1


def test_limiter_load_by_hand() -> None:
    # idle before the trace, 35 ms of back-to-back load: 35 of the last 100 ms busy
    assert float(_core.limiter_load(0.035, 0.035, W, 0.0)) == pytest.approx(0.35)
    # the same, the GPU flat out before the trace: the 65 ms before it count as busy
    assert float(_core.limiter_load(0.035, 0.035, W, 1.0)) == pytest.approx(1.0)
    # half loaded before, 20 ms busy out of 20: (0.02 + 0.5 * 0.08) / 0.1
    assert float(_core.limiter_load(0.02, 0.02, W, 0.5)) == pytest.approx(0.6)
    # long load: the whole window busy, the prior no longer seen
    assert float(_core.limiter_load(W, 2.0, W, 0.0)) == pytest.approx(1.0)
    # clamped to [0, 1]
    assert float(_core.limiter_load(0.2, 2.0, W, 0.0)) == 1.0
    assert float(_core.limiter_load(-1.0, 2.0, W, 0.0)) == 0.0


def test_limited_compute_by_hand() -> None:
    # a GEMM of 1 ms at full clock, priced alone at the clock f + (1 - f) tau / (tau + t)
    t = 1e-3
    alone = t / (F + (1 - F) * TAU / (TAU + t))
    assert float(_core.limited_compute_s(alone, F, TAU, 0.0)) == pytest.approx(t)  # boost
    assert float(_core.limited_compute_s(alone, F, TAU, 1.0)) == pytest.approx(t / F)
    assert float(_core.limited_compute_s(alone, F, TAU, 1.0)) == pytest.approx(
        float(_core.sustained_compute_s(alone, F, TAU)))  # L = 1: the settled clock
    assert float(_core.limited_compute_s(alone, F, TAU, 0.35)) == pytest.approx(
        t / (1 - 0.13 * 0.35))
    # nothing drops the clock: unchanged
    assert float(_core.limited_compute_s(alone, 1.0, TAU, 0.5)) == alone
    assert float(_core.limited_compute_s(alone, F, 0.0, 0.5)) == alone
    # monotone in the load
    loads = np.linspace(0.0, 1.0, 11)
    assert np.all(np.diff(_core.limited_compute_s(alone, F, TAU, loads)) > 0)


def test_limited_gemm_time_keeps_memory_and_fixed_time() -> None:
    c, m, p, fixed = 1e-3, 4e-4, 4.0, 5e-6
    time = (c**p + m**p) ** (1 / p) + fixed
    got = float(_core.limited_gemm_time_s(time, c, m, F, TAU, p, 0.5))
    c2 = float(_core.limited_compute_s(c, F, TAU, 0.5))
    assert got == pytest.approx((c2**p + m**p) ** (1 / p) + fixed)
    assert float(_core.limited_gemm_time_s(time, c, m, F, TAU, p, 1.0)) == pytest.approx(
        float(_core.sustained_gemm_time_s(time, c, m, F, TAU, p)))


def test_timeline_load_idle_start_long_load_and_a_gap() -> None:
    # one GPU busy from 0 to 2 s, idle 20 ms, then a 1 ms kernel
    starts, ends = np.array([0.0, 2.02]), np.array([2.0, 2.021])
    at = np.array([0.035, 1.0, 2.0205])
    got = timeline_load(starts, ends, at, prior_load=0.0)
    # 35 ms into the load after idle: 0.35; long load: 1; at the kernel's midpoint after the
    # gap: 79.5 ms of the old load + 0.5 ms of its own in the last 100 ms: 0.8
    assert got == pytest.approx([0.35, 1.0, 0.8])
    assert timeline_load(starts, ends, at, prior_load=1.0) == pytest.approx([1.0, 1.0, 0.8])


def test_timeline_load_counts_overlapping_streams_once() -> None:
    starts, ends = np.array([0.0, 0.02]), np.array([0.05, 0.06])
    assert timeline_load(starts, ends, np.array([0.1]), 0.0) == pytest.approx([0.6])
    assert timeline_load(np.array([]), np.array([]), np.array([0.05]), 0.4) == \
        pytest.approx([0.2])


@pytest.mark.parametrize("bad", [-0.1, 1.5, math.nan, math.inf])
def test_prior_load_out_of_range(bad: float) -> None:
    with pytest.raises(ValueError, match=r"prior_load must be in \[0, 1\]"):
        rl.trace.explain(FLOAT8, prior_load=bad)


@pytest.mark.parametrize("bad", ["0.5", None, True, [0.5]])
def test_prior_load_not_a_number(bad: object) -> None:
    with pytest.raises(TypeError, match="prior_load must be a number"):
        rl.trace.explain(FLOAT8, prior_load=bad)  # type: ignore[arg-type]


def test_prior_load_slows_only_the_clocked_kernels() -> None:
    pytest.importorskip("pandas")
    cold = rl.trace.explain(FLOAT8, prior_load=0.0)
    warm = rl.trace.explain(FLOAT8, prior_load=1.0)
    assert warm.predicted_s > cold.predicted_s
    a, b = cold.kernels(), warm.kernels()
    gemm = (a.op.eq("aten::_scaled_mm") & a.measured_s.gt(1e-4)).to_numpy()
    assert gemm.any()
    assert np.all(b.predicted_s.to_numpy()[gemm] > a.predicted_s.to_numpy()[gemm])
    rest = ~gemm & a.predicted_s.notna().to_numpy()
    assert np.array_equal(a.predicted_s.to_numpy()[rest], b.predicted_s.to_numpy()[rest])


def test_cli_prior_load(capsys: pytest.CaptureFixture[str]) -> None:
    from roofline.cli import main

    assert main(["explain-trace", str(FLOAT8), "--format", "csv", "--prior-load", "1"]) == 0
    assert capsys.readouterr().out.startswith("name,")
    assert main(["explain-trace", str(FLOAT8), "--prior-load", "2"]) == 2
    assert "--prior-load must be in [0, 1]" in capsys.readouterr().err


def test_prior_load_is_monotone_and_the_clock_within_its_floor() -> None:
    """More load before the trace never makes it faster; each clocked kernel runs between the
    settled floor f and the boost clock, and never below its datasheet roofline (#25)."""
    enc = FLOAT8.parent / "encoder_layer_train.json.gz"
    reps = [rl.trace.explain(enc, hardware="H100 SXM", prior_load=p)
            for p in (0.0, 0.25, 0.5, 1.0)]
    totals = [r.predicted_s for r in reps]
    assert totals == sorted(totals) and totals[0] < totals[-1]
    f = rl.ops.sustained.settled_clock(rl.hardware("H100 SXM"), "default")
    assert f is not None
    for r in reps:
        k = r.kernels()
        clocked = k[k["clock"].notna()]
        gemm_attention = k["kind"].isin(("gemm", "attention"))
        assert len(clocked) > 0 and k.loc[gemm_attention, "clock"].notna().all()
        assert (clocked["clock"] >= f[0] - 1e-12).all() and (clocked["clock"] <= 1.0).all()
        priced = k[k["priced"]]
        assert (priced["predicted_s"] >= priced["roofline_s"] * (1 - 1e-9)).all()
