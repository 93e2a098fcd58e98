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
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from operator import itemgetter
from typing import Any

from ._classify import classify
from ._collect import EMPTY as _EMPTY
from ._collect import LAUNCH as _LAUNCH
from ._collect import Collector
from ._events import Fallback
from ._price import has_shapes

__all__ = ["Kernel", "Parsed", "parse", "paused_gc"]

_REGION = frozenset(("cpu_op", "user_annotation", "python_function"))
_BACKWARD_PREFIX = "autograd::engine::evaluate_function: "
_MODULE_PREFIX = "nn.Module: "

# a CPU event: (ts, -dur, end, cat, name, args, uid); a launch call with a correlation id:
# (..., uid, correlation), its args only a collective record, else empty
_TS, _END, _CAT, _NAME, _ARGS, _UID, _CORR = 0, 2, 3, 4, 5, 6, 7


@dataclass(slots=True)
class Kernel:
    """One GPU event (kernel, memcpy or memset) and what launched it.

    ``args`` and ``op_args`` hold only the arguments the pricing reads (the kernel's device,
    bytes and collective record; the op's recorded inputs, External id and Sequence number),
    read-only: kernels with equal ``{"device": d}`` share one dict; ``chain_args`` the
    collective records (``Collective name`` ...) of the events enclosing the launch."""

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
    op_args: dict[str, Any] = field(default_factory=dict)
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


class _Thread:
    """The cpu events of one thread as a containment forest (sorted by start)."""

    def __init__(self, events: list[tuple[Any, ...]]) -> None:
        events.sort(key=itemgetter(0, 1))  # by start, the longer first (stable)
        self.events = events
        self.starts = [e[_TS] for e in events]
        self.parent: list[int] = []
        self.context: dict[int, tuple[tuple[str, ...], Any, list[dict[str, Any]]]] = {}
        parent = self.parent.append
        stack: list[int] = []  # the open events (indices) and their ends
        ends: list[float] = []
        top = -1
        for i, e in enumerate(events):
            ts = e[_TS]
            if ends and ends[-1] <= ts:
                while ends and ends[-1] <= ts:
                    ends.pop()
                    stack.pop()
                top = stack[-1] if stack else -1
            parent(top)
            stack.append(i)
            ends.append(e[_END])
            top = i

    def chain_at(self, index: int) -> list[int]:
        """Indices of the events enclosing event ``index`` (itself first, outermost last)."""
        out = []
        while index >= 0:
            out.append(index)
            index = self.parent[index]
        return out

    def find(self, ts: float) -> int:
        """The innermost event enclosing time ``ts`` (its index), or -1."""
        i = bisect.bisect_right(self.starts, ts) - 1
        while i >= 0 and self.events[i][_END] < ts:
            i = self.parent[i]
        return i

    def top_level(self) -> list[int]:
        return [i for i, p in enumerate(self.parent)
                if p < 0 and self.events[i][_CAT] in _REGION]


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
        if trace.batches is not None:
            try:
                col.add_structs(trace.batches)
            except Fallback:  # an unusual file: the standard library's reader says why
                col = Collector(where)
                col.add_all(trace.events)
        else:
            col.add_all(trace.events)
        meta = trace.meta
    threads = {key: _Thread(evs) for key, evs in col.threads.items()}
    flows, steps = col.flows, col.steps
    del col.threads

    # correlation id -> (thread, event index) of the launching runtime / driver call
    launches: dict[Any, tuple[tuple[Any, Any], int]] = {}
    seq_fwd: dict[Any, tuple[tuple[Any, Any], int]] = {}
    for key, th in threads.items():
        for i, e in enumerate(th.events):
            if len(e) > _CORR:  # a launch call with a correlation id
                launches[e[_CORR]] = (key, i)
                continue
            args = e[_ARGS]
            if args and e[_CAT] == "cpu_op":
                seq = args.get("Sequence number")
                if seq is not None and seq not in seq_fwd:
                    root = th.events[th.chain_at(i)[-1]][_NAME]
                    if not str(root).startswith(_BACKWARD_PREFIX):
                        seq_fwd[seq] = (key, i)

    kernels: list[Kernel] = []
    linked = 0
    kinds: dict[tuple[str, str], str] = {}
    linker = _Linker(threads, seq_fwd, col.strings)
    gpu = col.gpu
    gpu.sort(key=itemgetter(0))
    gpu.reverse()  # popped from the end (in start order): each tuple freed as its Kernel is made
    external: dict[Any, tuple[tuple[Any, Any], int]] | None = None  # built when first needed
    pop = gpu.pop
    for _ in range(len(gpu)):
        ts, dur, name, cat, stream, args, corr, ext = pop()
        kind = kinds.get((name, cat))
        if kind is None:
            kind = kinds[(name, cat)] = classify(name, str(cat))
        where_: tuple[tuple[Any, Any], int] | None = None
        if corr in launches:
            where_ = launches[corr]
        elif corr in flows:
            pid, tid, fts = flows[corr]
            flow_th = threads.get((pid, tid))
            if flow_th is not None:
                idx = flow_th.find(fts)
                where_ = ((pid, tid), idx) if idx >= 0 else None
        if where_ is None:
            if external is None:
                external = _external(threads)
            where_ = external.get(ext)
        if where_ is not None:
            linked += 1
            kernels.append(Kernel(name, str(cat), kind, ts, dur, stream, args,
                                  *linker.link(where_)))
        else:
            kernels.append(Kernel(name=name, category=str(cat), kind=kind, ts_us=ts,
                                  dur_us=dur, stream=stream, args=args))
    gpu.clear()

    iters, rule = _iterations(kernels, threads, steps)
    return Parsed(kernels, _device_name(meta), iters, rule, linked)


