"""The columns of one :func:`~roofline.ops.attention.attention` call for the step programs.

A transformer step prices one attention call per layer kind with Python-int sizes, and a
serving run prices thousands of steps whose calls differ only in batch and context: the
checks of the call's settings (format, flags, backend, page size, head dims) give the same
answer each time. :func:`attention_columns` runs them once per distinct settings and hardware
(remembered in ``resolve_cached``'s per-hardware dict), then the same core sweep as
:func:`attention`.
"""

from __future__ import annotations

from typing import Any, cast

import numpy as np

from .. import _core
from .._params.resolve import require_peak, resolve_cached
from .._params.threads import get_num_threads
from ..efficiency import EfficiencyLike
from . import _engine_backends as engines
from .attention import (
    Sizes,
    _arch,
    _dropout,
    _engine,
    _fixed_code,
    _flags,
    _float_format,
    _int_sizes,
)
from .attention import _sweep as sweep

__all__ = ["attention_columns"]


def attention_columns(batch: Any, heads: Any, q_len: Any, kv_len: Any, head_dim: Any,
                      kv_heads: Any = None, v_head_dim: Any = None, shared_kv: Any = False,
                      causal: Any = False, flash: Any = True, backward: Any = False,
                      dtype: Any = "bf16", *, hardware: Any, efficiency: EfficiencyLike,
                      backend: Any = "auto", dropout_p: Any = 0.0,
                      page_tokens: Any = None) -> np.ndarray | None:
    """The columns (1 x 6: time, compute, memory, overhead, FLOPs, bytes) of
    ``attention(...)`` with these arguments, for Python-int sizes, explicit hardware and a
    serving engine's kernel (``backend`` one of the paged backends, or ``page_tokens``):
    the call :func:`~roofline.ops.attention.attention` prices with its full path (its scalar
    fast path takes the others). None where ``attention`` must run instead (an argument it
    rejects, with its message; a time it refuses; a call its scalar path takes)."""
    if backend not in engines.PAGED_BACKENDS and page_tokens is None:
        return None
    sizes = _int_sizes(batch, heads, q_len, kv_len, head_dim, kv_heads, v_head_dim, shared_kv)
    if sizes is None or hardware is None or type(dtype) is not str or \
            type(backend) is not str or type(dropout_p) not in (int, float) or \
            (page_tokens is not None and type(page_tokens) is not int):
        return None
    arrays = cast(Sizes, tuple(np.array([x], dtype=np.float64) for x in sizes))
    hw, chw, ceff, memo = resolve_cached(hardware, efficiency)
    key = ("attention_columns", dtype, shared_kv, causal, flash, backward, backend, dropout_p,
           page_tokens, sizes[5], sizes[6])
    try:
        prep = memo.get(key)
    except TypeError:  # an unhashable flag: the full path names it
        return None
    if prep is None:
        fn = "attention"
        try:  # attention()'s checks, in its order: an error leaves the call to it
            from .._dtypes import dtype as parse_dtype

            dt = parse_dtype(fn, dtype)
            _float_format(fn, dt, dtype)
            flags = _flags(fn, shared_kv, causal, flash, backward)
            drop = _dropout(fn, dropout_p)
            require_peak(fn, hw, dt)
            code = _fixed_code(fn, backend, flags[2], ceff, hw)
            page = _engine(fn, backend, page_tokens, hw, dt, dtype, arrays, flags)
        except (ValueError, TypeError, KeyError):
            return None
        prep = memo[key] = (dt, flags, drop, code, page)
    dt, flags, drop, code, page = prep
    if code is None:
        cols, _ = _core.attention_auto_sweep(*arrays, flags[0], flags[1], flags[2], flags[3],
                                             dt, chw, ceff, _arch(hw), get_num_threads(), drop)
    else:
        cols = sweep(arrays, flags, dt, chw, ceff, code, page, drop)
    out = np.stack([np.asarray(c, dtype=np.float64).reshape(-1) for c in cols], axis=1)
    t = out[:, 0]
    return out if bool(np.all(np.isfinite(t) & (t >= 0))) else None
