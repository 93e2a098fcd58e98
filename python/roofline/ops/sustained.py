"""The clock a training step's GEMMs and attention run at: the power limiter's settled clock.

The GEMM terms price a kernel run alone: its clock drops from full towards
``throttle_fraction`` with its own length (time constant ``throttle_time_s``), and the
attention terms were fitted on kernels run alone too. A training step (forward and backward)
runs GEMMs and attention back to back for seconds, and the clock is the whole GPU's, so every
such kernel in it runs at the settled clock ``f``: compute ``c`` takes
``_core.sustained_compute_s(c, f, tau)`` and the kernel
``_core.sustained_gemm_time_s(t, c, m, f, tau, p)`` (formulas in ``cpp/src/estimate.cpp``).
This module is the one home of that rule for every path that prices a training step:
``rl.transformer.estimate(phase="train")`` (all runtimes) and ``roofline.torch.estimate``
(``mode="train"``), through :class:`roofline.ops.registry.Pricer` ``(sustained=True)``.

A profiler trace shows when the GPU was busy, so there the clock follows the limiter's load
history instead (:func:`timeline_load`, :func:`limit_columns`; used by ``rl.trace.explain``):
the clock is ``1 - (1 - f) L``, ``L`` the busy fraction of the :data:`LIMITER_WINDOW_S` before
the moment, ``L = 1`` being the settled clock above and ``L = 0`` the boost clock.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from .. import _core
from .._params.resolve import resolve
from ..efficiency import EfficiencyLike, is_shape_aware
from ..estimate import Estimate

__all__ = ["LIMITER_WINDOW_S", "at_settled_clock", "limit_columns", "settle_columns",
           "settled_clock", "timeline_load"]

#: Window over which the power limiter integrates load, in seconds. Measured on an H200
#: (``data/programs/h200/clock/clock_droop.log``, 16384 x 4096 x 14336 GEMMs back to back,
#: settled clock 0.83 of boost): after 8 s idle the drop reaches 0.28 / 0.77 / 0.82 of its
#: settled size at 20-50 / 50-100 / 100-200 ms of load (a 100 ms window: 0.35 / 0.75 / 1);
#: after 2 s of load an idle gap of 2 / 20 / 200 ms leaves 1.0 / 0.82 / 0.0 of it (window:
#: 0.98 / 0.80 / 0). An exponential of one time constant fits one side only (onset: ~50 ms,
#: recovery: ~100 ms). The H100 SXM (same die, 700 W) is taken to act alike.
LIMITER_WINDOW_S = 0.1


def settled_clock(hw: Any, efficiency: EfficiencyLike) -> tuple[float, float, float] | None:
    """``(throttle_fraction, throttle_time_s, overlap_p)`` of ``hw``'s GEMM terms, or None
    where nothing drops the clock (constant-fraction presets, GPUs without board power)."""
    if not is_shape_aware(efficiency):
        return None
    _, _, ceff = resolve(hw, efficiency)
    f, tau = float(ceff.gemm.throttle_fraction), float(ceff.gemm.throttle_time_s)
    return (f, tau, float(ceff.overlap_p)) if 0.0 < f < 1.0 and tau > 0.0 else None


def settle_columns(cols: np.ndarray, clock: tuple[float, float, float]) -> None:
    """Kernels' columns ``(time, compute, memory, overhead, ...)`` (one row per kernel)
    repriced in place at the settled clock (``clock`` from :func:`settled_clock`): compute
    ``_core.sustained_compute_s``, time ``_core.sustained_gemm_time_s``, overhead the time
    above ``max(compute, memory)``; memory and the other columns kept."""
    f, tau, p = clock
    t, c, m = cols[:, 0].copy(), cols[:, 1].copy(), cols[:, 2]
    _reprice(cols, _core.sustained_gemm_time_s(t, c, m, f, tau, p),
             _core.sustained_compute_s(c, f, tau))


def _reprice(cols: np.ndarray, time_s: Any, compute_s: Any) -> None:
    """Kernels' columns given their new time and compute time at another clock: overhead is
    the time above ``max(compute, memory)``; memory and the other columns are kept."""
    cols[:, 0] = np.asarray(time_s)
    cols[:, 1] = np.asarray(compute_s)
    cols[:, 3] = np.maximum(cols[:, 0] - np.maximum(cols[:, 1], cols[:, 2]), 0.0)


def at_settled_clock(e: Estimate[Any], clock: tuple[float, float, float] | None
                     ) -> Estimate[Any]:
    """One kernel's estimate ``e`` repriced at the settled clock (:func:`settle_columns`;
    ``clock`` None: ``e`` unchanged). Memory time and bytes are kept."""
    if clock is None:
        return e
    cols = np.array([[float(e.time_s), float(e.compute_s), float(e.memory_s),
                      float(e.overhead_s)]])
    settle_columns(cols, clock)
    return dataclasses.replace(e, time_s=float(cols[0, 0]), compute_s=float(cols[0, 1]),
                               overhead_s=float(cols[0, 3]))


def _busy_before(starts: np.ndarray, ends: np.ndarray, at: np.ndarray) -> np.ndarray:
    """Busy time before each moment of ``at``: the length of the union of the intervals
    ``[starts, ends)`` (overlapping kernels of several streams count once) up to it."""
    if not len(starts):
        return np.zeros_like(at, dtype=float)
    order = np.argsort(starts, kind="stable")
    s, e = starts[order], np.maximum.accumulate(ends[order])
    # merge: a new run starts where an interval begins after every earlier one has ended
    new = np.ones(len(s), dtype=bool)
    new[1:] = s[1:] > e[:-1]
    run_s = s[new]
    run_e = np.maximum.reduceat(e, np.flatnonzero(new))
    cum = np.concatenate(([0.0], np.cumsum(run_e - run_s)))
    i = np.searchsorted(run_s, at, side="right") - 1
    j = np.maximum(i, 0)
    inside = np.clip(at - run_s[j], 0.0, run_e[j] - run_s[j])
    return np.where(i >= 0, cum[j] + inside, 0.0)


def timeline_load(starts: np.ndarray, ends: np.ndarray, at: np.ndarray, prior_load: float,
                  window_s: float = LIMITER_WINDOW_S) -> np.ndarray:
    """The power limiter's load at each moment of ``at`` on one GPU, from its kernels' busy
    intervals ``[starts, ends)`` (seconds since its first kernel, which starts at 0).

    ``L(t) = (busy(t - W, t) + prior_load * max(0, W - t)) / W`` (``_core.limiter_load``):
    the busy fraction of the window ``W`` before ``t``, the part of the window before the
    first kernel counted at ``prior_load`` (the trace does not show it).
    """
    busy = _busy_before(starts, ends, at) - _busy_before(starts, ends, at - window_s)
    return np.asarray(_core.limiter_load(busy, at, window_s, prior_load), dtype=float)


def limit_columns(cols: np.ndarray, clock: tuple[float, float, float], load: np.ndarray
                  ) -> np.ndarray:
    """Kernels' columns ``(time, compute, memory, overhead, ...)`` (one row per kernel)
    repriced in place at the clock ``1 - (1 - f) L`` of each one's limiter load ``L``
    (``clock`` from :func:`settled_clock`): compute ``_core.limited_compute_s``, time
    ``_core.limited_gemm_time_s``, overhead the time above ``max(compute, memory)``; memory
    and the other columns kept. ``L = 1``: :func:`settle_columns`. Returns each kernel's
    clock as a fraction of boost (its compute time at ``L = 0`` over the new one; 1 where it
    has no compute)."""
    f, tau, p = clock
    t, c, m = cols[:, 0].copy(), cols[:, 1].copy(), cols[:, 2]
    _reprice(cols, _core.limited_gemm_time_s(t, c, m, f, tau, p, load),
             _core.limited_compute_s(c, f, tau, load))
    boost = np.asarray(_core.limited_compute_s(c, f, tau, 0.0), dtype=float)
    ran_at: np.ndarray = np.ones(len(c))
    np.divide(boost, cols[:, 1], out=ran_at, where=cols[:, 1] > 0)
    return ran_at
