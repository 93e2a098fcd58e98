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
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from ._classify import classify
from ._price import has_shapes

__all__ = ["Kernel", "Parsed", "parse"]

_GPU = ("kernel", "gpu_memcpy", "gpu_memset")
_CPU = ("cpu_op", "user_annotation", "python_function", "cuda_runtime", "cuda_driver")
_REGION = ("cpu_op", "user_annotation", "python_function")
_BACKWARD_PREFIX = "autograd::engine::evaluate_function: "
_MODULE_PREFIX = "nn.Module: "


@dataclass(slots=True)
class Kernel:
    """One GPU event (kernel, memcpy or memset) and what launched it."""

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


@dataclass
class Parsed:
    kernels: list[Kernel]
    device_name: str | None
    iterations: int
    iteration_rule: str
    linked: int


def _has_shapes(args: dict[str, Any]) -> bool:
    return has_shapes(args.get("Input Dims"), args.get("Input type"))


class _Thread:
    """The cpu events of one thread as a containment forest (sorted by start)."""

    def __init__(self, events: list[dict[str, Any]]) -> None:
        events.sort(key=lambda e: (e["ts"], -e.get("dur", 0.0)))
        self.events = events
        self.starts = [e["ts"] for e in events]
        self.parent: list[int] = []
        stack: list[int] = []
        for i, e in enumerate(events):
            ts = e["ts"]
            while stack and _end(events[stack[-1]]) <= ts:
                stack.pop()
            self.parent.append(stack[-1] if stack else -1)
            stack.append(i)

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
        while i >= 0 and _end(self.events[i]) < ts:
            i = self.parent[i]
        return i

    def top_level(self) -> list[int]:
        return [i for i, p in enumerate(self.parent)
                if p < 0 and self.events[i].get("cat") in _REGION]


def _end(e: dict[str, Any]) -> float:
    return float(e["ts"]) + float(e.get("dur", 0.0))


def _module_of(chain: list[dict[str, Any]]) -> str:
    names = [e["name"][len(_MODULE_PREFIX):] for e in reversed(chain)
             if e.get("name", "").startswith(_MODULE_PREFIX)]
    return "/".join(names)


def parse(trace: dict[str, Any]) -> Parsed:
    """Kernels of ``trace`` (sorted by start) with their op, module, region and step."""
    threads_ev: dict[tuple[Any, Any], list[dict[str, Any]]] = {}
    gpu: list[dict[str, Any]] = []
    flows: dict[Any, tuple[Any, Any, float]] = {}
    steps: list[tuple[float, float]] = []
    for e in trace["traceEvents"]:
        if not isinstance(e, dict):
            continue
        cat = e.get("cat")
        ph = e.get("ph")
        if ph == "X" and "ts" in e:
            if cat in _GPU:
                gpu.append(e)
            elif cat in _CPU:
                threads_ev.setdefault((e.get("pid"), e.get("tid")), []).append(e)
                if cat == "user_annotation" and str(e.get("name", "")).startswith(
                        "ProfilerStep#"):
                    steps.append((float(e["ts"]), _end(e)))
        elif ph == "s" and cat == "ac2g":
            flows[e.get("id")] = (e.get("pid"), e.get("tid"), float(e.get("ts", 0.0)))
    threads = {key: _Thread(evs) for key, evs in threads_ev.items()}

    # correlation id -> (thread, event index) of the launching runtime / driver call
    launches: dict[Any, tuple[tuple[Any, Any], int]] = {}
    external: dict[Any, tuple[tuple[Any, Any], int]] = {}
    seq_fwd: dict[Any, tuple[tuple[Any, Any], int]] = {}
    for key, th in threads.items():
        for i, e in enumerate(th.events):
            args = e.get("args") or {}
            cat = e.get("cat")
            if cat in ("cuda_runtime", "cuda_driver") and "correlation" in args:
                launches[args["correlation"]] = (key, i)
            elif cat == "cpu_op":
                if "External id" in args:
                    external.setdefault(args["External id"], (key, i))
                seq = args.get("Sequence number")
                if seq is not None and seq not in seq_fwd:
                    root = th.events[th.chain_at(i)[-1]]["name"]
                    if not str(root).startswith(_BACKWARD_PREFIX):
                        seq_fwd[seq] = (key, i)

    kernels: list[Kernel] = []
    linked = 0
    gpu.sort(key=lambda e: float(e["ts"]))
    for e in gpu:
        args = e.get("args") or {}
        k = Kernel(name=str(e.get("name", "")), category=str(e.get("cat")),
                   kind=classify(str(e.get("name", "")), str(e.get("cat"))),
                   ts_us=float(e["ts"]), dur_us=float(e.get("dur", 0.0)),
                   stream=args.get("stream", e.get("tid")), args=args)
        where: tuple[tuple[Any, Any], int] | None = None
        corr = args.get("correlation")
        if corr in launches:
            where = launches[corr]
        elif corr in flows:
            pid, tid, ts = flows[corr]
            flow_th = threads.get((pid, tid))
            if flow_th is not None:
                idx = flow_th.find(ts)
                where = ((pid, tid), idx) if idx >= 0 else None
        if where is None and args.get("External id") in external:
            where = external[args["External id"]]
        if where is not None:
            linked += 1
            _link(k, threads, where, seq_fwd)
        kernels.append(k)

    iters, rule = _iterations(kernels, threads, steps)
    return Parsed(kernels, _device_name(trace), iters, rule, linked)


