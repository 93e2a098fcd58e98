"""Keep, event by event, only what linking and pricing read from a trace's events.

Two inputs, one result: event dicts (a parsed trace, or the standard library's streaming
reader) and :class:`~roofline.trace._events.Event` structs (the fast ``msgspec`` reader). Both
give the same tuples: a CPU event ``(ts, -dur, end, cat, name, args, uid)`` per thread (a
launch call with a correlation id: ``(..., uid, correlation)``), a GPU event
``(ts, dur, name, cat, stream, args, correlation, External id)`` (None: absent), where
``args`` holds only the kept arguments (:data:`KEEP_GPU`, :data:`KEEP_OP`,
:data:`KEEP_LAUNCH`, and a collective record); equal names are one string object and equal
recorded inputs one set of objects.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ._events import UNSET, Args, Event, decode_raw

__all__ = ["EMPTY", "Collector", "CPU", "GPU", "LAUNCH"]

GPU = frozenset(("kernel", "gpu_memcpy", "gpu_memset"))
CPU = frozenset(("cpu_op", "user_annotation", "python_function", "cuda_runtime",
                 "cuda_driver"))
LAUNCH = frozenset(("cuda_runtime", "cuda_driver"))
_INF = float("inf")
EMPTY: dict[str, Any] = {}  # shared by every event whose arguments the parser does not use

# The only event arguments read after parsing (everything else is dropped while streaming)
_COLLECTIVE = ("Collective name", "Group size", "dtype", "In msg nelems", "Out msg nelems")
KEEP_GPU = ("device", "bytes")  # correlation and External id: slots of the GPU tuple
KEEP_OP = ("Input Dims", "Input type", "Concrete Inputs", "External id", "Sequence number")
KEEP_LAUNCH = ("correlation",)
_SHAPES = ("Input Dims", "Input type", "Concrete Inputs")


def _slim(args: Any, keys: tuple[str, ...]) -> dict[str, Any]:
    """The entries of ``args`` named in ``keys``, and its collective record if it has one."""
    if type(args) is not dict or not args:
        return EMPTY
    out = {k: args[k] for k in keys if k in args}
    if "Collective name" in args:
        out.update({k: args[k] for k in _COLLECTIVE if k in args})
    return out or EMPTY


def _collective(a: Args, out: dict[str, Any]) -> None:
    for k, v in (("Collective name", a.coll), ("Group size", a.group), ("dtype", a.dtype),
                 ("In msg nelems", a.in_n), ("Out msg nelems", a.out_n)):
        if v is not UNSET:
            out[k] = v


def _gpu_args(a: Args) -> dict[str, Any]:
    """``_slim(args, KEEP_GPU)`` of a struct."""
    out = {}
    if a.device is not UNSET:
        out["device"] = a.device
    if a.bytes is not UNSET:
        out["bytes"] = a.bytes
    if a.coll is not UNSET:
        _collective(a, out)
    return out or EMPTY


def _cpu_args(a: Args | None, cat: str) -> dict[str, Any]:
    """``_slim`` of a struct for a launch call (its correlation) or a region (nothing) of
    category ``cat``; both with the collective record."""
    if a is None:
        return EMPTY
    out = {}
    if cat in LAUNCH and a.correlation is not UNSET:
        out["correlation"] = a.correlation
    if a.coll is not UNSET:
        _collective(a, out)
    return out or EMPTY


def _times(e: dict[str, Any], where: str) -> tuple[float, float]:
    """An event's start and duration (µs), checked: finite, duration >= 0."""
    ts, dur = e["ts"], e.get("dur", 0.0)
    try:
        t, d = float(ts), float(dur)
    except (TypeError, ValueError):
        t = d = float("nan")
    if not (0.0 <= d < _INF) or t - t != 0.0 or isinstance(ts, bool) or isinstance(dur, bool):
        what = "GPU event" if e.get("cat") in GPU else "event"
        raise ValueError(
            f"trace.explain: {where}: the {what} {str(e.get('name', ''))[:80]!r} "
            f"(cat {e.get('cat')!r}, ts {ts!r}) has dur {dur!r}: a start and a duration must "
            "be finite numbers and the duration >= 0 (a corrupt or hand-edited trace)")
    return t, d


def _struct_times(e: Event, where: str) -> tuple[float, float]:
    return _times({"ts": e.ts, "dur": e.dur, "cat": e.cat, "name": e.name}, where)


