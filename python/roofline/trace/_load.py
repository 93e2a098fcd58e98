"""Read a Kineto trace: a chrome-trace file (``.json`` / ``.json.gz``), a parsed dict, or a
live ``torch.profiler.profile`` object.

Files are streamed, three ways: ``TraceStream.scan`` collects the events with the C++
scanner (``_scan``, fastest, strict); where it cannot read a file exactly,
``TraceStream.batches`` decodes the ``traceEvents`` array in chunks with ``msgspec`` into
structs of the used fields only (``_events``, fast); when that reader cannot read a file it
raises ``Fallback``, and ``TraceStream.events`` decodes it one event at a time with the
standard library's C JSON scanner (``json.JSONDecoder.raw_decode``), which accepts what the
standard library accepts and names what is wrong. None holds the whole document in memory;
the other top-level values (``deviceProperties``, ...) are decoded whole.
"""

from __future__ import annotations

import codecs
import gzip
import json
import os
import re
import tempfile
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import IO, Any

from ._collect import Collector
from ._events import Event, Fallback, batches
from ._scan import scan

__all__ = ["TraceStream", "load", "stream"]

_CHUNK = 1 << 20  #: bytes read at a time
_MAX_VALUE = 1 << 28  #: a single JSON value longer than this (characters) is an error
_NUMBER = 1024  #: no number is longer: a value ending nearer the buffer's end is read again
_WS = re.compile(r"[ \t\n\r]*")
_SEP = re.compile(r"[ \t\n\r]*,[ \t\n\r]*")
_DECODE = json.JSONDecoder().raw_decode


@dataclass
class TraceStream:
    """The events of a trace, one at a time, and its other top-level values.

    ``meta`` is complete only once ``events`` (or ``batches``) has been exhausted (a file may
    put ``deviceProperties`` after ``traceEvents``). ``batches``, for files: the same events
    as :class:`~roofline.trace._events.Event` structs, a chunk at a time; it raises
    ``Fallback`` (before or while yielding) for a file only ``events`` reads. ``scan``, for
    files: the events collected by the C++ scanner (``scan(where)``), or None for a file only
    ``batches`` or ``events`` reads (``meta`` then cleared).
    """

    where: str
    events: Iterator[Any]
    meta: dict[str, Any] = field(default_factory=dict)
    batches: Iterator[list[Event]] | None = None
    scan: Callable[[str], Collector | None] | None = None


class _Bad(Exception):
    """Not JSON (message: why)."""


class _Reader:
    """A JSON text read in chunks: ``buf[pos:]`` is what has not been consumed yet."""

    def __init__(self, fh: IO[bytes]) -> None:
        self.fh = fh
        self.dec = codecs.getincrementaldecoder("utf-8")()
        self.buf = ""
        self.pos = 0
        self.eof = False
        self.more()

    def more(self) -> bool:
        """Append the next chunk (dropping what was consumed); False at the end of the file."""
        if self.eof:
            return False
        raw = self.fh.read(_CHUNK)
        self.eof = not raw
        self.buf = self.buf[self.pos:] + self.dec.decode(raw, final=self.eof)
        self.pos = 0
        return True

    def peek(self) -> str:
        """The next non-blank character ('' at the end of the text)."""
        while True:
            self.pos = _WS.match(self.buf, self.pos).end()  # type: ignore[union-attr]
            if self.pos < len(self.buf):
                return self.buf[self.pos]
            if not self.more():
                return ""

    def expect(self, chars: str) -> str:
        c = self.peek()
        if not c or c not in chars:
            raise _Bad(f"expected one of {chars!r} at character {self.pos}, got {c!r}"
                       if c else "unexpected end of the text")
        self.pos += 1
        return c

    def value(self) -> Any:
        """Decode the next JSON value, reading more of the file while it is incomplete."""
        self.peek()
        while True:
            try:
                obj, end = _DECODE(self.buf, self.pos)
            except json.JSONDecodeError as exc:
                if len(self.buf) - self.pos > _MAX_VALUE or not self.more():
                    raise _Bad(str(exc)) from None
                continue
            if self._whole(self.buf, end) or not self.more():
                self.pos = end
                return obj

    def _whole(self, buf: str, end: int) -> bool:
        """Whether the value decoded up to ``end`` is surely complete: it closes (an object,
        array or string), or the text goes on well past it (a number may continue in the
        next chunk), or the file has ended."""
        return self.eof or (end < len(buf) and buf[end - 1] in '}]"') or \
            end + _NUMBER < len(buf)

    def events(self, meta: dict[str, Any]) -> Iterator[Any]:
        """The elements of ``traceEvents`` (or of a bare top-level array); other top-level
        values go to ``meta``."""
        c = self.expect("{[")
        if c == "[":
            yield from self.array()
        else:
            seen = False
            if self.peek() == "}":
                self.pos += 1
            else:
                while True:
                    key = self.value()
                    if not isinstance(key, str):
                        raise _Bad(f"an object key must be a string, got {key!r}")
                    self.expect(":")
                    if key == "traceEvents" and self.peek() == "[":
                        self.pos += 1
                        seen = True
                        yield from self.array()
                    else:
                        meta[key] = self.value()
                    if self.expect(",}") == "}":
                        break
            if not seen:
                meta["_not_events"] = True
        if self.peek():
            raise _Bad(f"extra data at character {self.pos}")

    def array(self) -> Iterator[Any]:
        if self.peek() == "]":
            self.pos += 1
            return
        decode, sep = _DECODE, _SEP.match
        buf, pos = self.buf, self.pos
        while True:
            # fast path: a whole value, then "," and the next value, inside the buffer
            try:
                obj, end = decode(buf, pos)
                whole = self._whole(buf, end)
            except json.JSONDecodeError:
                whole = False
            if not whole:  # at the buffer's end, blanks first, or not JSON: the careful way
                self.pos = pos
                obj = self.value()
                buf, end = self.buf, self.pos
            yield obj
            m = sep(buf, end)
            if m is not None and m.end() < len(buf):
                pos = m.end()
                continue
            self.pos = end
            if self.expect(",]") == "]":
                return
            buf, pos = self.buf, self.pos