def _external(threads: dict[tuple[Any, Any], _Thread]
              ) -> dict[Any, tuple[tuple[Any, Any], int]]:
    """External id -> (thread, event index) of the first cpu_op carrying it."""
    external: dict[Any, tuple[tuple[Any, Any], int]] = {}
    for key, th in threads.items():
        for i, e in enumerate(th.events):
            args = e[_ARGS]
            if args and e[_CAT] == "cpu_op" and "External id" in args:
                external.setdefault(args["External id"], (key, i))
    return external


class _Linker:
    """Sets a kernel's op, module and region from the chain enclosing its launch (what a
    launch's chain yields is computed once per op instance)."""

    def __init__(self, threads: dict[tuple[Any, Any], _Thread],
                 seq_fwd: dict[Any, tuple[tuple[Any, Any], int]],
                 strings: dict[str, str]) -> None:
        self.threads, self.seq_fwd, self.strings = threads, seq_fwd, strings
        self.memo: dict[tuple[tuple[Any, Any], int], tuple[Any, ...]] = {}
        self.shaped: dict[tuple[int, int], bool] = {}
        self.named: dict[tuple[tuple[str, ...], int], tuple[str, str]] = {}

    def link(self, where: tuple[tuple[Any, Any], int]) -> tuple[Any, ...]:
        """The :class:`Kernel` fields after ``args`` of a kernel launched by event ``where``
        (``op`` ... ``region``, ``launch_ts_us``, ``iteration`` 0, ``graph``)."""
        key, idx = where
        th = self.threads[key]
        e = th.events[idx]
        graph = str(e[_NAME]).startswith("cudaGraphLaunch")
        if e[_CAT] in _LAUNCH and "Collective name" not in e[_ARGS]:
            idx = th.parent[idx]  # a launch call adds nothing but its start to the chain
        got = self.memo.get((key, idx))
        if got is None:
            if len(self.memo) > 4096:  # the kernels of one op launch close together
                self.memo.clear()
            got = self.memo[(key, idx)] = self._chain(th, idx)
        return (*got, float(e[_TS]), 0, graph)

    def _chain(self, th: _Thread, idx: int) -> tuple[Any, ...]:
        events, parent = th.events, th.parent
        chosen = None
        first_op = None
        i = idx
        while i >= 0:  # the innermost cpu_op with recorded shapes, else the innermost one
            e = events[i]
            if e[_CAT] == "cpu_op":
                if first_op is None:
                    first_op = e
                if e[_ARGS] is not _EMPTY and e[_ARGS].get("Input Dims") is not None and \
                        self._shaped(e[_ARGS]):
                    chosen = e
                    break
            i = parent[i]
        chosen = chosen or first_op
        op, uid, oargs = "", -1, _EMPTY
        if chosen is not None:
            op, uid, oargs = str(chosen[_NAME]), chosen[_UID], chosen[_ARGS]
        names, outer, chain_args = self._context(th, idx)
        named = self.named.get((names, -1 if outer is None else outer[_UID]))
        if named is None:
            named = self._named(names, outer)
        return (op, uid, oargs.get("Input Dims"), oargs.get("Input type"),
                oargs.get("Concrete Inputs"), oargs, chain_args, *named)

    def _named(self, names: tuple[str, ...], outer: Any) -> tuple[str, str]:
        """The module and region of a chain with module names ``names`` and outermost
        region event ``outer`` (memoized: a chain's names and outer event decide them)."""
        module = "/".join(names)
        if not module and outer is not None and str(outer[_NAME]).startswith(_BACKWARD_PREFIX):
            seq = outer[_ARGS].get("Sequence number")
            if seq in self.seq_fwd:
                fkey, fidx = self.seq_fwd[seq]
                fth = self.threads[fkey]
                fmodule = "/".join(self._context(fth, fidx)[0])
                fwd_module = fmodule or str(fth.events[fth.chain_at(fidx)[-1]][_NAME])
                module = f"{fwd_module} (backward)"
        region = ""
        if outer is not None:
            name = str(outer[_NAME])
            region = name[len(_BACKWARD_PREFIX):] if name.startswith(_BACKWARD_PREFIX) \
                else name
        module = module or region
        strings = self.strings
        named = strings.setdefault(module, module), strings.setdefault(region, region)
        self.named[(names, -1 if outer is None else outer[_UID])] = named
        return named

    def _shaped(self, args: dict[str, Any]) -> bool:
        """``has_shapes`` of an op's inputs, once per distinct (shared) inputs."""
        key = id(args["Input Dims"]), id(args.get("Input type"))
        got = self.shaped.get(key)
        if got is None:
            got = self.shaped[key] = has_shapes(args.get("Input Dims"), args.get("Input type"))
        return got

    def _context(self, th: _Thread, idx: int
                 ) -> tuple[tuple[str, ...], Any, list[dict[str, Any]]]:
        """Of the chain enclosing event ``idx`` (itself included): the ``nn.Module: X``
        names outermost first, the outermost region event, and the collective records
        innermost first; memoized per event, built from the parent's."""
        if idx < 0:
            return (), None, []
        memo = th.context
        got = memo.get(idx)
        if got is not None:
            return got
        todo = []
        i = idx
        while i >= 0 and i not in memo:
            todo.append(i)
            i = th.parent[i]
        up = memo[i] if i >= 0 else ((), None, [])
        for i in reversed(todo):
            e = th.events[i]
            module, outer, coll = up
            name = e[_NAME]
            if type(name) is str and name.startswith(_MODULE_PREFIX):
                module = (*module, name[len(_MODULE_PREFIX):])
            if outer is None and e[_CAT] in _REGION:
                outer = e
            if "Collective name" in e[_ARGS]:
                coll = [e[_ARGS], *coll]
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
                steps: list[tuple[float, float]]) -> tuple[int, str]:
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
            if i >= 0 and float(th.events[i][_TS]) <= first.launch_ts_us:
                top = th.top_level()
                if top:
                    main = th
                    break
    if main is None:
        return 1, "no ProfilerStep annotations and no launching thread: 1 step"
    top = main.top_level()
    names = [str(main.events[i][_NAME]) for i in top]
    n = _periodic(names)
    if n <= 1:
        return 1, "no ProfilerStep annotations and no repeated top-level block: 1 step"
    block = len(top) // n
    bounds = [float(main.events[top[j * block]][_TS]) for j in range(n)]
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
