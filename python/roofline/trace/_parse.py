"""Link every GPU event of a Kineto trace to the op that launched it, its module and its step.

Rules (documented in :func:`roofline.trace.explain`):

- kernel → launch: the CUDA runtime/driver event with the same ``args.correlation``; else the
  ``ac2g`` flow whose id is the correlation (its start lies on the launching call); else the
  cpu_op with the kernel's ``External id``.
- launch → op: time containment on the launching thread. The op is the innermost ``cpu_op``
  enclosing the launch that has recorded shapes (``Input Dims`` with a non-empty entry); if
  none has shapes, the innermost ``cpu_op`` (then the kernel is left unpriced).
- module: the enclosing ``nn.Module: X`` events (``python_function`` with ``with_stack`` /
  ``user_annotation``) joined with ``/``; a backward kernel takes the module of the forward op
  with the same autograd ``Sequence number`` plus `` (backward)``. Without module events the
  module is the outermost region enclosing the launch (e.g. ``aten::linear``).
- steps: ``ProfilerStep#N`` annotations when present; else the launching thread's top-level
  op sequence, if it is exactly N repeats of one block and the kernels split into N equal
  multisets; else 1.
"""

from __future__ import annotations

import bisect
import gc
from array import array
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from operator import itemgetter
from typing import Any

import numpy as np

from .. import _core
from ._classify import classify
from ._collect import (
    ABSENT,
    CPU_CATS,
    GPU_CATS,
    ODD,
    Collector,
    Columns,
    GpuColumns,
    Values,
)
from ._events import UNSET, Fallback
from ._price import has_shapes

__all__ = ["Kernel", "Parsed", "parse", "paused_gc"]

_BACKWARD_PREFIX = "autograd::engine::evaluate_function: "
_MODULE_PREFIX = "nn.Module: "
_OP = CPU_CATS.index("cpu_op")
_REGION = CPU_CATS.index("python_function")  # up to it: cpu_op, user_annotation, and it
_LAUNCH = CPU_CATS.index("cuda_runtime")  # it and the ones after: cuda_runtime, cuda_driver


_Flags = tuple[np.ndarray[Any, Any], np.ndarray[Any, Any], np.ndarray[Any, Any]]


def _sorted(col: array[Any], order: np.ndarray[Any, Any], dtype: Any) -> array[Any]:
    """``col`` (an ``array.array`` of ``dtype``) in the order of the indices ``order``."""
    return array(col.typecode, np.frombuffer(col, dtype=dtype)[order].tobytes())


@dataclass(slots=True)
class Kernel:
    """One GPU event (kernel, memcpy or memset) and what launched it.

    ``args`` holds only the arguments the pricing reads (the kernel's device, bytes and
    collective record), read-only: kernels with equal ``{"device": d}`` share one dict;
    ``dims``, ``types``, ``concrete``, ``strides``: the op's recorded inputs (equal ones are
    one set of objects); ``chain_args`` the collective records (``Collective name`` ...) of
    the events enclosing the launch."""

    name: str
    category: str
    kind: str
    ts_us: float
    dur_us: float
    stream: Any
    args: dict[str, Any]
    op: str = ""
    op_uid: int = -1
    dims: list[Any] | None = None
    types: list[Any] | None = None
    concrete: list[Any] | None = None
    strides: list[Any] | None = None
    chain_args: list[dict[str, Any]] = field(default_factory=list)
    module: str = ""
    region: str = ""
    launch_ts_us: float = float("nan")
    iteration: int = 0
    graph: bool = False  # launched by a CUDA graph replay (cudaGraphLaunch): no op, no shapes


@dataclass
class Parsed:
    kernels: list[Kernel]
    device_name: str | None
    iterations: int
    iteration_rule: str
    linked: int


def _sorted_values(col: Values, order: np.ndarray[Any, Any], at: np.ndarray[Any, Any]
                   ) -> Values:
    """``col`` in the order of the indices ``order`` (``at``: its inverse)."""
    out = Values()
    out.ints = _sorted(col.ints, order, np.int64)
    out.odd = {int(at[p]): v for p, v in col.odd.items()}
    return out


