"""``rl.trace.explain``: a Kineto trace, or a list of (op, shapes, measured) records, priced
kernel by kernel with the public API."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .._errors import ArgumentTypeError, ArgumentValueError
from ..efficiency import Efficiency
from ..hardware import Hardware
from ..hardware import hardware as lookup_hardware
from ..ops.registry import Pricer
from ..ops.sustained import limit_columns, settled_clock, timeline_load
from ._load import stream
from ._parse import Kernel, Parsed, parse, paused_gc
from ._price import ELEMENT, LAUNCH_OPS, price_event, price_op
from ._report import TraceReport

__all__ = ["explain", "from_records"]


def _resolve(hardware: Any, device: str | None) -> Hardware:
    if hardware is not None:
        if isinstance(hardware, Hardware):
            return hardware
        if not isinstance(hardware, str):
            raise TypeError("trace.explain: hardware must be a Hardware or a name, got "
                            f"{type(hardware).__name__}")
        return lookup_hardware(hardware)
    if not device:
        raise ValueError("trace.explain: the trace names no device (no deviceProperties); "
                         "pass hardware= (CLI: --hardware NAME)")
    try:
        return lookup_hardware(device)
    except KeyError as exc:
        msg = exc.args[0] if exc.args else str(exc)
        raise ValueError(f"trace.explain: the trace's device {device!r} is not in the hardware "
                         f"database ({msg}); pass hardware= (CLI: --hardware NAME)") from None


#: Default load of the GPU's power limiter before a trace's first kernel: idle (see explain).
PRIOR_LOAD = 0.0

_OWN_SIZE = frozenset(("memset", "memcpy", "collective"))  # what price_event prices


def _shapes(dims: Any) -> str:
    if not isinstance(dims, list):
        return ""
    parts = []
    for d in dims:
        if isinstance(d, list) and d:
            if all(isinstance(x, list) for x in d):
                parts.append("[" + ", ".join("x".join(map(str, s)) for s in d) + "]")
            else:
                parts.append("x".join(map(str, d)))
    return ", ".join(parts)


def _roofline(e: Any) -> float:
    meta = e.meta or {}
    peak, bw = meta.get("peak_flops_per_s"), meta.get("mem_bytes_per_s")
    if bw is None:  # collectives: the transfer at the link's peak
        return float(e.memory_s)
    t = float(e.bytes) / bw
    if peak:
        t = max(t, float(e.flops) / peak)
    return float(t)


def _limit_clock(rows: list[dict[str, Any]], devices: list[Any],
                 clocked: list[tuple[int, Any, float]], clock: tuple[float, float, float],
                 prior_load: float) -> dict[int, float]:
    """Reprice, in place, the rows of GEMM and attention kernels (``clocked``: row index,
    estimate, share of its op) at the clock the power limiter's load sets at each one's
    midpoint, the load read from every kernel's busy time on its GPU
    (:func:`roofline.ops.sustained.timeline_load`,
    :func:`~roofline.ops.sustained.limit_columns`); returns each one's clock (fraction of
    boost) by row index."""
    start = np.array([r["start_s"] for r in rows])
    end = start + np.array([r["measured_s"] for r in rows])
    codes: dict[Any, int] = {}
    dev = np.array([codes.setdefault(d, len(codes)) for d in devices])
    idx = np.array([i for i, _, _ in clocked])
    cols = np.array([[float(e.time_s), float(e.compute_s), float(e.memory_s),
                      float(e.overhead_s)] for _, e, _ in clocked])
    load = np.zeros(len(idx))
    for d in np.unique(dev[idx]):
        mine = dev == d
        t0 = float(start[mine].min())
        on_d = dev[idx] == d
        at = idx[on_d]
        load[on_d] = timeline_load(start[mine] - t0, end[mine] - t0,
                                   0.5 * (start[at] + end[at]) - t0, prior_load)
    ran_at = limit_columns(cols, clock, load)
    clocks = {}
    for (i, _, share), t, x in zip(clocked, cols[:, 0], ran_at, strict=True):
        rows[i]["predicted_s"] = float(t) * share
        clocks[i] = float(x)
    return clocks


def _rows(parsed: Parsed, hw: Hardware, eff: Any, prior_load: float
          ) -> tuple[list[dict[str, Any]], list[str], dict[int, float]]:
    """The report's rows (one per kernel, in start order), notes and the GEMM / attention
    rows' clocks (by row index); empties
    ``parsed.kernels`` (each kernel is freed once its row is made)."""
    ks = parsed.kernels
    cache: dict[Any, tuple[Any, str]] = {}
    priced: list[tuple[Any, str] | None] = [None] * len(ks)
    # events with their own size first; the rest share their op instance's estimate
    by_op: dict[int, list[int]] = {}
    pricer = Pricer(hw, eff)
    for i, k in enumerate(ks):
        own = (price_event(k.kind, k.name, k.args, k.chain_args, hw, eff, pricer)
               if k.kind in _OWN_SIZE else None)
        if own is not None:
            priced[i] = own
        elif k.op_uid >= 0 and k.op:
            by_op.setdefault(k.op_uid, []).append(i)
        elif k.graph:
            priced[i] = (None, f"{k.kind} kernel replayed from a CUDA graph (cudaGraphLaunch "
                               "records no op or shapes; price an eager step of the program)")
        else:
            priced[i] = (None, f"{k.kind} kernel not linked to an op (no launch record)")
    shares = [1.0] * len(ks)
    for idx in by_op.values():
        k = ks[idx[0]]
        # the parser gives equal recorded inputs one shared set of objects: their ids are
        # the inputs' identity (the objects live as long as the kernels)
        key: tuple[Any, ...] = (k.op, id(k.dims), id(k.types), id(k.concrete), id(k.strides),
                                k.region)
        launch = None
        if k.op in LAUNCH_OPS and "grid" in k.args:
            launch = (k.name, k.args["grid"], k.args["block"])
            key += launch
        if key not in cache:
            cache[key] = price_op(k.op, k.dims, k.types, k.concrete, hw, eff, pricer,
                                  strides=k.strides, region=k.region, launch=launch)
        if len(idx) == 1:  # one kernel takes the whole estimate (share 1.0 either way)
            priced[idx[0]] = cache[key]
            continue
        total = math.fsum(ks[i].dur_us for i in idx)
        for i in idx:
            priced[i] = cache[key]
            shares[i] = ks[i].dur_us / total if total > 0 else 1.0 / len(idx)
    del by_op  # (a list per op instance: freed before the rows take their memory)
    t0 = ks[0].ts_us if ks else 0.0
    n = len(ks)
    graph = sum(1 for k in ks if k.graph)
    rows: list[dict[str, Any]] = []
    append = rows.append
    last_end: dict[Any, float] = {}
    seen_steps: set[int] = set()
    nan = math.nan
    # per estimate: time, roofline, flops, bytes, bound, and whether its clock is limited
    figures: dict[int, tuple[float, float, float, float, str, bool]] = {}
    labels: dict[tuple[str, int], tuple[str, str]] = {}
    devices: list[Any] = []
    on_device = devices.append
    clocked: list[tuple[int, Any, float]] = []  # GEMM / attention rows: index, estimate, share
    limited = pricer.clocked
    unpriced: tuple[Any, str] = (None, "")
    ks.reverse()  # each kernel is freed once its row is made (the rows take its memory)
    pop = ks.pop
    for i in range(n):
        k = pop()
        est, how = priced[i] or unpriced
        ts, dur = k.ts_us, k.dur_us
        device = k.args.get("device", 0)
        prev = last_end.get(device)
        if prev is None:  # (the same values as max(0, ts - prev) and max(prev, ts + dur))
            gap = 0.0
            last_end[device] = ts + dur
        else:
            gap = (ts - prev) * 1e-6 if ts > prev else 0.0
            if ts + dur > prev:
                last_end[device] = ts + dur
        on_device(device)
        step = k.iteration
        first = step not in seen_steps
        if first:
            seen_steps.add(step)
        if est is not None:
            f = figures.get(id(est))
            if f is None:
                f = figures[id(est)] = (float(est.time_s), _roofline(est), float(est.flops),
                                        float(est.bytes), str(est.bound), id(est) in limited)
            s = shares[i]
            if f[5]:
                clocked.append((i, est, s))
            if s == 1.0:  # the estimate's own floats (x * 1.0 is x): no new objects per row
                t_s, roof_s, flops, nbytes = f[0], f[1], f[2], f[3]
            else:
                t_s, roof_s, flops, nbytes = f[0] * s, f[1] * s, f[2] * s, f[3] * s
            bound = f[4]
            ok = True
        else:
            t_s = roof_s = flops = nbytes = nan
            bound = ""
            ok = False
        op = k.op
        if op:
            lab = labels.get((op, id(k.dims)))
            if lab is None:
                lab = labels[(op, id(k.dims))] = (_shapes(k.dims), _label(k))
        else:
            lab = (_shapes(k.dims), _label(k))
        append({
            "name": k.name, "kind": k.kind, "op": op, "shapes": lab[0],
            "op_label": lab[1], "op_uid": k.op_uid if k.op_uid >= 0 else -1 - i,
            "module": k.module or "(unlinked)", "region": k.region,
            "iteration": step, "stream": k.stream,
            "start_s": (ts - t0) * 1e-6, "measured_s": dur * 1e-6,
            "predicted_s": t_s, "roofline_s": roof_s, "flops": flops, "bytes": nbytes,
            "bound": bound, "priced": ok, "how": how, "gap_before_s": gap,
            "first_in_step": first,
        })
    clock = settled_clock(hw, eff) if clocked else None
    clocks = (_limit_clock(rows, devices, clocked, clock, prior_load)
              if clock is not None else {})
    notes = []
    if graph:
        notes.append(f"{graph} of {n} GPU events were replayed from CUDA graphs: the "
                     "profiler records no op or shapes for them, so they are unpriced; profile "
                     "one eager step of the same program to price them")
    if parsed.linked < n:
        notes.append(f"{n - parsed.linked} of {n} GPU events have no launch record "
                     "(unpriced unless they carry their own size)")
    return rows, notes, clocks


def _label(k: Kernel) -> str:
    if not k.op:
        return f"{k.kind}: {k.name[:60]}"
    shapes = _shapes(k.dims)
    return f"{k.op} {shapes}" if shapes else k.op


def explain(source: Any, hardware: Any = None, efficiency: Any = "default", *,
            iterations: int | None = None, prior_load: float = PRIOR_LOAD) -> TraceReport:
    """Explain a PyTorch profiler trace against the roofline, kernel by kernel.

    Parameters
    ----------
    source : str, os.PathLike, dict or torch.profiler.profile
        A Kineto chrome trace (``prof.export_chrome_trace``; ``.json`` or ``.json.gz``), the
        parsed dict, or a live profiler. Profile with ``record_shapes=True``: ops without
        shapes cannot be priced.
    hardware : Hardware or str, optional
        Accelerator to price on; default: the trace's ``deviceProperties`` name (an unknown
        device is a ValueError asking for ``hardware=``).
    efficiency : {"default", "peak", "constant", "torchao"} or Efficiency
        Efficiency model of every estimate.
    iterations : int, optional
        Steps in the trace; default: detected (``ProfilerStep#N`` annotations, else an exactly
        repeated top-level op sequence, else 1). When given, kernels are split into that many
        equal consecutive groups.
    prior_load : float, default 0.0
        Load of the GPU's power limiter before the trace's first kernel, in [0, 1]: the busy
        fraction of the 100 ms before it (0: idle, 1: running flat out). No trace record
        shows it. Default 0 (idle): the limiter forgets its load within ~0.2 s (measured,
        :data:`roofline.ops.sustained.LIMITER_WINDOW_S`) and a profiler's start usually
        follows a synchronize and its own set-up; the one trace whose GEMMs tell the clock
        (the shared H100 float8 linear, at the H200's measured boost figure) was taken from an
        idle GPU. Pass 1 for a window that directly follows steps of the same program with
        no pause (a profiler ``schedule``'s warm-up steps).

    Returns
    -------
    TraceReport
        ``measured_s`` / ``predicted_s`` per step, ``kernels()``, ``by_op()``,
        ``by_module()``, ``losses()``, ``to_dict()``, ``plot()``.

    Notes
    -----
    Linking: kernel → launching runtime call (correlation id, else the ``ac2g`` flow, else the
    External id) → innermost enclosing cpu_op with recorded shapes on that thread. Pricing:
    each op instance is priced once with its ``rl.*`` call (see ``roofline.ops.registry``);
    when it launched several kernels, its prediction (and FLOPs, bytes, roofline time) is split
    among them in proportion to their measured times, so op-level numbers are exact and
    kernel-level ones an attribution. memset, device-to-device memcpy and NCCL kernels are
    priced from their own recorded size. Clock: a GEMM or attention kernel runs at
    ``1 - (1 - f) L`` of the boost clock, ``f`` the GEMM terms' ``throttle_fraction`` (the
    power limiter's settled floor) and ``L`` the busy fraction of its GPU (all kernels, as
    the trace shows them; before the first kernel ``prior_load``) over the 100 ms before the
    kernel's midpoint (:mod:`roofline.ops.sustained`; ``_core.limiter_load``,
    ``_core.limited_gemm_time_s``): ``L = 1`` is the settled clock of a training step,
    ``L = 0`` the boost clock. Unpriced kernels (NaN) add to ``unpriced_s``, never to
    ``predicted_s``.

    Raises
    ------
    ValueError
        Nonexistent or unreadable file, not JSON, not a Kineto trace, no GPU events, an unknown
        device without ``hardware=``, a bad ``iterations``, ``prior_load`` outside [0, 1].
    TypeError
        ``prior_load`` not a real number.
    """
    prior_load = _check_prior_load(prior_load)
    trace = stream(source)
    where = trace.where
    if iterations is not None and (isinstance(iterations, bool) or not isinstance(
            iterations, int) or iterations < 1):
        raise ValueError(f"trace.explain: iterations must be a positive integer, got "
                         f"{iterations!r}")
    with paused_gc():  # the whole report: no cyclic-garbage passes over its many containers
        return _explain(trace, where, hardware, efficiency, iterations, prior_load)


def _check_prior_load(prior_load: Any) -> float:
    """``prior_load`` as a float, checked: a real number in [0, 1]."""
    if isinstance(prior_load, bool) or not isinstance(prior_load, (int, float)):
        raise ArgumentTypeError("trace.explain", "prior_load", "must be a number in [0, 1], "
                                f"got {type(prior_load).__name__} {prior_load!r}")
    if not 0.0 <= prior_load <= 1.0:  # NaN fails too
        raise ArgumentValueError("trace.explain", "prior_load", "must be in [0, 1] (0: the "
                                 "GPU idle before the trace, 1: running flat out), got "
                                 f"{prior_load!r}")
    return float(prior_load)


def _explain(trace: Any, where: str, hardware: Any, efficiency: Any,
             iterations: int | None, prior_load: float) -> TraceReport:
    parsed = parse(trace, where)
    if not parsed.kernels:
        raise ValueError(
            f"trace.explain: {where} has no GPU events (kernel, memcpy, memset): profile a "
            "CUDA run with activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]")
    hw = _resolve(hardware, parsed.device_name)
    if iterations is not None:
        n = len(parsed.kernels)
        if iterations > n:
            raise ValueError(f"trace.explain: iterations={iterations} exceeds the {n} GPU "
                             "events of the trace")
        for j, k in enumerate(parsed.kernels):
            k.iteration = j * iterations // n
        parsed.iterations, parsed.iteration_rule = iterations, "given"
    rows, notes, clocks = _rows(parsed, hw, efficiency, prior_load)
    eff = efficiency if isinstance(efficiency, str) else (
        "custom" if isinstance(efficiency, Efficiency) else str(efficiency))
    return TraceReport(source=where.rsplit("/", 1)[-1], hardware=hw.name, efficiency=eff,
                       iterations=parsed.iterations, iteration_rule=parsed.iteration_rule,
                       rows=rows, notes=notes, clocks=clocks)


_KINETO_TYPE = {dt: t for t, (dt, _) in reversed(list(ELEMENT.items())) if dt}


def synthetic_trace(records: list[dict[str, Any]], device: str | None = None) -> dict[str, Any]:
    """A minimal Kineto trace dict holding ``records`` (see :func:`from_records`)."""
    if not isinstance(records, list) or not records:
        raise ValueError("trace.from_records: records must be a non-empty list of dicts")
    events: list[dict[str, Any]] = []
    cpu_t, gpu_t = 0.0, 0.0
    for i, r in enumerate(records):
        if not isinstance(r, dict) or "op" not in r or "measured_s" not in r:
            raise ValueError(f"trace.from_records: record {i} must be a dict with 'op', "
                             f"'shapes' and 'measured_s', got {r!r}")
        m = r["measured_s"]
        if isinstance(m, bool) or not isinstance(m, (int, float)) or not 0 < m < math.inf:
            raise ValueError(f"trace.from_records: record {i} measured_s must be a positive "
                             f"finite number of seconds, got {m!r}")
        if not isinstance(r["op"], str) or not r["op"]:
            raise ValueError(f"trace.from_records: record {i} op must be an op name such as "
                             f"'aten::mm', got {r['op']!r}")
        for key in ("shapes", "types", "concrete"):
            if not isinstance(r.get(key, []), (list, tuple)):
                raise ValueError(f"trace.from_records: record {i} {key} must be a list, got "
                                 f"{r[key]!r:.80}")
        types = [_KINETO_TYPE.get(str(t), str(t)) for t in r.get("types", [])]
        args = {"External id": i + 1, "Input Dims": list(r.get("shapes", [])),
                "Input type": types, "Concrete Inputs": list(r.get("concrete", [""] * len(types)))}
        if r.get("module"):
            events.append({"ph": "X", "cat": "user_annotation", "pid": 1, "tid": 1,
                           "name": f"nn.Module: {r['module']}", "ts": cpu_t, "dur": 8.0,
                           "args": {}})
        events.append({"ph": "X", "cat": "cpu_op", "name": r["op"], "pid": 1, "tid": 1,
                       "ts": cpu_t + 1, "dur": 6.0, "args": args})
        events.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1,
                       "tid": 1, "ts": cpu_t + 2, "dur": 3.0,
                       "args": {"correlation": i + 1, "External id": i + 1}})
        events.append({"ph": "X", "cat": "kernel", "name": r.get("name", r["op"]), "pid": 0,
                       "tid": 7, "ts": gpu_t, "dur": float(m) * 1e6,
                       "args": {"correlation": i + 1, "External id": i + 1, "device": 0,
                                "stream": 7}})
        cpu_t += 10.0
        gpu_t += float(m) * 1e6
    trace: dict[str, Any] = {"traceEvents": events}
    if device:
        trace["deviceProperties"] = [{"id": 0, "name": device}]
    return trace


def from_records(records: list[dict[str, Any]], hardware: Any, efficiency: Any = "default"
                 ) -> TraceReport:
    """Explain measured ops given as records instead of a trace, the same way.

    Parameters
    ----------
    records : list of dict
        One per kernel: ``op`` (aten name, e.g. ``"aten::bmm"``), ``shapes`` (the op's
        ``Input Dims``), ``types`` (Kineto ``Input type`` strings or roofline dtype names such
        as ``"bf16"``, ``"fp8"``), ``measured_s``; optional ``name`` (kernel name),
        ``concrete`` (``Concrete Inputs``, e.g. is_causal), ``module``.
    hardware : Hardware or str
        Accelerator (required: records carry no device).
    """
    if hardware is None:
        raise ValueError("trace.from_records: hardware is required")
    rep = explain(synthetic_trace(records), hardware=hardware, efficiency=efficiency)
    rep.source = "<records>"
    return rep