def _stream_file(path: Path, meta: dict[str, Any], cleanup: bool = False) -> Iterator[Any]:
    name = repr(str(path))
    try:
        try:
            with path.open("rb") as raw:
                gz = raw.read(2) == b"\x1f\x8b"
                raw.seek(0)
                fh: Any = gzip.GzipFile(fileobj=raw, mode="rb") if gz else raw
                yield from _Reader(fh).events(meta)
        except (OSError, EOFError, zlib.error) as exc:  # truncated gzip stream, unreadable
            raise ValueError(f"trace.explain: cannot read {name}: {exc}") from None
        except (_Bad, UnicodeDecodeError) as exc:
            raise ValueError(f"trace.explain: {name} is not JSON (truncated or not a chrome "
                             f"trace): {exc}") from None
        if meta.pop("_not_events", False):
            _check(meta, name)
    finally:
        if cleanup:
            try:
                os.unlink(path)
            except OSError:
                pass


def _fast_file(path: Path, meta: dict[str, Any], cleanup: bool = False
               ) -> Iterator[list[Event]]:
    """``batches`` of the file; a profiler's exported file is deleted once read (on a
    ``Fallback`` the standard-library reader reads it, and deletes it)."""
    fell = False
    try:
        yield from batches(path, meta)
    except Fallback:
        fell = True
        meta.clear()
        raise
    finally:
        if cleanup and not fell:
            try:
                os.unlink(path)
            except OSError:
                pass


def _scan_file(path: Path, meta: dict[str, Any], cleanup: bool, where: str
               ) -> Collector | None:
    """The events of the file collected by the C++ scanner, or None (``meta`` cleared) when
    it cannot read the file exactly; a profiler's exported file is deleted once read."""
    try:
        col = scan(path, meta, where)
    except Fallback:
        meta.clear()
        return None
    if cleanup:
        try:
            os.unlink(path)
        except OSError:
            pass
    return col


def _check_path(path: Path) -> None:
    if not path.exists():
        raise FileNotFoundError(f"trace.explain: source {str(path)!r} does not exist")
    if not path.is_file():
        raise ValueError(f"trace.explain: source {str(path)!r} is not a file")


def _check(data: Any, what: str) -> dict[str, Any]:
    """A Kineto trace is a JSON object with a ``traceEvents`` list."""
    if isinstance(data, list):  # the bare event-array form of the chrome trace format
        data = {"traceEvents": data}
    if not isinstance(data, dict) or not isinstance(data.get("traceEvents"), list):
        kind = type(data).__name__
        raise ValueError(
            f"trace.explain: {what} is not a Kineto trace (expected a JSON object with a "
            f"'traceEvents' list, got a {kind}"
            + (f" with keys {sorted(data)[:6]}" if isinstance(data, dict) else "") + ")"
        )
    return data


def _export(prof: Any) -> Path:
    fd, name = tempfile.mkstemp(suffix=".json", prefix="roofline_trace_")
    os.close(fd)
    try:
        prof.export_chrome_trace(name)
    except RuntimeError as exc:  # e.g. "Trace is already saved." (kineto exports once)
        os.unlink(name)
        raise ValueError(
            f"trace.explain: cannot export the profiler's trace ({exc}); a profiler exports "
            "its trace once: pass the file it was saved to"
        ) from None
    return Path(name)


def stream(source: Any) -> TraceStream:
    """The trace's events as a stream (see :class:`TraceStream`) and where they came from.

    Parameters
    ----------
    source : str, os.PathLike, dict or torch.profiler.profile
        A chrome-trace file (gzip detected by its magic bytes, not its name), an already parsed
        trace dict, or a profiler object (anything with ``export_chrome_trace``).

    Raises
    ------
    ValueError
        Nonexistent path, unreadable or truncated file, not JSON, not a Kineto trace (the
        last three while the events are read).
    TypeError
        A source of another type.
    """
    if isinstance(source, (str, os.PathLike)):
        path = Path(source)
        _check_path(path)
        meta: dict[str, Any] = {}
        return TraceStream(str(path), _stream_file(path, meta), meta, _fast_file(path, meta),
                           partial(_scan_file, path, meta, False))
    if isinstance(source, dict):
        data = _check(source, "the dict")
        return TraceStream("<dict>", iter(data["traceEvents"]),
                           {k: v for k, v in data.items() if k != "traceEvents"})
    if hasattr(source, "export_chrome_trace"):
        path = _export(source)
        meta = {}
        return TraceStream(f"<{type(source).__name__}>",
                           _stream_file(path, meta, cleanup=True), meta,
                           _fast_file(path, meta, cleanup=True),
                           partial(_scan_file, path, meta, True))
    raise TypeError(
        "trace.explain: source must be a path to a Kineto trace (.json or .json.gz), a parsed "
        f"trace dict or a torch.profiler.profile, got {type(source).__name__}"
    )


def load(source: Any) -> tuple[dict[str, Any], str]:
    """The whole trace as a dict and a short description of where it came from (for tools
    that need every event at once; :func:`stream` reads large files in constant memory).

    Parameters and errors as :func:`stream`.
    """
    s = stream(source)
    events = list(s.events)
    return {**s.meta, "traceEvents": events}, s.where
