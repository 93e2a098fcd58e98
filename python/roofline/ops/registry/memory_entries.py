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
import math
from collections.abc import Callable
from typing import Any

from ... import _core
from ...efficiency import is_shape_aware
from .call import Call, TensorArg, nbytes
from .pricer import Pricer
from .table import Entry, Priced, add, register_family

__all__ = ["ATEN_LOOP_STEP_S", "CAT_STEP_S", "CAT_THREADS_PER_SM", "RULES", "aten_loop",
           "aten_loop_path", "batched_copy", "batched_copy_bytes_per_s", "cat_vectorized",
           "memory_at_least", "moved_bytes", "raised_to", "stream"]

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


def memory_pricer(rule: str, kind: str, layout: bool = False
                  ) -> Callable[[Call, Pricer], Priced]:
    def price(call: Call, p: Pricer) -> Priced:
        got = stream(call, p, rule, kind)
        return aten_loop(call, p, got, rule == "copy") if layout else got

    return price


def _dense(t: TensorArg, st: tuple[int, ...]) -> bool:
    """Whether strides ``st`` lay ``t`` out without gaps or overlap (in any dim order)."""
    dims = sorted(((s, n) for s, n in zip(st, t.shape, strict=True) if n > 1), reverse=True)
    want = 1
    for s, n in reversed(dims):
        if s != want:
            return False
        want *= n
    return True


def aten_loop_path(call: Call, into_first: bool = False) -> tuple[bool, bool] | None:
    """Which loop aten's TensorIterator runs for a pointwise op or copy: (vectorized, reads
    DRAM per element); None when a tensor operand's strides were not recorded.

    ``vectorized_elementwise_kernel`` needs every operand laid out alike and densely (any
    dim order: the iterator permutes and coalesces dims); a broadcast operand (fewer
    elements, or a zero stride), a gap, or two operands in different orders (a transposing
    copy, ``x + y.transpose(0, 1)``) take the offset-calculator loop ``elementwise_kernel``.
    0-d and one-element tensors are scalars. "Reads DRAM": some input is read once per
    element (not only broadcast / cached operands; ``into_first``: the first tensor input is
    the destination, ``copy_``'s ``self``)."""
    ins = [t for t in call.tensors() if t.numel > 1]
    ts = [*ins, *(t for t in call.outputs or () if t.numel > 1)]
    if not ts:
        return None
    out = max(t.numel for t in ts)
    first_read = 1 if into_first and call.tensor(0) is not None and ins and \
        ins[0] is call.tensor(0) else 0
    n_in = len(ins)
    layouts: set[tuple[tuple[int, int], ...]] = set()
    vec, dram = True, False
    for i, t in enumerate(ts):
        if t.stride is None or len(t.stride) != len(t.shape):
            return None
        full = t.numel == out and all(s != 0 for s, n in zip(t.stride, t.shape, strict=True)
                                      if n > 1)
        if not full or not _dense(t, t.stride):
            vec = False
        if full and first_read <= i < n_in:
            dram = True
        layouts.add(tuple((n, s) for n, s in zip(t.shape, t.stride, strict=True) if n > 1))
    return vec and len(layouts) == 1, dram


def aten_loop(call: Call, p: Pricer, priced: Priced, into_first: bool = False) -> Priced:
    """Raise a pointwise pass to the floor of aten's non-vectorized loop when the operands'
    layout sends it there (:func:`aten_loop_path`): every resident thread (2048 per SM) has
    one element's DRAM round trip in flight, so the kernel takes at least
    ``ceil(numel / (SMs x 2048))`` steps of :data:`ATEN_LOOP_STEP_S`
    (``_core.aten_loop_floor_s``). Only for aten ops run eagerly, under shape-aware presets,
    and when an input is read from DRAM per element."""
    costs, how = priced
    if not costs or not is_shape_aware(p.efficiency) or not call.name.startswith("aten::") \
            or call.impl.runtime != "eager":
        return priced  # an Inductor kernel indexes its own loads (no TensorIterator)
    path = aten_loop_path(call, into_first)
    sms = getattr(p.hardware, "sms", None)
    if path is None or path[0] or not path[1] or not sms:
        return priced
    kind, e = costs[0]
    numel = max(t.numel for t in (*call.tensors(), *(call.outputs or ())))
    floor = _core.aten_loop_floor_s(float(numel), float(sms), ATEN_LOOP_STEP_S)
    # a bound on the whole kernel: its steps include the first round trip that the streaming
    # estimate's fixed latency stands for (a one-step loop costs no more)
    got = p.cached(("aten_loop", float(e.bytes), float(e.time_s), floor),
                   lambda: raised_to(e, floor))
    return [(kind, got), *costs[1:]], how + (
        f"; aten's non-vectorized loop (broadcast / mixed layouts): {numel} elements, "
        f"one {ATEN_LOOP_STEP_S * 1e6:.1f} us DRAM round trip per thread step")


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


#: Thread step of aten's non-vectorized elementwise loop (:func:`aten_loop`): one dependent
#: DRAM load -> store round trip, the same step as the batched-copy kernel's.
ATEN_LOOP_STEP_S = CAT_STEP_S


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


