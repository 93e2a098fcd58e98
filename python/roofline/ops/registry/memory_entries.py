"""Entries of memory-bound ops (elementwise, copies, fills, cat, gathers, reductions) and of
ops that launch nothing: one streaming pass (:func:`roofline.elementwise` on bytes) over the
bytes the op moves.

Bytes: with the outputs known (the live path), the op reads its tensor inputs and writes its
outputs. A profiler trace records inputs only, so each entry names a ``rule`` for what it
writes: ``pointwise`` (the broadcast of the inputs, in the first input's type), ``reduce``
(nothing worth counting), ``copy`` (``copy_``: reads ``src``, writes ``self``), ``write_only``
(fills and RNG write their first tensor), ``unary_copy`` (reads and writes its input), ``cat``
(writes the sum of its inputs), ``dropout`` (also a one-byte mask), ``kernel`` (an Inductor
kernel's arguments are its inputs and outputs: each moves once).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from ...efficiency import is_shape_aware
from .call import Call, TensorArg, nbytes
from .pricer import Pricer
from .table import Entry, Priced, add, register_family

__all__ = ["CAT_STEP_S", "CAT_THREADS_PER_SM", "RULES", "batched_copy", "batched_copy_bytes_per_s",
           "moved_bytes", "stream"]

RULES = ("pointwise", "reduce", "copy", "write_only", "unary_copy", "cat", "dropout", "kernel")


def moved_bytes(rule: str, ts: list[TensorArg]) -> int | None:
    """DRAM bytes of an op whose outputs were not recorded, from its tensor inputs ``ts``;
    None without any."""
    if not ts:
        return None
    sizes = [t.nbytes for t in ts]
    if rule in ("kernel", "copy"):
        return sum(sizes)
    if rule == "write_only":
        return sizes[0]
    if rule == "unary_copy":
        return 2 * sizes[0]
    if rule == "cat":
        return 2 * sum(sizes)
    if rule == "reduce":
        return sum(sizes)
    out_numel = max(t.numel for t in ts)
    written = out_numel * ts[0].itemsize
    if rule == "dropout":
        written += out_numel  # the bool mask
    return sum(sizes) + written


def stream(call: Call, p: Pricer, rule: str, kind: str) -> Priced:
    """One memory-bound pass over the bytes ``call`` moves (see the module docstring)."""
    ins = call.tensors()
    if call.outputs is None:
        n = moved_bytes(rule, ins)
        if n is None:
            return None, f"{call.name}: input types not priced"
        e = p.traffic(n, 0, 0.0, call.base)
        return [(kind, e)], f"{call.name}: one memory-bound pass over {n} B (rl.elementwise)"
    read, written = nbytes(ins), nbytes(call.outputs)
    flops = 0.0
    if "pointwise" in call.tags:
        kind, flops = "elementwise", float(max((t.numel for t in call.outputs), default=0))
    elif "reduction" in call.tags or kind == "reduction":
        kind, flops = "reduction", float(sum(t.numel for t in ins))
    return [(kind, p.traffic(read, written, flops, call.base))], \
        f"{call.name}: {read} B read, {written} B written (rl.elementwise)"


def memory_pricer(rule: str, kind: str) -> Callable[[Call, Pricer], Priced]:
    def price(call: Call, p: Pricer) -> Priced:
        return stream(call, p, rule, kind)

    return price


def _free(rule: str) -> Callable[[Call, Pricer], Priced]:
    def price(call: Call, p: Pricer) -> Priced:
        if call.impl.kernel is None:
            return [], f"{call.name}: launches nothing"
        # a trace attributed a kernel to it (launched by a child op that recorded no shapes)
        return stream(call, p, rule, "memory")

    return price


#: Threads of aten's generic ``CatArrayBatchedCopy`` per SM and input: ``getCatGrid`` launches
#: ``2 x SMs`` blocks of 512 threads per input tensor (ATen ``Shape.cu``), each thread copying
#: one element per grid-stride loop step.
CAT_THREADS_PER_SM = 2 * 512

#: Time of one loop step of that kernel: a dependent DRAM load, the per-element index division
#: and the store (a loaded DRAM round trip). Source: issue #23's H100 SXM profile (torch 2.11,
#: HF decode with a DynamicCache, 132 SMs, bf16): 4 cats of a 64 x 8 x 4097 x 128 cache took
#: 6.3 ms (2 x 537 MB x 4 / 6.3 ms = 0.68 TB/s; at batch 16, 4 cats of 134 MB took 1.6 ms:
#: 0.67 TB/s), so a step moving 1024 x 132 x 2 B read + written takes
#: 540672 B / 0.68 TB/s = 0.8 us. The same rate on an H200 (132 SMs, 4.8 TB/s HBM) follows:
#: the rate is set by the SMs' threads in flight, not by the HBM bandwidth.
CAT_STEP_S = 0.8e-6


def batched_copy_bytes_per_s(hardware: Any, itemsize: int) -> float | None:
    """DRAM rate of aten's generic batched-copy kernel: ``min(HBM, in_flight / step)``.

    ``in_flight = CAT_THREADS_PER_SM x SMs x itemsize x 2`` (each thread reads one element
    and writes it per step of :data:`CAT_STEP_S`). None without an SM count.
    """
    sms = getattr(hardware, "sms", None)
    if not sms:
        return None
    rate = CAT_THREADS_PER_SM * int(sms) * max(int(itemsize), 1) * 2 / CAT_STEP_S
    return min(rate, float(hardware.mem_bytes_per_s))


def batched_copy(call: Call, p: Pricer) -> Priced:
    """``cat`` / ``stack`` as aten's batched-copy kernel runs them.

    Bytes: the kernel reads every input and writes the output (2 x output bytes; a trace
    records inputs only: 2 x their sum). Rate: ``parallel_cat`` launches a fixed grid per
    input (2 blocks of 512 threads per SM in the generic ``CatArrayBatchedCopy``), each
    thread copying one element per loop step (a dependent load -> store with per-element
    index division), so the bytes in flight, hence the bandwidth, are set by the kernel and
    the SM count, not by the tensor or the HBM: :func:`batched_copy_bytes_per_s` (a lower
    bound on ``memory_s``; the ``peak`` / ``torchao`` presets keep the plain pass).
    """
    priced, how = stream(call, p, "cat", "memory")
    if not priced or not is_shape_aware(p.efficiency):
        return priced, how
    kind, e = priced[0]
    ts = call.tensors()
    bw = batched_copy_bytes_per_s(p.hardware, ts[0].itemsize if ts else 2)
    if bw is None:
        return priced, how

    def make() -> Any:
        floor = float(e.bytes) / bw
        if floor <= float(e.memory_s):
            return e
        return dataclasses.replace(e, memory_s=floor,
                                   time_s=float(e.time_s) + floor - float(e.memory_s))

    capped = p.cached(("batched_copy", float(e.bytes), bw, call.base), make)
    return [(kind, capped)], how + f"; batched copy at {bw / 1e12:.2f} TB/s"


def memory(*names: str, rule: str = "pointwise", kind: str = "memory") -> None:
    """Register memory-bound ops (``aten::`` prefixed unless namespaced)."""
    fn = memory_pricer(rule, kind)
    add(*(n if "::" in n else f"aten::{n}" for n in names),
        entry=lambda n: Entry(n, "memory", "elementwise", fn))


def free(*names: str, rule: str = "pointwise") -> None:
    """Register ops that launch no kernel themselves (views, allocation, bookkeeping)."""
    fn = _free(rule)
    add(*(n if "::" in n else f"aten::{n}" for n in names),
        entry=lambda n: Entry(n, "free", None, fn))


register_family("views", lambda c: "view" in c.tags, "free", None, _free("pointwise"),
                first=True)
register_family("pointwise ops", lambda c: "pointwise" in c.tags, "memory", "elementwise",
                memory_pricer("pointwise", "elementwise"))
register_family("reductions", lambda c: "reduction" in c.tags, "memory", "elementwise",
                memory_pricer("reduce", "reduction"))