def _link(k: Kernel, threads: dict[tuple[Any, Any], _Thread],
          where: tuple[tuple[Any, Any], int],
          seq_fwd: dict[Any, tuple[tuple[Any, Any], int]]) -> None:
    key, idx = where
    th = threads[key]
    chain_idx = th.chain_at(idx)
    chain = [th.events[i] for i in chain_idx]
    k.launch_ts_us = float(th.events[idx]["ts"])
    ops = [(i, e) for i, e in zip(chain_idx, chain, strict=True) if e.get("cat") == "cpu_op"]
    chosen = next(((i, e) for i, e in ops if _has_shapes(e.get("args") or {})), None)
    if chosen is None and ops:
        chosen = ops[0]
    if chosen is not None:
        i, op = chosen
        oargs = op.get("args") or {}
        k.op = str(op.get("name", ""))
        k.op_uid = id(op)
        k.dims = oargs.get("Input Dims")
        k.types = oargs.get("Input type")
        k.concrete = oargs.get("Concrete Inputs")
        k.op_args = oargs
    k.chain_args = [e.get("args") or {} for e in chain]
    regions = [e for e in chain if e.get("cat") in _REGION]
    outer = regions[-1] if regions else None
    module = _module_of(chain)
    if not module and outer is not None and outer["name"].startswith(_BACKWARD_PREFIX):
        seq = (outer.get("args") or {}).get("Sequence number")
        if seq in seq_fwd:
            fkey, fidx = seq_fwd[seq]
            fth = threads[fkey]
            fchain = [fth.events[i] for i in fth.chain_at(fidx)]
            fwd_module = _module_of(fchain) or fchain[-1]["name"]
            module = f"{fwd_module} (backward)"
    if outer is not None:
        name = str(outer["name"])
        k.region = name[len(_BACKWARD_PREFIX):] if name.startswith(_BACKWARD_PREFIX) else name
    k.module = module or k.region


def _device_name(trace: dict[str, Any]) -> str | None:
    props = trace.get("deviceProperties")
    if isinstance(props, list) and props and isinstance(props[0], dict):
        name = props[0].get("name")
        return str(name) if name else None
    return None


def _periodic(seq: list[str]) -> int:
    """Repeats of the shortest block ``seq`` is made of (1 when it is not a repeat)."""
    n = len(seq)
    for p in range(1, n // 2 + 1):
        if n % p == 0 and seq == seq[:p] * (n // p):
            return n // p
    return 1


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
            if i >= 0 and float(th.events[i]["ts"]) <= first.launch_ts_us:
                top = th.top_level()
                if top:
                    main = th
                    break
    if main is None:
        return 1, "no ProfilerStep annotations and no launching thread: 1 step"
    top = main.top_level()
    names = [str(main.events[i]["name"]) for i in top]
    n = _periodic(names)
    if n <= 1:
        return 1, "no ProfilerStep annotations and no repeated top-level block: 1 step"
    block = len(top) // n
    bounds = [float(main.events[top[j * block]]["ts"]) for j in range(n)]
    for k in kernels:
        t = k.launch_ts_us if k.launch_ts_us == k.launch_ts_us else k.ts_us
        k.iteration = max(0, bisect.bisect_right(bounds, t) - 1)
    per = [Counter(k.name for k in kernels if k.iteration == j) for j in range(n)]
    if any(c != per[0] for c in per[1:]):
        for k in kernels:
            k.iteration = 0
        return 1, (f"top-level ops repeat {n} times but the kernels differ between the "
                   "repeats: 1 step")
    return n, f"top-level op sequence repeats {n} times (no ProfilerStep annotations)"
