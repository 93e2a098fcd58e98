"""The fast reader of a Kineto trace file: ``traceEvents`` decoded in chunks with ``msgspec``
into :class:`Event` structs that hold only the fields the parser reads.

A chunk is the bytes of whole events: it ends just after a ``}`` that is followed by ``,`` and
``{`` (or by ``]``); ``[`` + chunk + ``]`` is decoded as ``list[Event]`` in C, skipping every
field (and every argument) not declared here, so neither the document nor the events'
unused fields are ever Python objects. A cut inside a string or inside a nested object makes
the decode fail (its brackets or quotes do not balance), and an earlier cut is tried.

Anything unusual (a top-level layout without ``traceEvents`` near the start, an event that is
not an object, an ``args`` that is not an object, ``NaN`` literals, malformed or truncated
JSON, invalid UTF-8) raises :class:`Fallback`: the caller then reads the file with the
standard library's streaming reader (``_load``), which accepts or rejects it exactly as
before, with its clear errors.
"""

from __future__ import annotations

import gzip
import io
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec

__all__ = ["Args", "Event", "Fallback", "UNSET", "batches", "decode_raw", "head", "open_trace",
           "read_on", "tail"]

UNSET: Any = msgspec.UNSET
_CHUNK = 256 << 10  #: bytes decoded at a time
_HEAD = 64 << 20  #: ``traceEvents`` must start within this many bytes
_TRIES = 4  #: cuts tried per chunk before giving up
_MAX_EVENT = 64 << 20  #: more bytes than this without a whole event: give up


class Fallback(Exception):
    """The fast reader cannot read this file; use the standard-library reader."""


class Args(msgspec.Struct, gc=False):
    """The event arguments the parser reads (``UNSET``: absent)."""

    correlation: Any = UNSET
    external: Any = msgspec.field(default=UNSET, name="External id")
    device: Any = UNSET
    bytes: Any = UNSET
    stream: Any = UNSET
    dims: msgspec.Raw = msgspec.field(default=UNSET, name="Input Dims")
    types: msgspec.Raw = msgspec.field(default=UNSET, name="Input type")
    concrete: msgspec.Raw = msgspec.field(default=UNSET, name="Concrete Inputs")
    seq: Any = msgspec.field(default=UNSET, name="Sequence number")
    coll: Any = msgspec.field(default=UNSET, name="Collective name")
    group: Any = msgspec.field(default=UNSET, name="Group size")
    dtype: Any = UNSET
    in_n: Any = msgspec.field(default=UNSET, name="In msg nelems")
    out_n: Any = msgspec.field(default=UNSET, name="Out msg nelems")
    strides: msgspec.Raw = msgspec.field(default=UNSET, name="Input Strides")
    grid: Any = UNSET  # a kernel's launch grid and block (Kineto records them per kernel)
    block: Any = UNSET


class Event(msgspec.Struct, gc=False):
    """One trace event: its defaults are what ``dict.get`` gives for an absent key in the
    standard-library path (``ts``: ``UNSET``, absent)."""

    ph: Any = None
    cat: Any = None
    name: Any = ""
    pid: Any = None
    tid: Any = None
    ts: Any = UNSET
    dur: Any = 0.0
    id: Any = None
    args: Args | None = None


_EVENTS = msgspec.json.Decoder(list[Event])
_ANY = msgspec.json.Decoder()
_KEY = re.compile(rb'"traceEvents"\s*:\s*\[\s*')
_NEXT = re.compile(rb"\s*(?:,\s*(?={)|\])")  # after an event's "}": the next event or the end
_WS = re.compile(rb"\s*")


def decode_raw(raw: msgspec.Raw) -> Any:
    """The value of an undecoded field (raises :class:`Fallback` where ``msgspec`` cannot)."""
    try:
        return _ANY.decode(raw)
    except (msgspec.DecodeError, ValueError) as exc:
        raise Fallback(str(exc)) from None


def open_trace(path: Path) -> io.BufferedReader | gzip.GzipFile:
    raw = path.open("rb")
    if raw.read(2) == b"\x1f\x8b":
        raw.close()
        return gzip.open(path, "rb")
    raw.seek(0)
    return raw


def batches(path: Path, meta: dict[str, Any]) -> Iterator[list[Event]]:
    """The events of the file at ``path``, a chunk at a time; its other top-level values go to
    ``meta`` (complete once the iterator is exhausted). Raises :class:`Fallback`."""
    try:
        with open_trace(path) as fh:
            yield from _read(fh, meta)
    except Fallback:
        raise
    except Exception as exc:  # gzip/zlib/OS errors: the careful reader says what went wrong
        raise Fallback(str(exc)) from None


