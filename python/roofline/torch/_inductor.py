"""What Inductor makes of the aten ops a module ran (``launch="compiled"``): the extern
kernels stay, the memory-bound ops between them fuse into Triton kernels.

Inductor (``torch/_inductor``) lowers pointwise, reduction, copy, cat and index ops to loop
IR, and its scheduler fuses a node into the kernel of the node it reads from; GEMMs, SDPA,
collectives and a few fallbacks (``sort``, ``topk``, ``_grouped_mm``) run as extern kernels.
Modeled here on the ops the module ran eagerly, in launch order:

- a *group* is the run of memory-bound ops between two extern kernels;
- inside a group, an op joins the kernel of every op whose output it reads (data flow through
  a tensor's storage, views included), except across an in-place scatter (``index_copy_``,
  ``copy_`` into a buffer that existed before: a mutation is stored before the buffer is read
  again) and through a broadcast view (``expand``: the reader's loop is larger than the
  producer's, which Inductor's scheduler does not fuse): the connected parts are the group's
  Triton kernels;
- a pointwise kernel whose storages one later kernel of the same pass alone reads is
  inlined into it (Inductor computes a pointwise node inside its consumer), unless it made
  a graph output;
- each kernel is one memory pass (the registry's streaming model, as for any Triton kernel
  whose inputs and outputs are known): it reads every storage it uses that another kernel
  wrote or that came from outside (the distinct bytes of a broadcast view: a ``repeat_kv``
  reads its cache once), and writes every storage it made that another kernel or extern
  reads, that leaves the graph (reachable from the module's outputs or keyword inputs: a
  ``DynamicCache``'s new K / V) or that nobody reads (tensors saved for the backward are
  read by it), plus the bytes each in-place op wrote into an older buffer.

Assumptions: the module's Python takes its eager branches except where it asks
``torch.compiler.is_compiling()`` (answered True while tracing a compiled launch, as under
Dynamo; ``is_exporting()`` too before torch 2.14, as Dynamo folded it); one region per pass
(no graph breaks); the forward's tensors that the eager backward reads are saved
(AOTAutograd's partitioner recomputes some cheap ones instead: the RMSNorm's fp32 upcast);
the module runs eagerly on meta tensors, so every layer is traced (no ``dedupe``).
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Iterator
from typing import Any

import torch

from ._ops import Context, tensors

__all__ = ["FusionLog", "compiling", "fuse"]

#: Record kinds that stay extern kernels.
EXTERN_KINDS = frozenset({"gemm", "attention", "collective", "conv", "unmodeled"})
#: Dynamo before torch 2.14 answers ``torch.compiler.is_exporting()`` True (pytorch#176499).
_OLD_DYNAMO = tuple(int(x) for x in torch.__version__.split("+")[0].split(".")[:2]) < (2, 14)
#: in-place aten ops that overwrite part of a buffer without reading it.
SCATTERS = frozenset({"index_copy_", "index_put_", "copy_", "scatter_", "index_fill_",
                      "masked_scatter_", "fill_", "zero_", "slice_scatter"})
#: aten ops that read rows of their first input (a table): as many bytes as they write.
GATHERS = frozenset({"embedding", "index_select", "index", "gather"})
#: aten ops Inductor runs as fallback (extern) kernels.
FALLBACKS = frozenset({"sort", "topk", "argsort", "_grouped_mm", "nonzero", "histc",
                       "bincount", "multinomial"})


@dataclasses.dataclass
class _Op:
    first: int  # index of its first record
    count: int  # records (kernels) it launched eagerly
    reads: list[tuple[int, int]]  # (storage serial, bytes read)
    writes: list[tuple[int, int, bool]]  # (storage serial, bytes written, into an older buffer)
    #: storages read through a broadcast (zero-stride) view: a larger loop than the producer's
    spread: set[int] = dataclasses.field(default_factory=set)


class FusionLog:
    """Per dispatched op: the storages it read and wrote (serials, so that a freed storage
    reused by a later tensor is a different one)."""

    def __init__(self) -> None:
        self.ops: list[_Op] = []
        self._serial: dict[int, int] = {}
        self._next = 0
        #: storages that leave the compiled graph (outputs, state the module updated)
        self.escape: set[int] = set()

    def _key(self, t: torch.Tensor, fresh: bool) -> tuple[int, int]:
        st = t.untyped_storage()
        cdata = int(st._cdata)
        if fresh or cdata not in self._serial:
            self._next += 1
            self._serial[cdata] = self._next
        return self._serial[cdata], int(st.nbytes())

    def op(self, name: str, first: int, count: int, args: Any, kwargs: Any, out: Any) -> None:
        """Log one aten op ``name`` that launched ``count`` records starting at ``first``
        (zero for views and allocations: only their outputs' storages are noted)."""
        ins = [t for t in tensors(args) + tensors(kwargs) if t.device.type != "cpu"]
        in_keys = {int(t.untyped_storage()._cdata) for t in ins}
        reads: list[tuple[int, int]] = []
        rows = sum(_nbytes(t) for t in tensors(out)) if name in GATHERS else None
        spread: set[int] = set()
        for j, t in enumerate(ins):
            key, size = self._key(t, False)
            nb = min(_nbytes(t), size)
            reads.append((key, min(nb, rows) if j == 0 and rows is not None else nb))
            if 0 in t.stride() and t.numel() > 1:
                spread.add(key)
        writes: list[tuple[int, int, bool]] = []
        for t in tensors(out):
            cdata = int(t.untyped_storage()._cdata)
            older = cdata in in_keys
            if older and count == 0:  # a view of an input
                continue
            key, size = self._key(t, not older)
            nb = min(_nbytes(t), size)
            if older:  # an in-place op writes its values' elements (a fill: all of them)
                vals = [u.numel() for u in ins if int(u.untyped_storage()._cdata) != cdata
                        and u.is_floating_point() == t.is_floating_point()]
                nb = min(nb, sum(vals) * int(t.element_size())) if vals else nb
                # a scatter does not read its buffer; ``add_`` reads what it overwrites
                reads = [(k, 0 if name in SCATTERS else min(b, nb)) if k == key else (k, b)
                         for k, b in reads]
            writes.append((key, nb, older))
        if count:
            self.ops.append(_Op(first, count, reads, writes, spread))

    def escaping(self, *objs: Any) -> None:
        """Note the storages reachable from ``objs`` (the module's outputs and its keyword
        inputs, e.g. a KV cache object it updated): graph outputs, always stored."""
        seen: set[int] = set()

        def walk(x: Any, depth: int) -> None:
            if id(x) in seen or depth > 5:
                return
            seen.add(id(x))
            if isinstance(x, torch.Tensor):
                key = self._serial.get(int(x.untyped_storage()._cdata))
                if key is not None:
                    self.escape.add(key)
            elif isinstance(x, (list, tuple, set)):
                for y in x:
                    walk(y, depth + 1)
            elif isinstance(x, dict):
                for y in x.values():
                    walk(y, depth + 1)
            elif hasattr(x, "__dict__") and not isinstance(x, (type, torch.nn.Module)):
                for y in vars(x).values():
                    walk(y, depth + 1)

        for obj in objs:
            walk(obj, 0)


def _nbytes(t: torch.Tensor) -> int:
    """Distinct bytes a (possibly broadcast) view touches: its extent over non-zero strides."""
    n = 1
    for s, st in zip(t.shape, t.stride(), strict=True):
        if st != 0:
            n *= int(s)
    return n * int(t.element_size())


def _fusible(rec: Any) -> bool:
    return rec.kind not in EXTERN_KINDS and rec.op not in FALLBACKS


@dataclasses.dataclass
class _Kernel:
    ops: list[_Op]
    reads: dict[int, int]  # storages read from memory -> bytes
    made: dict[int, int]  # storages it creates -> bytes
    mutated: int  # bytes written into older buffers
    reduction: bool


def fuse(records: list[Any], log: FusionLog, ctx: Context) -> list[Any]:
    """The records of the compiled step: extern kernels as recorded, the memory-bound ops
    between them as fused Triton kernels (see the module docstring)."""
    by_first = {o.first: o for o in log.ops}
    items: list[Any] = []  # extern records, or the fused kernels of a group
    i = 0
    while i < len(records):
        o = by_first.get(i)
        if o is None or not _fusible(records[i]):
            n = 1 if o is None else o.count
            items.extend(("extern", records[j], o if j == i else None) for j in range(i, i + n))
            i += n
            continue
        group = []
        while o is not None and _fusible(records[o.first]) and (
                records[o.first].phase == records[i].phase):
            group.append(o)
            o = by_first.get(o.first + o.count)
        items.extend(("kernel", k, None) for k in _components(records, group))
        i = group[-1].first + group[-1].count
    _inline(items, records, log.escape)
    readers: dict[int, set[int]] = {}
    for n, (tag, item, op) in enumerate(items):
        src = item.reads if tag == "kernel" else dict(op.reads) if op is not None else {}
        for key in src:
            readers.setdefault(key, set()).add(n)
    out = []
    for n, (tag, item, _) in enumerate(items):
        if tag == "extern":
            out.append(item)
            continue
        # a storage it made is stored when another kernel reads it, or nobody does (outputs)
        inside = {key for o in item.ops for key, _ in o.reads}
        written = item.mutated + sum(nb for key, nb in item.made.items()
                                     if readers.get(key, set()) - {n} or key in log.escape
                                     or (key not in readers and key not in inside))
        first = records[item.ops[0].first]
        e = ctx.traffic(sum(item.reads.values()), written, 0.0, "triton_fused")
        host = tuple(map(sum, zip(*(records[o.first].host or (0.0,) for o in item.ops),
                                  strict=False)))
        names = "_".join(dict.fromkeys(records[o.first].op for o in item.ops))
        out.append(dataclasses.replace(first, op=f"triton_fused_{names}"[:120],
                                       kind="reduction" if item.reduction else "elementwise",
                                       estimate=e, host=host))
    return out


def _components(records: list[Any], group: list[_Op]) -> list[_Kernel]:
    """The kernels of one group: ops joined through the storages they pass (not across an
    in-place scatter), each reading what came from outside it."""
    parent = list(range(len(group)))

    def find(a: int) -> int:
        while parent[a] != a:
            parent[a] = parent[parent[a]]
            a = parent[a]
        return a

    writer: dict[int, tuple[int, bool]] = {}  # storage -> (op in group, by an in-place op)
    for j, o in enumerate(group):
        for key, _ in o.reads:
            w = writer.get(key)
            if w is not None and not w[1] and key not in o.spread:
                parent[find(j)] = find(w[0])
        for key, _, older in o.writes:
            writer[key] = (j, older)
    comps: dict[int, list[int]] = {}
    for j in range(len(group)):
        comps.setdefault(find(j), []).append(j)
    out = []
    for members in sorted(comps.values()):
        k = _Kernel([group[j] for j in members], {}, {}, 0, False)
        for o in k.ops:
            for key, nb in o.reads:
                if key not in k.made:
                    k.reads[key] = max(k.reads.get(key, 0), nb)
            for key, nb, older in o.writes:
                if older:
                    k.mutated += nb
                else:
                    k.made[key] = nb
            k.reduction |= records[o.first].kind == "reduction"
        out.append(k)
    return out


def _inline(items: list[Any], records: list[Any], escape: set[int]) -> None:
    """Inductor inlines a pointwise node into its consumer: a pointwise kernel (no reduction,
    no in-place write) whose every storage is read by one later kernel of the same pass, and
    by nothing else, is computed inside that kernel (which reads its inputs instead)."""
    n = 0
    while n < len(items):
        tag, k, _ = items[n]
        if tag == "kernel" and not k.reduction and not k.mutated and k.made and not (
                escape & k.made.keys()):
            users = {m for m in range(n + 1, len(items)) for key in k.made
                     if key in _reads(items[m])}
            if len(users) == 1:
                m = users.pop()
                tag2, k2, _ = items[m]
                if tag2 == "kernel" and records[k2.ops[0].first].phase == records[
                        k.ops[0].first].phase:
                    for key in k.made:
                        k2.reads.pop(key, None)
                    for key, nb in k.reads.items():
                        k2.reads[key] = max(k2.reads.get(key, 0), nb)
                    k2.ops[:0] = k.ops
                    del items[n]
                    continue
        n += 1


def _reads(item: tuple[str, Any, Any]) -> dict[int, int]:
    tag, x, op = item
    if tag == "kernel":
        return x.reads  # type: ignore[no-any-return]
    return dict(op.reads) if op is not None else {}


@contextlib.contextmanager
def compiling() -> Iterator[None]:
    """``torch.compiler.is_compiling()`` answers True inside (the module's Python takes the
    branches it takes under Dynamo, e.g. transformers' ``repeat_kv`` instead of ``pack_gqa``);
    before torch 2.14 Dynamo also folded ``torch.compiler.is_exporting()`` to True
    (pytorch#176499), so transformers builds the attention mask in every phase."""
    saved = torch.compiler.is_compiling, torch.compiler.is_exporting
    torch.compiler.is_compiling = lambda: True
    if _OLD_DYNAMO:
        torch.compiler.is_exporting = lambda: True
    try:
        yield
    finally:
        torch.compiler.is_compiling, torch.compiler.is_exporting = saved
