"""The fastest reader of a Kineto trace file: the C++ scanner (``_core.TraceScanner``) reads
the ``traceEvents`` bytes and fills a :class:`~roofline.trace._collect.Collector`'s columns
directly, applying the collector's rules event by event; no event is ever a Python object.

It is strict: JSON checked byte by byte (strings' UTF-8 and escapes, numbers, nesting), and
anything whose result it cannot reproduce exactly (a value of an unusual type where the
collector reads one, an escaped or duplicate key, an int outside int64, a number outside a
double, a lone surrogate, nesting deeper than 64, malformed or truncated text) raises
:class:`~roofline.trace._events.Fallback`: the caller then reads the file with the
``msgspec`` reader (``_events``), and that one falls back to the standard library's, each
with today's results and errors. The head and tail of the document (the top-level values
around ``traceEvents``) are read as ``_events`` reads them. What the scanner keeps as raw
JSON text (an op's recorded inputs, collective records, a GPU event's ``device`` and
``bytes`` when not a plain device id) is decoded here with ``msgspec``, each distinct text
once, exactly as the collector decodes the ``msgspec.Raw`` fields of the fast reader.
"""

from __future__ import annotations

from array import array
from pathlib import Path
from typing import Any

import msgspec
import numpy as np

from .. import _core
from ._collect import EMPTY, Collector, Columns, GpuColumns, Values, launch_dims
from ._events import UNSET, Args, Fallback, decode_raw, head, open_trace, read_on, tail

__all__ = ["scan"]

#: bytes scanned per call (larger buffers, once freed, would raise glibc's mmap threshold, and
#: later arrays would then stay in its heap: a higher peak)
_CHUNK = 256 << 10
_KEYS = ("Collective name", "Group size", "dtype", "In msg nelems", "Out msg nelems")


def scan(path: Path, meta: dict[str, Any], where: str) -> Collector:
    """The collected events of the trace file at ``path`` (its other top-level values to
    ``meta``). Raises :class:`~roofline.trace._events.Fallback` where the scanner cannot
    read it exactly (``meta`` may then hold part of the values)."""
    sc = _core.TraceScanner()
    try:
        with open_trace(path) as fh:
            buf, pos = head(fh, meta)
            if buf[pos:pos + 1] == b"]":  # an empty array
                pos += 1
            else:
                while True:
                    status, pos = sc.feed(buf, pos)
                    if status == 1:
                        break
                    if status == 2:
                        raise Fallback(f"the scanner: {sc.reason}")
                    buf, pos = read_on(fh, buf, pos, _CHUNK)
            tail(fh, buf, pos, meta)
    except Fallback:
        raise
    except Exception as exc:  # gzip/zlib/OS errors: the careful reader says what went wrong
        raise Fallback(str(exc)) from None
    del buf
    return _collector(sc.take(), where)


def _floats(raw: bytes) -> array[float]:
    out = array("d")
    out.frombytes(raw)
    return out


def _values(ints: array[int]) -> Values:
    out = Values()
    out.ints = ints
    return out


def _decoded(raw: bytes | None) -> Any:
    return UNSET if raw is None else decode_raw(msgspec.Raw(raw))


def _record(kind: int, corr: Any, raws: tuple[bytes | None, ...]) -> dict[str, Any]:
    """An ``arglist`` entry the scanner kept as raw text (kind 1: a CPU event's collective
    record, with its correlation first when ``corr`` is not None; kind 2: a GPU event's
    device, bytes and collective record), built as ``_collect`` builds it."""
    out: dict[str, Any] = {}
    if corr is not None:
        out["correlation"] = corr
    if kind == 2:
        if raws[0] is not None:
            out["device"] = _decoded(raws[0])
        grid, block = launch_dims(_decoded(raws[7])), launch_dims(_decoded(raws[8]))
        if grid is not None and block is not None:
            out["grid"], out["block"] = grid, block
        if raws[1] is not None:
            out["bytes"] = _decoded(raws[1])
    if raws[2] is not None:
        for k, r in zip(_KEYS, raws[2:7], strict=True):
            if r is not None:
                out[k] = _decoded(r)
    return out or EMPTY


def _collector(taken: tuple[Any, ...], where: str) -> Collector:
    """A collector holding what the scanner took (see ``TraceScanner.take``)."""
    threads, gpu, names, args, shapes, flows, steps, uid = taken
    col = Collector(where)
    col.names = names
    col.name_ids = {n: i for i, n in enumerate(names)}
    col.strings = {n: n for n in names}
    for kind, device, corr, raws, dims in args:
        if kind == 0:
            col.device_ids[device] = len(col.arglist)
            col.arglist.append(col._shared({"device": device}))
        elif kind == 3:  # a kernel's device and launch configuration (_collect._launch_args)
            grid, block = dims if dims is not None else (None, None)
            launch: dict[str, Any] = {"device": device}
            if dims is not None:
                launch["grid"], launch["block"] = grid, block
            col.launch_ids[(device, grid, block)] = len(col.arglist)
            col.arglist.append(col._shared(launch))
        else:
            col.arglist.append(_record(kind, corr, raws))
    remap = np.zeros(len(shapes) + 1, dtype=np.int64)  # the scanner's ids -> shape_list's
    for i, (d, t, c, s) in enumerate(shapes, start=1):
        a = Args(dims=UNSET if d is None else msgspec.Raw(d),
                 types=UNSET if t is None else msgspec.Raw(t),
                 concrete=UNSET if c is None else msgspec.Raw(c),
                 strides=UNSET if s is None else msgspec.Raw(s))
        remap[i] = col._shape_id(a)
    for pid, tid, ts, dur, cat, name, arg, uids, shape, ext, seq, cpos, cval in threads:
        cols = col.threads[(pid, tid)] = Columns()
        cols.ts, cols.dur, cols.cat, cols.name, cols.args, cols.uid = ts, dur, cat, name, arg, uids
        if len(shape):  # the scanner's ids of recorded inputs -> shape_list's
            cols.shape = array("q", remap[np.frombuffer(shape, dtype=np.int64)].tobytes())
        cols.ext, cols.seq = _values(ext), _values(seq)
        cols.corr = dict(zip(cpos.tolist(), cval.tolist(), strict=True))
    g = col.gpu = GpuColumns()
    g.ts, g.dur, g.name, g.cat, g.args = gpu[:5]
    g.stream, g.corr, g.ext = _values(gpu[5]), _values(gpu[6]), _values(gpu[7])
    for fid, pid, tid, ts in flows:
        col.flows[fid] = (pid, tid, ts)
    st = _floats(steps)
    col.steps = list(zip(st[0::2], st[1::2], strict=True))
    col.uid = uid
    return col
