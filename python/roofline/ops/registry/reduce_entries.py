"""Entries of ``aten::sum`` and ``aten::mean``: one streaming pass, and for a full reduction
(every element of a contiguous tensor into one value) aten's ``reduce_kernel`` as
``setReduceConfig`` (ATen ``Reduce.cuh``) launches it.

A full reduction of ``n`` elements loads them ``vec`` at a time (8 for 16-bit sum / mean:
``gpu_reduce_kernel<scalar_t, out_t, 4, 8>``, 4 otherwise) with one block of
``min(last_pow2(n / vec), 512)`` threads; once a thread would add 256 values or more, the
input is split over ``max(ceil(v / 256), min(SMs x 2048 / threads, ceil(v / 16)))`` blocks
that meet through a global staging buffer and a semaphore (a ``cudaMemsetAsync`` before the
kernel: 2 launches). A small reduction is a latency chain, not a pass over its bytes: each
thread's vector loads wait one after another, and the multi-block tail (store and fence, the
semaphore's atomic, the last block's read of the partials) adds 3 round trips
(:func:`roofline._core.full_reduce_chain_s`, the round trip of ``select.hpp``); the kernel
takes at least its launch (a kernel that moves no data), the memset's launch when there is
one, and that chain. Large reductions stay the streaming pass.

Evidence (H200, torch 2.11, ``data/programs/h200/session8.jsonl``; the round trip comes from
the top-k rows, nothing here is fitted to these): ``x.mean()`` of 1 K-256 M bf16 elements ran
one ``reduce_kernel<512, 1>`` for <= 16 K elements and the kernel plus a memset above; one
streaming pass priced 16 K-4 M elements 45-69 % too fast (31 % median over the 8 rows), the
chain prices them within 4-13 % (``benchmarks/session8_kernels.py``).
"""

from __future__ import annotations

from typing import Any

from ... import _core
from ...efficiency import is_shape_aware
from .call import Call, TensorArg, int_list
from .memory_entries import memory_pricer, raised_to
from .pricer import Pricer
from .table import Entry, Priced, add, base_name

__all__ = ["extremum_price", "full_reduction_input", "reduce_price"]

_STREAM = memory_pricer("reduce", "reduction")

#: Elements per vector load of aten's sum / mean: 8 for 16-bit inputs, 4 otherwise.
_VEC_16BIT, _VEC = 8.0, 4.0


def _contiguous(t: TensorArg) -> bool:
    if t.stride is None:
        return True
    want = 1
    for n, s in zip(reversed(t.shape), reversed(t.stride), strict=True):
        if n > 1 and s != want:
            return False
        want *= n
    return True


def _dims(v: Any) -> list[int] | None:
    """A recorded ``dim`` argument as a list of ints; [] for none; None when unreadable."""
    if v is None or v == "" or v == "None":
        return []
    return int_list(v)


def full_reduction_input(call: Call) -> TensorArg | None:
    """The input of ``call`` when it reduces every element of one contiguous tensor into a
    single value (``x.sum()``, ``x.mean()``, or every dim listed), else None."""
    x = call.tensor(0)
    if x is None or x.numel <= 1 or not _contiguous(x):
        return None
    if call.outputs is not None:
        return x if max((t.numel for t in call.outputs), default=0) == 1 else None
    dims = _dims(call.arg("dim", 1))
    if dims is None:
        return None
    if not dims:  # aten::sum(self, dtype) / mean(self, dtype), or an empty dim list
        return x
    rank = len(x.shape)
    covered = {d % rank for d in dims} if rank else set()
    return x if all(n == 1 or i in covered for i, n in enumerate(x.shape)) else None


def reduce_price(call: Call, p: Pricer) -> Priced:
    """One streaming pass; a full reduction of an eager aten op under the shape-aware model
    takes at least its launches and latency chain (see the module)."""
    x = call.tensor(0)
    vec = _VEC_16BIT if x is not None and x.itemsize == 2 else _VEC
    return _full_reduction(call, p, _STREAM(call, p), vec)


def extremum_price(call: Call, p: Pricer) -> Priced:
    """``max`` / ``min`` / ``amax`` / ``amin``: one streaming pass; a full reduction runs the
    same ``reduce_kernel`` as ``sum`` (``ReduceMaxValuesKernel.cu`` /
    ``ReduceMinValuesKernel.cu``: ``gpu_reduce_kernel<scalar_t, scalar_t>``, whose default
    vector width is 4 for every type), priced as ``sum``'s (see the module); ``max(a, b)`` of
    two tensors is elementwise, a pass."""
    kind = "reduction" if base_name(call.name) in ("aten::amax", "aten::amin") else "memory"
    got = memory_pricer("reduce", kind)(call, p)
    if call.tensor(1) is not None:  # max(a, b) / min(a, b): elementwise (max.other)
        return got
    return _full_reduction(call, p, got, _VEC)


def _full_reduction(call: Call, p: Pricer, got: Priced, vec: float) -> Priced:
    """``got`` (a streaming pass) raised to a full reduction's launches and chain with
    ``vec``-element loads, when ``call`` is one (see the module)."""
    costs, how = got
    x = full_reduction_input(call)
    sms = getattr(p.hardware, "sms", None)
    if not costs or x is None or not sms or not is_shape_aware(p.efficiency) \
            or not call.name.startswith("aten::") or call.impl.runtime != "eager":
        return got
    kind, e = costs[0]
    n = float(x.numel)
    blocks = int(_core.full_reduce_blocks(n, vec, float(sms)))
    launches = 2 if blocks > 1 else 1
    gap = float(p.traffic(0, 0, 0.0, "kernel launch").time_s)
    chain = _core.full_reduce_chain_s(n, vec, float(e.memory_s), float(sms))
    floor = launches * gap + chain
    got_e = p.cached(("full_reduce", float(e.bytes), float(e.time_s), floor),
                     lambda: raised_to(e, floor))
    loads = int(_core.full_reduce_loads(n, vec, float(sms)))
    threads = int(_core.full_reduce_threads(n, vec))
    where = f"{blocks} blocks, a global tail and a memset" if blocks > 1 else "one block"
    return [(kind, got_e), *costs[1:]], how + (
        f"; full reduction of {x.numel} elements: {where} of {threads} threads, "
        f"{loads} dependent vector load(s) per thread (at least {floor * 1e6:.1f} us)")


add("aten::sum", "aten::mean", entry=lambda n: Entry(n, "memory", "elementwise", reduce_price))
add("aten::max", "aten::min", "aten::amax", "aten::amin",
    entry=lambda n: Entry(n, "memory", "elementwise", extremum_price))