def _values_list(col: Values) -> list[Any]:
    """``col``'s entries as a list (as ``col[i]`` reads them)."""
    out: list[Any] = col.ints.tolist()
    for i in np.flatnonzero(np.frombuffer(col.ints, dtype=np.int64) <= ODD).tolist():
        out[i] = col[i]
    return out


def _present(col: Values, none: bool) -> list[int]:
    """Indices of the entries of ``col`` that are present (not ``UNSET``), None included
    if ``none``."""
    ints = np.frombuffer(col.ints, dtype=np.int64)
    keep = ints != ABSENT if none else ints > ABSENT
    return np.flatnonzero(keep).tolist()  # type: ignore[no-any-return]


class _Thread:
    """The cpu events of one thread as a containment forest, sorted by start (the longer
    first, else in trace order), in columns: ``ts``, ``end`` (µs), ``cat`` (a code of
    ``CPU_CATS``), ``name`` and ``args`` (indices into the collector's ``names`` and
    ``arglist``; ``args``: a collective record), ``shape`` (a cpu_op's recorded inputs, an
    index into ``shape_list``), ``ext`` and ``seq`` (a cpu_op's External id and Sequence
    number), ``uid`` (the event's number in the trace), ``parent`` (the index of the
    innermost enclosing event, -1: none), and ``launches``: (index, correlation id) of the
    launch calls, by index; ``chosen`` (the innermost cpu_op on the event's chain with
    shaped inputs, else the innermost cpu_op, -1: none), ``root`` (the chain's outermost
    event) and ``ctx`` (the innermost event on the chain that adds to what ``_context``
    returns, a module name, a collective record or the outermost region: the chain's
    context is that event's; -1: none). Sorting and the
    inverse permutation are numpy's; the parents come from one pass with a stack of open
    events, and the chains' choices from the parents, in C++ (``_core.containment_tree``)."""

    def __init__(self, cols: Columns, flags: _Flags) -> None:
        ts = np.frombuffer(cols.ts, dtype=np.float64)
        dur = np.frombuffer(cols.dur, dtype=np.float64)
        order = np.lexsort((-dur, ts))  # by start, then the longer first; stable
        ts_s = ts[order]
        end_s = ts_s + dur[order]
        self.ts = array("d", ts_s.tobytes())
        self.end = array("d", end_s.tobytes())
        cat = np.frombuffer(cols.cat, dtype=np.uint8)[order]
        self.cat = cat.tobytes()
        name = np.frombuffer(cols.name, dtype=np.int64)[order]
        args = np.frombuffer(cols.args, dtype=np.int64)[order]
        self.name, self.args = array("q", name.tobytes()), array("q", args.tobytes())
        self.uid = _sorted(cols.uid, order, np.int64)
        shape = np.frombuffer(cols.shape, dtype=np.int64)[order]
        self.shape = array("q", shape.tobytes())
        at = np.empty(len(order), dtype=np.int64)
        at[order] = np.arange(len(order), dtype=np.int64)  # trace position -> index
        self.ext = _sorted_values(cols.ext, order, at)
        self.seq = _sorted_values(cols.seq, order, at)
        self.launches: list[tuple[int, Any]] = sorted(
            ((int(at[p]), c) for p, c in cols.corr.items()), key=itemgetter(0))
        self.context: dict[int, tuple[tuple[str, ...], int, list[dict[str, Any]]]] = {}
        n = len(order)
        self.parent, self.chosen, self.root, self.ctx = (array("q", [0]) * n for _ in range(4))
        shaped, module, coll = flags
        _core.containment_tree(ts_s, end_s, cat, shape, name, args, shaped, module, coll, _OP,
                               _REGION, self.parent, self.chosen, self.root, self.ctx)

    def find(self, ts: float) -> int:
        """The innermost event enclosing time ``ts`` (its index), or -1."""
        i = bisect.bisect_right(self.ts, ts) - 1
        while i >= 0 and self.end[i] < ts:
            i = self.parent[i]
        return i

    def top_level(self) -> list[int]:
        return [i for i, p in enumerate(self.parent) if p < 0 and self.cat[i] <= _REGION]


