"""Read a Kineto trace: a chrome-trace file (``.json`` / ``.json.gz``), a parsed dict, or a
live ``torch.profiler.profile`` object. Only the standard library is needed for files."""

from __future__ import annotations

import gzip
import json
import os
import tempfile
from pathlib import Path
from typing import Any

__all__ = ["load"]


def _read_file(path: Path) -> dict[str, Any]:
    if not path.exists():
        raise FileNotFoundError(f"trace.explain: source {str(path)!r} does not exist")
    if not path.is_file():
        raise ValueError(f"trace.explain: source {str(path)!r} is not a file")
    try:
        with path.open("rb") as fh:
            head = fh.read(2)
            fh.seek(0)
            raw = gzip.decompress(fh.read()) if head == b"\x1f\x8b" else fh.read()
    except (OSError, EOFError) as exc:  # truncated gzip stream, unreadable file
        raise ValueError(f"trace.explain: cannot read {str(path)!r}: {exc}") from None
    try:
        data = json.loads(raw)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(
            f"trace.explain: {str(path)!r} is not JSON (truncated or not a chrome trace): {exc}"
        ) from None
    return _check(data, repr(str(path)))


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


def _from_profiler(prof: Any) -> dict[str, Any]:
    fd, name = tempfile.mkstemp(suffix=".json", prefix="roofline_trace_")
    os.close(fd)
    try:
        try:
            prof.export_chrome_trace(name)
        except RuntimeError as exc:  # e.g. "Trace is already saved." (kineto exports once)
            raise ValueError(
                f"trace.explain: cannot export the profiler's trace ({exc}); a profiler exports "
                "its trace once: pass the file it was saved to"
            ) from None
        return _read_file(Path(name))
    finally:
        try:
            os.unlink(name)
        except OSError:
            pass


def load(source: Any) -> tuple[dict[str, Any], str]:
    """The trace as a dict and a short description of where it came from.

    Parameters
    ----------
    source : str, os.PathLike, dict or torch.profiler.profile
        A chrome-trace file (gzip detected by its magic bytes, not its name), an already parsed
        trace dict, or a profiler object (anything with ``export_chrome_trace``).

    Raises
    ------
    ValueError
        Nonexistent path, unreadable or truncated file, not JSON, not a Kineto trace.
    TypeError
        A source of another type.
    """
    if isinstance(source, (str, os.PathLike)):
        path = Path(source)
        return _read_file(path), str(path)
    if isinstance(source, dict):
        return _check(source, "the dict"), "<dict>"
    if hasattr(source, "export_chrome_trace"):
        return _from_profiler(source), f"<{type(source).__name__}>"
    raise TypeError(
        "trace.explain: source must be a path to a Kineto trace (.json or .json.gz), a parsed "
        f"trace dict or a torch.profiler.profile, got {type(source).__name__}"
    )
