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

from collections.abc import Callable

from .call import Call, TensorArg, nbytes
from .pricer import Pricer
from .table import Entry, Priced, add, register_family

__all__ = ["RULES", "moved_bytes", "stream"]

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
