"""Scatter-adds that aten runs with atomics: ``index_add_`` and ``scatter_add_``.

aten's CUDA ``index_add_`` / ``scatter_add_`` add every source element into its destination
with one ``gpuAtomicAdd``. In 16-bit formats the atomic is resolved in L2 at a fixed rate per
SM and clock, far below the DRAM bandwidth the same bytes would stream at: an MoE layer's
combine (``out.index_add_(0, token_of_row, expert_out)``, HF's and most reference MoE code)
runs at that rate. The kernel is priced as the larger of one memory-bound pass over its bytes
and ``updates / (ATOMIC_UPDATES_PER_SM_CLOCK x sms x clock)``.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from ...efficiency import is_shape_aware
from .call import Call
from .memory_entries import stream
from .pricer import Pricer
from .table import Entry, Priced, add

__all__ = ["ATOMIC_UPDATES_PER_SM_CLOCK", "atomic_add"]

#: 16-bit atomic adds that aten's ``index_add_`` completes per SM per SM clock cycle.
#: Derived on H200 (torch 2.11, bf16; data/programs/h200, device call B): the MoE combines of
#: 131072 x 2048 and 32768 x 4096 source elements (16384 tokens) took 2.24 ms and 1.22 ms,
#: 120 and 110 G updates/s; the median, 115 G/s, over 132 SMs x 1.83 GHz (the clock the
#: hardware table lists) is 0.48. Held out: the 512- and 4096-token combines ran at
#: 108-135 G/s. 32-bit atomics are native reductions (``red.global.add.f32``) whose rate was
#: not measured: they stay a memory-bound pass.
ATOMIC_UPDATES_PER_SM_CLOCK = 0.48

_SIXTEEN_BIT = frozenset({"bf16", "fp16"})


def atomic_add(call: Call, p: Pricer) -> Priced:
    """``index_add_`` / ``scatter_add_``: a memory-bound pass, or the atomic rate when slower."""
    priced, how = stream(call, p, "pointwise", "memory")
    tensors = call.tensors()
    if not priced or not tensors or not is_shape_aware(p.efficiency):
        return priced, how
    src = tensors[-1]  # index_add_(dim, index, source) / scatter_add_(dim, index, src)
    if src.dtype_name not in _SIXTEEN_BIT:
        return priced, how
    hw = p.hardware
    rate = ATOMIC_UPDATES_PER_SM_CLOCK * float(hw.sms) * float(hw.clock_hz)
    kind, e = priced[0]

    def make() -> Any:
        floor = src.numel / rate
        if floor <= float(e.time_s):
            return e
        return dataclasses.replace(e, memory_s=max(float(e.memory_s), floor), time_s=floor)

    capped = p.cached(("atomic_add", src.numel, float(e.time_s), call.base), make)
    return [(kind, capped)], how + (f"; {src.numel} 16-bit atomic adds at "
                                    f"{ATOMIC_UPDATES_PER_SM_CLOCK:g} per SM per clock")


add("aten::index_add", "aten::index_add_", "aten::scatter_add", "aten::scatter_add_",
    entry=lambda n: Entry(n, "memory", "elementwise", atomic_add))
