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
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from .. import _core
from .._params.resolve import resolve
from ..efficiency import EfficiencyLike, is_shape_aware
from ..estimate import Estimate

__all__ = ["at_settled_clock", "settle_columns", "settled_clock"]


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
    cols[:, 0] = np.asarray(_core.sustained_gemm_time_s(t, c, m, f, tau, p))
    cols[:, 1] = np.asarray(_core.sustained_compute_s(c, f, tau))
    cols[:, 3] = np.maximum(cols[:, 0] - np.maximum(cols[:, 1], m), 0.0)


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