class Collector:
    """Keeps, event by event, only what linking and pricing use."""

    def __init__(self, where: str) -> None:
        self.where = where
        self.threads: dict[tuple[Any, Any], list[tuple[Any, ...]]] = {}
        self.gpu: list[tuple[Any, ...]] = []
        self.devices: dict[int, dict[str, Any]] = {}  # one {"device": d} for all such kernels
        self.flows: dict[Any, tuple[Any, Any, float]] = {}
        self.steps: list[tuple[float, float]] = []
        self.strings: dict[str, str] = {}  # one object per distinct name (they repeat)
        self.shapes: dict[str, tuple[Any, Any, Any]] = {}  # one object per distinct inputs
        self.raw_shapes: dict[tuple[bytes | None, ...], tuple[Any, ...]] = {}
        self.uid = 0
        self.launched: set[Any] = set()  # correlations of launch calls: their flows go unused

    def _cpu(self, key: tuple[Any, Any], ts: Any, dur: Any, cat: str, name: Any,
             args: dict[str, Any]) -> None:
        evs = self.threads.get(key)
        if evs is None:
            evs = self.threads[key] = []
        evs.append((ts, -dur, ts + dur, cat, name, args, self.uid))
        self.uid += 1
        if cat == "user_annotation" and str(name).startswith("ProfilerStep#"):
            self.steps.append((ts, ts + dur))

    def _shared(self, args: dict[str, Any]) -> dict[str, Any]:
        """``args``, or the one equal ``{"device": d}`` dict all such kernels share (nothing
        changes a kernel's arguments)."""
        if len(args) == 1 and type(args.get("device")) is int:
            return self.devices.setdefault(args["device"], args)
        return args

    def _launch(self, key: tuple[Any, Any], ts: Any, dur: Any, cat: str, name: Any,
                args: dict[str, Any], corr: Any) -> None:
        """A launch call with a correlation id: the id in an eighth slot, its arguments
        dropped unless they hold a collective record (the id is all the linker reads)."""
        self.launched.add(corr)
        evs = self.threads.get(key)
        if evs is None:
            evs = self.threads[key] = []
        evs.append((ts, -dur, ts + dur, cat, name,
                    args if "Collective name" in args else EMPTY, self.uid, corr))
        self.uid += 1

    def add_all(self, events: Iterable[Any]) -> None:
        """Collect event dicts (anything else is skipped)."""
        strings, gpu, where = self.strings, self.gpu, self.where
        for e in events:
            if type(e) is not dict:
                if not isinstance(e, dict):
                    continue
            ph = e.get("ph")
            if ph == "X":
                if "ts" not in e:
                    continue
                cat = e.get("cat")
                if cat in GPU:
                    ts, dur = e["ts"], e.get("dur", 0.0)
                    if not (ts.__class__ is float and dur.__class__ is float and
                            0.0 <= dur < _INF and ts - ts == 0.0):
                        ts, dur = _times(e, where)
                    args = e.get("args")
                    args = args if isinstance(args, dict) else EMPTY
                    name = e.get("name", "")
                    name = strings.setdefault(name, name) if type(name) is str else str(name)
                    gpu.append((ts, dur, name, cat, args.get("stream", e.get("tid")),
                                self._shared(_slim(args, KEEP_GPU)), args.get("correlation"),
                                args.get("External id")))
                elif cat in CPU:
                    ts, dur = e["ts"], e.get("dur", 0.0)
                    if not (ts.__class__ is float and dur.__class__ is float and
                            0.0 <= dur < _INF and ts - ts == 0.0):
                        ts, dur = _times(e, where)
                    name = e.get("name", "")
                    if type(name) is str:
                        name = strings.setdefault(name, name)
                    args = e.get("args")
                    if cat == "cpu_op":
                        args = self._op_args(_slim(args, KEEP_OP))
                    elif cat in LAUNCH:
                        args = _slim(args, KEEP_LAUNCH)
                        if "correlation" in args:
                            self._launch((e.get("pid"), e.get("tid")), ts, dur, cat, name,
                                         args, args["correlation"])
                            continue
                    else:
                        args = _slim(args, ())
                    self._cpu((e.get("pid"), e.get("tid")), ts, dur, cat, name, args)
            elif ph == "s" and e.get("cat") == "ac2g" and e.get("id") not in self.launched:
                self.flows[e.get("id")] = (e.get("pid"), e.get("tid"),
                                           float(e.get("ts", 0.0)))

    def add_structs(self, batches: Iterable[list[Event]]) -> None:
        """Collect :class:`Event` structs, a batch at a time (the same result as
        :meth:`add_all` of the same events as dicts)."""
        strings, gpu, where, threads = self.strings, self.gpu, self.where, self.threads
        launched, flows, op_struct = self.launched, self.flows, self._op_struct
        devices = self.devices
        uid = self.uid
        lpid = ltid = levs = None  # the last thread's key and events (events come in runs)
        for events in batches:
            for e in events:
                ph = e.ph
                if ph == "X":
                    ts = e.ts
                    if ts is UNSET:
                        continue
                    cat = e.cat
                    dur = e.dur
                    if type(cat) is str:  # one object per category, not one per event
                        cat = strings.setdefault(cat, cat)
                    if cat in GPU:
                        if not (ts.__class__ is float and dur.__class__ is float and
                                0.0 <= dur < _INF and ts - ts == 0.0):
                            ts, dur = _struct_times(e, where)
                        name = e.name
                        name = strings.setdefault(name, name) if type(name) is str \
                            else str(name)
                        a = e.args
                        if a is None:
                            gpu.append((ts, dur, name, cat, e.tid, EMPTY, None, None))
                            continue
                        d = a.device
                        if a.bytes is UNSET and a.coll is UNSET and type(d) is int:
                            args = devices.get(d) or self._shared({"device": d})
                        else:
                            args = self._shared(_gpu_args(a))
                        corr, ext = a.correlation, a.external
                        gpu.append((ts, dur, name, cat, e.tid if a.stream is UNSET else a.stream,
                                    args, None if corr is UNSET else corr,
                                    None if ext is UNSET else ext))
                    elif cat in CPU:
                        if not (ts.__class__ is float and dur.__class__ is float and
                                0.0 <= dur < _INF and ts - ts == 0.0):
                            ts, dur = _struct_times(e, where)
                        name = e.name
                        if type(name) is str:
                            name = strings.setdefault(name, name)
                        pid, tid = e.pid, e.tid
                        if levs is None or pid != lpid or tid != ltid:
                            key = (pid, tid)
                            levs = threads.get(key)
                            if levs is None:
                                levs = threads[key] = []
                            lpid, ltid = pid, tid
                        a = e.args
                        if cat == "cpu_op":
                            levs.append((ts, -dur, ts + dur, cat, name, op_struct(a), uid))
                        elif cat in LAUNCH and a is not None and a.correlation is not UNSET:
                            corr = a.correlation  # kept in the tuple, not in a dict
                            launched.add(corr)
                            args = _cpu_args(a, cat) if a.coll is not UNSET else EMPTY
                            levs.append((ts, -dur, ts + dur, cat, name, args, uid, corr))
                        else:
                            levs.append((ts, -dur, ts + dur, cat, name, _cpu_args(a, cat),
                                         uid))
                            if cat == "user_annotation" and \
                                    str(name).startswith("ProfilerStep#"):
                                self.steps.append((ts, ts + dur))
                        uid += 1
                elif ph == "s" and e.cat == "ac2g" and e.id not in launched:
                    flows[e.id] = (e.pid, e.tid, float(0.0 if e.ts is UNSET else e.ts))
            self.uid = uid

    def _op_struct(self, a: Args | None) -> dict[str, Any]:
        """``_op_args(_slim(args, KEEP_OP))`` of a struct; its recorded inputs arrive as
        undecoded JSON (``msgspec.Raw``), decoded once per distinct text."""
        if a is None:
            return EMPTY
        out: dict[str, Any] = {}
        d, t, c = raw = (a.dims, a.types, a.concrete)
        if d is not UNSET:
            if t is not UNSET and c is not UNSET:  # Kineto records all three
                key: tuple[bytes | None, ...] = (bytes(d), bytes(t), bytes(c))
            else:
                key = tuple(None if r is UNSET else bytes(r) for r in raw)
            shared = self.raw_shapes.get(key)
            if shared is None:
                got = (None if d is UNSET else decode_raw(d),
                       None if t is UNSET else decode_raw(t),
                       None if c is UNSET else decode_raw(c))
                shared = self.raw_shapes[key] = self.shapes.setdefault(repr(got), got)
            out["Input Dims"] = shared[0]
            if t is not UNSET:
                out["Input type"] = shared[1]
            if c is not UNSET:
                out["Concrete Inputs"] = shared[2]
        else:
            for k, r in zip(_SHAPES, raw, strict=True):
                if r is not UNSET:
                    out[k] = decode_raw(r)
        if a.external is not UNSET:
            out["External id"] = a.external
        if a.seq is not UNSET:
            out["Sequence number"] = a.seq
        if a.coll is not UNSET:
            _collective(a, out)
        return out or EMPTY

    def _op_args(self, out: dict[str, Any]) -> dict[str, Any]:
        if "Input Dims" in out:
            # identical recorded inputs (every step repeats them) share one set of objects
            got = (out.get("Input Dims"), out.get("Input type"), out.get("Concrete Inputs"))
            shared = self.shapes.setdefault(repr(got), got)
            for k, v in zip(_SHAPES, shared, strict=True):
                if k in out:
                    out[k] = v
        return out
