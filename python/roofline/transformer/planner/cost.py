"""Dollars per million tokens and GPU-hours (arithmetic in the C++ core)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ... import _core
from ..._errors import ArgumentValueError

__all__ = ["dollars_per_million_tokens", "gpu_hours"]


def _positive(fn: str, name: str, value: Any) -> np.ndarray:
    a = np.asarray(value, dtype=np.float64)
    if not np.all(np.isfinite(a)) or np.any(a <= 0):
        raise ArgumentValueError(fn, name, f"must be positive, got {value!r}")
    return a


def dollars_per_million_tokens(price_per_gpu_hour: Any, gpus: Any, tokens_per_s: Any) -> Any:
    """Dollars per million tokens: ``price·gpus / 3600 / tokens_per_s · 1e6``.

    Parameters
    ----------
    price_per_gpu_hour : float or array_like
        Rental price of one GPU for one hour, in dollars.
    gpus : int or array_like
        GPUs producing ``tokens_per_s``.
    tokens_per_s : float or array_like
        Tokens per second of those GPUs (training: tokens trained; serving: tokens generated).
    """
    fn = "dollars_per_million_tokens"
    out = _core.dollars_per_million_tokens(_positive(fn, "price_per_gpu_hour", price_per_gpu_hour),
                                           _positive(fn, "gpus", gpus),
                                           _positive(fn, "tokens_per_s", tokens_per_s))
    return float(out) if np.ndim(out) == 0 else out


def gpu_hours(tokens: Any, tokens_per_s: Any, gpus: Any) -> Any:
    """GPU-hours to process ``tokens``: ``tokens / tokens_per_s · gpus / 3600``.

    Example: DeepSeek-V3's 14.8 T pre-training tokens at the planner's tokens/s on 2,048 GPUs.
    """
    fn = "gpu_hours"
    out = _core.gpu_hours(_positive(fn, "tokens", tokens), _positive(fn, "tokens_per_s",
                                                                     tokens_per_s),
                          _positive(fn, "gpus", gpus))
    return float(out) if np.ndim(out) == 0 else out
