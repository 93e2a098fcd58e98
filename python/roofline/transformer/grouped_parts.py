"""Columns of one grouped GEMM part of a program (``Program.grouped``): the per-expert GEMMs
at the step's settled clock, and the expectation over two row spreads.

:func:`.pricing.evaluate` calls these for every MoE expert GEMM it prices.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..efficiency import EfficiencyLike
from ..hardware import Hardware
from ..ops.grouped_gemm import grouped_gemm
from ..ops.sustained import settle_columns

__all__ = ["expected_part", "grouped_part"]


def expected_part(price: Any, counts: tuple[int, ...],
              alt: tuple[tuple[int, ...], float] | None) -> np.ndarray:
    """Columns of one grouped GEMM part: ``price(counts)``, or with an alternative ``(rows, w)``
    the expectation ``(1 - w)·price(counts) + w·price(rows)`` (:attr:`.Program.grouped`)."""
    cols: np.ndarray = price(counts)
    if alt is None:
        return cols
    other: np.ndarray = price(alt[0])
    return (1.0 - alt[1]) * cols + alt[1] * other


def grouped_part(counts: tuple[int, ...], k: float, n: float, lay: str, gdtype: str,
                  hw: Hardware, efficiency: EfficiencyLike,
                  clock: tuple[float, float, float] | None, stack: Any) -> np.ndarray:
    """Columns (one row) of one grouped GEMM part; in a training step (``clock`` set) at
    the power limiter's settled clock.

    The expert GEMMs run inside the step's continuous tensor load like the dense GEMMs, so
    they take the settled clock too (:func:`roofline.ops.sustained.settle_columns`). Looped
    layouts (Transformer Engine's ``GroupedLinear``: one cuBLAS GEMM per local expert) were
    priced as ``G`` GEMMs each run alone at the clock of its own length: the settled compute time
    ``sustained_compute_s`` is homogeneous of degree one in (compute, ``throttle_time_s``),
    so ``G`` equal GEMMs of total compute ``C`` take ``sustained(C, f, G·tau)`` (exact for
    equal counts, the mean expert's length otherwise). One grouped kernel (``contiguous``)
    is one GEMM.

    The weight gradients (``looped_wgrad``) are accumulated into each expert's fp32
    ``main_grad``: Megatron-Core's ``gradient_accumulation_fusion`` (on wherever its fused
    wgrad kernels are installed, as in NVIDIA's containers) has TE's ``GroupedLinear`` call its
    wgrad GEMMs with ``out = main_grad`` and ``accumulate=True`` (``fuse_wgrad_accumulation``),
    so each reads and writes ``k·n`` fp32 elements per expert (``out_dtype="fp32",
    accumulate=True``) instead of writing a bf16 gradient once; with few tokens per expert
    that traffic, not the FLOPs, sets the GEMM's time.
    """
    cnt = np.asarray(counts, dtype=np.int64)
    wgrad = lay == "looped_wgrad"
    cols: np.ndarray = stack(grouped_gemm(None, k, n, dtype=gdtype, hardware=hw, counts=cnt,
                                          layout=lay, efficiency=efficiency,
                                          out_dtype="fp32" if wgrad else None,
                                          accumulate=wgrad))
    if clock is not None:
        f, tau, p = clock
        gemms = int(np.count_nonzero(cnt)) if lay in ("looped", "looped_wgrad") else 1
        settle_columns(cols, (f, tau * max(gemms, 1), p))
    return cols