def _read(fh: io.BufferedReader | gzip.GzipFile, meta: dict[str, Any]
          ) -> Iterator[list[Event]]:
    """The events of ``fh`` in batches; the top-level values before and after them to
    ``meta``."""
    buf, pos = head(fh, meta)
    if buf[pos:pos + 1] == b"]":  # an empty array
        pos += 1
    else:
        while True:
            end = _cut(buf, pos)
            got = _decode(buf, pos, end) if end >= 0 else None
            if got is None:  # no whole event in the buffer yet: read on
                buf, pos = read_on(fh, buf, pos)
                continue
            events, stop = got
            yield events
            del events, got
            n = _NEXT.match(buf, stop)
            assert n is not None  # _cut checked it
            pos = n.end()
            if buf[pos - 1:pos] == b"]":
                break
    tail(fh, buf, pos, meta)


def head(fh: io.BufferedReader | gzip.GzipFile, meta: dict[str, Any]) -> tuple[bytes, int]:
    """The first bytes of ``fh`` and the position of the first non-blank byte after
    ``"traceEvents": [``; the top-level values before it to ``meta``. Raises
    :class:`Fallback`."""
    buf = fh.read(_CHUNK)
    m = _KEY.search(buf)
    while m is None and len(buf) < _HEAD:
        more = fh.read(len(buf))  # doubling: linear time however far the key is
        if not more:
            break
        seen = len(buf)
        buf += more
        m = _KEY.search(buf, max(0, seen - 64))  # (a key found too late fails the check)
    if m is None:
        raise Fallback("no traceEvents near the start")
    head = buf[:m.start()]
    try:  # the key is a top-level one exactly when the text before it closes as an object
        before = _ANY.decode(head + b'"traceEvents": 0}')
    except msgspec.DecodeError:
        raise Fallback("traceEvents is not a top-level key") from None
    if not isinstance(before, dict) or before.get("traceEvents") != 0:
        raise Fallback("traceEvents is not a top-level key")
    del before["traceEvents"]
    meta.update(before)
    pos = m.end()
    while len(buf) == pos:  # the first byte after "[" and blanks
        more = fh.read(_CHUNK)
        if not more:
            raise Fallback("the event array does not end")
        buf += more
        pos = _WS.match(buf, pos).end()  # type: ignore[union-attr]
    return buf, pos


def read_on(fh: io.BufferedReader | gzip.GzipFile, buf: bytes, pos: int,
            chunk: int = 0) -> tuple[bytes, int]:
    """``buf[pos:]`` (an event not yet whole) and the next bytes of ``fh`` (at least
    ``chunk``, else :data:`_CHUNK`, and doubling for a long event), from position 0. Raises
    :class:`Fallback` at the end of the file or after too many bytes without a whole event."""
    if len(buf) - pos > _MAX_EVENT:
        raise Fallback("no whole event in many bytes")
    more = fh.read(max(chunk or _CHUNK, len(buf) - pos))
    if not more:
        raise Fallback("the event array does not end")
    return buf[pos:] + more, 0


def tail(fh: io.BufferedReader | gzip.GzipFile, buf: bytes, pos: int,
         meta: dict[str, Any]) -> None:
    """The top-level values after the event array (which ends before ``buf[pos]``) to
    ``meta``. Raises :class:`Fallback`."""
    text = buf[pos:] + fh.read()
    t = _WS.match(text)
    rest = text[t.end() if t else 0:]
    if rest.startswith(b","):
        try:
            after = _ANY.decode(b"{" + rest[1:])
        except msgspec.DecodeError:
            raise Fallback("malformed text after traceEvents") from None
        if not isinstance(after, dict) or "traceEvents" in after:
            raise Fallback("traceEvents twice")
        meta.update(after)
    elif rest.strip() != b"}":
        raise Fallback("malformed text after traceEvents")


def _cut(buf: bytes, pos: int) -> int:
    """The end of the last event candidate (just after a ``}`` followed by the next event or
    the array's end) in ``buf[pos:]``, not nearer the end than the next event's first byte;
    -1 if none."""
    j = len(buf)
    while True:
        j = buf.rfind(b"}", pos, j)
        if j < 0:
            return -1
        if _NEXT.match(buf, j + 1) is not None:  # "," needs the next "{" in the buffer
            return j + 1


def _decode(buf: bytes, pos: int, end: int) -> tuple[list[Event], int] | None:
    """The events of ``buf[pos:end]`` (trying earlier cuts if that one falls inside an event)
    and where the decoded text ends; None when no cut is left (the first event goes on past
    the buffer)."""
    last: Exception = Fallback("no events")
    for _ in range(_TRIES):
        try:
            return _EVENTS.decode(b"[" + buf[pos:end] + b"]"), end
        except msgspec.ValidationError as exc:
            raise Fallback(str(exc)) from None
        except msgspec.DecodeError as exc:
            last = exc
        j = end - 1
        while True:
            j = buf.rfind(b"}", pos, j)
            if j < 0:
                return None
            n = _NEXT.match(buf, j + 1)
            if n is not None:
                end = j + 1
                break
    raise Fallback(str(last))