def parse(trace: Any, where: str = "the trace") -> Parsed:
    """Kernels of ``trace`` (sorted by start) with their op, module, region and step.

    ``trace`` is a trace dict or a :class:`~roofline.trace._load.TraceStream` (read once,
    event by event; only the fields used here are kept)."""
    with paused_gc():
        return _parse(trace, where)


@contextmanager
def paused_gc() -> Iterator[None]:
    """No cyclic-garbage passes inside (restored after): reading a trace makes millions of
    containers, none cyclic, and each pass would walk all of them (a third of the time)."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if collecting:
            gc.enable()


def _parse(trace: Any, where: str) -> Parsed:
    col = Collector(where)
    if isinstance(trace, dict):
        col.add_all(trace["traceEvents"])
        meta = trace
    else:
        scanned = trace.scan(where) if trace.scan is not None else None
        if scanned is not None:
            col = scanned
        elif trace.batches is not None:
            try:
                col.add_structs(trace.batches)
            except Fallback:  # an unusual file: the standard library's reader says why
                col = Collector(where)
                col.add_all(trace.events)
        else:
            col.add_all(trace.events)
        meta = trace.meta
    col.launched.clear()  # (only the collector's flows needed it)
    flags = _flags(col)
    threads = {}
    for key in list(col.threads):
        threads[key] = _Thread(col.threads.pop(key), flags)  # columns freed once sorted
    flows, steps, names, arglist = col.flows, col.steps, col.names, col.arglist

    seq_fwd: dict[Any, tuple[tuple[Any, Any], int]] = {}
    for key, th in threads.items():
        for i in _present(th.seq, none=False):  # a cpu_op's Sequence number, not None
            seq = th.seq[i]
            if seq not in seq_fwd:
                root = names[th.name[th.root[i]]]
                if not str(root).startswith(_BACKWARD_PREFIX):
                    seq_fwd[seq] = (key, i)

    kernels: list[Kernel] = []
    linked = 0
    kinds: dict[tuple[str, str], str] = {}
    linker = _Linker(threads, seq_fwd, col)
    gpu = col.gpu
    ths, number = list(threads.values()), {key: n for n, key in enumerate(threads)}
    link = linker.link
    lt, li = _launched(threads, gpu)
    external: dict[Any, tuple[tuple[Any, Any], int]] | None = None  # built when first needed
    g_ts, g_dur, g_name, g_cat, g_args = gpu.ts, gpu.dur, gpu.name, gpu.cat, gpu.args
    streams, corr_of = _values_list(gpu.stream), gpu.corr.__getitem__
    for j in _order(gpu.ts):  # by start (stable)
        ts, dur, name, cat = g_ts[j], g_dur[j], names[g_name[j]], GPU_CATS[g_cat[j]]
        kind = kinds.get((name, cat))
        if kind is None:
            kind = kinds[(name, cat)] = classify(name, cat)
        t = lt[j]
        if t >= 0:  # (nearly every kernel: its launch call's thread and index)
            linked += 1
            kernels.append(Kernel(name, cat, kind, ts, dur, streams[j], arglist[g_args[j]],
                                  *link(t, ths[t], li[j])))
            continue
        where_: tuple[tuple[Any, Any], int] | None = None
        corr = corr_of(j)
        if corr in flows:
            pid, tid, fts = flows[corr]
            flow_th = threads.get((pid, tid))
            if flow_th is not None:
                idx = flow_th.find(fts)
                where_ = ((pid, tid), idx) if idx >= 0 else None
        if where_ is None:
            if external is None:
                external = _external(threads)
            where_ = external.get(gpu.ext[j])
        if where_ is not None:
            linked += 1
            n = number[where_[0]]
            kernels.append(Kernel(name, cat, kind, ts, dur, streams[j], arglist[g_args[j]],
                                  *link(n, ths[n], where_[1])))
        else:
            kernels.append(Kernel(name=name, category=cat, kind=kind, ts_us=ts,
                                  dur_us=dur, stream=streams[j], args=arglist[g_args[j]]))

    iters, rule = _iterations(kernels, threads, steps, names)
    return Parsed(kernels, _device_name(meta), iters, rule, linked)


def _flags(col: Collector) -> _Flags:
    """Per recorded inputs: they have shapes (an op's count for its kernels); per name: a
    module's (``nn.Module: X``); per kept arguments: a collective record."""
    shapes, names = col.shape_list, col.names
    return (np.array([i > 0 and s[0] is not None and has_shapes(s[0], s[1])
                      for i, s in enumerate(shapes)], dtype=np.uint8),
            np.array([type(n) is str and n.startswith(_MODULE_PREFIX) for n in names],
                     dtype=np.uint8),
            np.array(["Collective name" in a for a in col.arglist], dtype=np.uint8))


def _order(ts: array[float]) -> array[int]:
    """Indices that sort ``ts`` (stable)."""
    return array("q", np.argsort(np.frombuffer(ts, dtype=np.float64), kind="stable")
                 .astype(np.int64).tobytes())


def _launched(threads: dict[tuple[Any, Any], _Thread], gpu: GpuColumns
              ) -> tuple[array[int], array[int]]:
    """Per GPU event (trace order): the number (in ``threads``' order) of the thread whose
    runtime / driver call has its correlation id, -1 if none, and that call's index; of
    several calls with one id, the last (in threads' order, then by start).

    Ids that are all plain ints are matched in bulk (``numpy``: sorted unique ids, binary
    search); otherwise one by one, with a dict (Python's equality: ``5 == 5.0``). Empties
    each thread's ``launches`` (nothing else reads them)."""
    n = len(gpu)
    corrs: list[Any] = []
    tnos: list[int] = []
    idxs: list[int] = []
    for t, th in enumerate(threads.values()):
        for i, c in th.launches:
            corrs.append(c)
            tnos.append(t)
            idxs.append(i)
        th.launches = []  # read once, here: freed before the kernels are built
    lt = array("q", bytes(8 * n))
    li = array("q", bytes(8 * n))
    if not corrs or (not gpu.corr.odd and all(type(c) is int and ODD < c < 1 << 63
                                             for c in corrs)):
        if not corrs:
            return array("q", [-1]) * n, li
        rev = np.array(corrs[::-1], dtype=np.int64)
        ukeys, first = np.unique(rev, return_index=True)  # first in reverse: the last call
        last = len(corrs) - 1 - first
        gc = np.frombuffer(gpu.corr.ints, dtype=np.int64)
        pos = np.minimum(np.searchsorted(ukeys, gc), len(ukeys) - 1)
        hit = ukeys[pos] == gc
        at = last[pos]
        lt = array("q", np.where(hit, np.array(tnos, dtype=np.int64)[at], -1).tobytes())
        li = array("q", np.where(hit, np.array(idxs, dtype=np.int64)[at], 0).tobytes())
        return lt, li
    launches = {c: k for k, c in enumerate(corrs)}
    for j in range(n):
        k = launches.get(gpu.corr[j], -1)
        lt[j] = tnos[k] if k >= 0 else -1
        li[j] = idxs[k] if k >= 0 else 0
    return lt, li


def _external(threads: dict[tuple[Any, Any], _Thread]) -> dict[Any, tuple[tuple[Any, Any], int]]:
    """External id -> (thread, event index) of the first cpu_op carrying it."""
    external: dict[Any, tuple[tuple[Any, Any], int]] = {}
    for key, th in threads.items():
        for i in _present(th.ext, none=True):  # a cpu_op's External id (or None)
            external.setdefault(th.ext[i], (key, i))
    return external


class _Linker:
    """Sets a kernel's op, module and region from the chain enclosing its launch (what a
    launch's chain yields is computed once per op instance)."""

    def __init__(self, threads: dict[tuple[Any, Any], _Thread],
                 seq_fwd: dict[Any, tuple[tuple[Any, Any], int]], col: Collector) -> None:
        self.threads, self.seq_fwd, self.strings = threads, seq_fwd, col.strings
        self.names, self.arglist, self.shapes = col.names, col.arglist, col.shape_list
        self.memo: dict[tuple[int, int], tuple[Any, ...]] = {}
        self.named: dict[tuple[tuple[str, ...], int], tuple[str, str]] = {}
        self.contexts: dict[tuple[int, int], tuple[Any, str, str]] = {}
        self.fwd: dict[tuple[tuple[Any, Any], int], str] = {}  # a forward context's module
        self.graph = [str(n).startswith("cudaGraphLaunch") for n in col.names]
        self.coll = ["Collective name" in a for a in col.arglist]

    def link(self, t: int, th: _Thread, launch: int) -> tuple[Any, ...]:
        """The :class:`Kernel` fields after ``args`` of a kernel launched by event ``launch``
        of ``th``, the ``t``-th thread (``op`` ... ``region``, ``launch_ts_us``,
        ``iteration`` 0, ``graph``)."""
        idx = launch
        if th.cat[idx] >= _LAUNCH and not self.coll[th.args[idx]]:
            idx = th.parent[idx]  # a launch call adds nothing but its start to the chain
        got = self.memo.get((t, idx))
        if got is None:
            if len(self.memo) > 4096:  # the kernels of one op launch close together
                self.memo.clear()
            got = self.memo[(t, idx)] = self._chain(th, t, idx)
        return (*got, th.ts[launch], 0, self.graph[th.name[launch]])

    def _chain(self, th: _Thread, t: int, idx: int) -> tuple[Any, ...]:
        op, uid, inputs = "", -1, self.shapes[0]
        # the innermost cpu_op with recorded shapes, else the innermost one
        chosen = th.chosen[idx] if idx >= 0 else -1
        if chosen >= 0:
            op, uid, inputs = str(self.names[th.name[chosen]]), th.uid[chosen], \
                self.shapes[th.shape[chosen]]
        c = th.ctx[idx] if idx >= 0 else -1  # the chain's context is this event's
        got = self.contexts.get((t, c))
        if got is None:
            if len(self.contexts) > 4096:  # (one per backward op: kept few, like memo)
                self.contexts.clear()
            names, outer, chain_args = self._context(th, c)
            named = self.named.get((names, -1 if outer < 0 else th.uid[outer]))
            if named is None:
                named = self._named(names, th, outer)
            got = self.contexts[(t, c)] = (chain_args, *named)
        return (op, uid, *inputs, *got)

    def _named(self, names: tuple[str, ...], th: _Thread, outer: int) -> tuple[str, str]:
        """The module and region of a chain with module names ``names`` and outermost
        region event ``outer`` of ``th`` (-1: none; memoized: a chain's names and outer
        event decide them)."""
        module = "/".join(names)
        outer_name = str(self.names[th.name[outer]]) if outer >= 0 else ""
        backward = not module and outer >= 0 and outer_name.startswith(_BACKWARD_PREFIX)
        if backward:  # (one outer event per backward op: not memoized in named)
            seq = th.seq[outer]
            if seq is not UNSET and seq in self.seq_fwd:
                fkey, fidx = self.seq_fwd[seq]
                fth = self.threads[fkey]
                c = fth.ctx[fidx]  # the forward op's context is this event's
                fmodule = self.fwd.get((fkey, c))
                if fmodule is None:
                    fmodule = self.fwd[(fkey, c)] = "/".join(self._context(fth, c)[0])
                fwd_module = fmodule or str(self.names[fth.name[fth.root[fidx]]])
                module = f"{fwd_module} (backward)"
        region = ""
        if outer >= 0:
            region = outer_name[len(_BACKWARD_PREFIX):] \
                if outer_name.startswith(_BACKWARD_PREFIX) else outer_name
        module = module or region
        strings = self.strings
        named = strings.setdefault(module, module), strings.setdefault(region, region)
        if not backward:
            self.named[(names, -1 if outer < 0 else th.uid[outer])] = named
        return named

    def _context(self, th: _Thread, idx: int
                 ) -> tuple[tuple[str, ...], int, list[dict[str, Any]]]:
        """Of the chain enclosing event ``idx`` (itself included): the ``nn.Module: X``
        names outermost first, the outermost region event (-1: none), and the collective
        records innermost first; memoized per event, built from the parent's."""
        if idx < 0:
            return (), -1, []
        memo = th.context
        got = memo.get(idx)
        if got is not None:
            return got
        todo = []
        i = idx
        while i >= 0 and i not in memo:
            todo.append(i)
            i = th.parent[i]
        up = memo[i] if i >= 0 else ((), -1, [])
        names, arglist = self.names, self.arglist
        for i in reversed(todo):
            module, outer, coll = up
            name = names[th.name[i]]
            if type(name) is str and name.startswith(_MODULE_PREFIX):
                module = (*module, name[len(_MODULE_PREFIX):])
            if outer < 0 and th.cat[i] <= _REGION:
                outer = i
            a = arglist[th.args[i]]
            if "Collective name" in a:
                coll = [a, *coll]
            up = (module, outer, coll)
            if i != idx:  # the enclosing events are shared by many calls, ``idx`` seldom
                memo[i] = up
        return up


def _device_name(trace: dict[str, Any]) -> str | None:
    props = trace.get("deviceProperties")
    if isinstance(props, list) and props and isinstance(props[0], dict):
        name = props[0].get("name")
        return str(name) if name else None
    return None


def _periodic(seq: list[str]) -> int:
    """Repeats of the shortest block ``seq`` is made of (1 when it is not a repeat).

    The shortest period p of a sequence of length n is n - (the longest proper prefix that is
    also a suffix), from the Knuth-Morris-Pratt failure function (O(n)); the sequence is a
    whole number of repeats of a block exactly when p divides n (else of none)."""
    n = len(seq)
    if n < 2:
        return 1
    fail = [0] * n
    j = 0
    for i in range(1, n):
        while j and seq[i] != seq[j]:
            j = fail[j - 1]
        if seq[i] == seq[j]:
            j += 1
        fail[i] = j
    p = n - fail[-1]
    return n // p if p < n and n % p == 0 else 1


def _iterations(kernels: list[Kernel], threads: dict[tuple[Any, Any], _Thread],
                steps: list[tuple[float, float]], names: list[Any]) -> tuple[int, str]:
    """Number of steps and the rule that found it; sets each kernel's ``iteration``."""
    if not kernels:
        return 1, "no kernels"
    if steps:
        steps.sort()
        starts = [s for s, _ in steps]
        for k in kernels:
            t = k.launch_ts_us if k.launch_ts_us == k.launch_ts_us else k.ts_us
            k.iteration = max(0, bisect.bisect_right(starts, t) - 1)
        used = sorted({k.iteration for k in kernels})
        remap = {old: new for new, old in enumerate(used)}
        for k in kernels:
            k.iteration = remap[k.iteration]
        return len(used), f"{len(steps)} ProfilerStep annotations"
    # the thread that launched the first kernel (else the busiest): its top-level ops
    first = next((k for k in kernels if k.launch_ts_us == k.launch_ts_us), None)
    main: _Thread | None = None
    if first is not None:
        for th in threads.values():
            i = th.find(first.launch_ts_us)
            if i >= 0 and th.ts[i] <= first.launch_ts_us:
                top = th.top_level()
                if top:
                    main = th
                    break
    if main is None:
        return 1, "no ProfilerStep annotations and no launching thread: 1 step"
    top = main.top_level()
    n = _periodic([str(names[main.name[i]]) for i in top])
    if n <= 1:
        return 1, "no ProfilerStep annotations and no repeated top-level block: 1 step"
    block = len(top) // n
    bounds = [main.ts[top[j * block]] for j in range(n)]
    per: list[Counter[str]] = [Counter() for _ in range(n)]
    for k in kernels:
        t = k.launch_ts_us if k.launch_ts_us == k.launch_ts_us else k.ts_us
        k.iteration = max(0, bisect.bisect_right(bounds, t) - 1)
        per[k.iteration][k.name] += 1
    if any(c != per[0] for c in per[1:]):
        for k in kernels:
            k.iteration = 0
        return 1, (f"top-level ops repeat {n} times but the kernels differ between the "
                   "repeats: 1 step")
    return n, f"top-level op sequence repeats {n} times (no ProfilerStep annotations)"