def raised_to(e: Any, floor: float) -> Any:
    """``e`` taking at least ``floor`` seconds (the excess counted as memory time: a latency
    chain or a launch floor the streaming estimate does not see); ``e`` itself when it already
    takes that long."""
    extra = floor - float(e.time_s)
    if extra <= 0:
        return e
    return dataclasses.replace(e, memory_s=float(e.memory_s) + extra, time_s=floor)


def memory_at_least(e: Any, busy_s: float) -> Any:
    """``e`` whose memory time is ``busy_s`` when that is longer (a dependent chain or a
    barrier-bound loop the byte count does not see), its time longer by the difference; ``e``
    itself otherwise."""
    if busy_s <= float(e.memory_s):
        return e
    return dataclasses.replace(e, memory_s=busy_s,
                               time_s=float(e.time_s) + busy_s - float(e.memory_s))


def _contiguous(t: TensorArg) -> bool:
    """Whether ``t``'s strides are row-major contiguous (size-1 dims' strides ignored, as
    torch's ``is_contiguous``)."""
    want = 1
    for n, s in zip(reversed(t.shape), reversed(t.stride or ()), strict=True):
        if n != 1 and s != want:
            return False
        want *= n
    return True


def cat_vectorized(call: Call) -> bool | None:
    """Whether aten's ``parallel_cat`` runs ``CatArrayBatchedCopy_vectorized`` (16-byte
    loads and stores, a plain streaming pass) for this ``cat``; None when the inputs' strides
    were not recorded (or it is not a recorded list of 2+ tensors).

    From ``Shape.cu``: every input contiguous, and the slice each input contributes per
    outer index (``prod(shape[dim:])`` elements; all of it along dim 0) and the output's
    (the sum of those) are multiples of 16 bytes (base pointers assumed 16-byte aligned, as the
    caching allocator returns them). A non-contiguous input (a transposed or sliced view:
    HF's ``DynamicCache`` key/value states, ``rotate_half``'s halves) sends every input through
    the generic strided ``CatArrayBatchedCopy``; contiguous but unaligned slices run the
    aligned-load contiguous kernels, also priced as a plain pass.
    """
    lst = call.inputs[0] if call.inputs else None
    if not isinstance(lst, tuple) or len(lst) < 2 or not all(
            isinstance(t, TensorArg) and t.stride is not None and len(t.stride) == len(t.shape)
            for t in lst):
        return None
    if not all(_contiguous(t) for t in lst):
        return False
    raw = call.scalar("dim", 1, 0)
    try:
        dim = int(str(raw).strip() or 0)
    except ValueError:
        return None
    nd = len(lst[0].shape)
    dim = dim + nd if dim < 0 else dim
    if not 0 <= dim < max(nd, 1):
        return None
    slices = [math.prod(t.shape[dim:]) * t.itemsize for t in lst]
    return all(b % 16 == 0 for b in slices) and sum(slices) % 16 == 0


def batched_copy(call: Call, p: Pricer) -> Priced:
    """``cat`` / ``stack`` as aten's batched-copy kernel runs them.

    Bytes: the kernel reads every input and writes the output (2 x output bytes; a trace
    records inputs only: 2 x their sum). Rate: ``parallel_cat`` launches a fixed grid per
    input (2 blocks of 512 threads per SM in the generic ``CatArrayBatchedCopy``), each
    thread copying one element per loop step (a dependent load -> store with per-element
    index division), so the bytes in flight, hence the bandwidth, are set by the kernel and
    the SM count, not by the tensor or the HBM: :func:`batched_copy_bytes_per_s` (a lower
    bound on ``memory_s``; the ``peak`` / ``torchao`` presets keep the plain pass). A ``cat``
    of contiguous inputs with 16-byte slices runs the vectorized kernel instead
    (:func:`cat_vectorized`): a plain streaming pass. H200 MoE traces
    (``data/programs/h200/traces/moe_*_grouped_mm_train_*``): ``cat`` of two contiguous
    [32768, 14336] bf16 halves, 945 us (3.9 TB/s) where the generic kernel's rate priced 5.6 ms.
    """
    priced, how = stream(call, p, "cat", "memory")
    if not priced or not is_shape_aware(p.efficiency):
        return priced, how
    if call.base in ("cat", "_cat", "concat", "concatenate") and cat_vectorized(call):
        return priced, how + "; contiguous 16-byte slices: vectorized batched copy"
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


def memory(*names: str, rule: str = "pointwise", kind: str = "memory",
           layout: bool = False) -> None:
    """Register memory-bound ops (``aten::`` prefixed unless namespaced); ``layout``: a
    TensorIterator op, whose operands' layout picks aten's loop (:func:`aten_loop`)."""
    fn = memory_pricer(rule, kind, layout)
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
                memory_pricer("pointwise", "elementwise", layout=True))
register_family("reductions", lambda c: "reduction" in c.tags, "memory", "elementwise",
                memory_pricer("reduce", "reduction"))
