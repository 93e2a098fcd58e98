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

from .. import _core
from .._params.resolve import resolve
from ..efficiency import EfficiencyLike, is_shape_aware
from ..estimate import Estimate

__all__ = ["at_settled_clock", "settled_clock"]


def settled_clock(hw: Any, efficiency: EfficiencyLike) -> tuple[float, float, float] | None:
    """``(throttle_fraction, throttle_time_s, overlap_p)`` of ``hw``'s GEMM terms, or None
    where nothing drops the clock (constant-fraction presets, GPUs without board power)."""
    if not is_shape_aware(efficiency):
        return None
    _, _, ceff = resolve(hw, efficiency)
    f, tau = float(ceff.gemm.throttle_fraction), float(ceff.gemm.throttle_time_s)
    return (f, tau, float(ceff.overlap_p)) if 0.0 < f < 1.0 and tau > 0.0 else None


def at_settled_clock(e: Estimate[Any], clock: tuple[float, float, float] | None
                     ) -> Estimate[Any]:
    """One kernel's estimate ``e`` repriced at the settled clock (``clock`` from
    :func:`settled_clock`; None: ``e`` unchanged). Memory time and bytes are kept."""
    if clock is None:
        return e
    f, tau, p = clock
    t, c, m = float(e.time_s), float(e.compute_s), float(e.memory_s)
    t2 = float(_core.sustained_gemm_time_s(t, c, m, f, tau, p))
    c2 = float(_core.sustained_compute_s(c, f, tau))
    return dataclasses.replace(e, time_s=t2, compute_s=c2, overhead_s=max(t2 - max(c2, m), 0.0))
