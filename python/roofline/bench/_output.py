"""The output file: refuse to overwrite, append or replace on request, one flushed line per row."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import IO, Any

__all__ = ["Output"]


class Output:
    """A JSON-lines file rows are written to as they are measured.

    Parameters
    ----------
    path : str or PathLike
        The file. An existing non-empty file is refused unless ``append`` (keep it, add
        rows) or ``force`` (replace it).
    append, force : bool
        What to do with an existing file; not both.

    Raises
    ------
    FileExistsError
        The file exists, is not empty, and neither ``append`` nor ``force`` is set.
    ValueError
        Both ``append`` and ``force``, or the path is a directory.
    """

    def __init__(self, path: str | os.PathLike[str], *, append: bool = False,
                 force: bool = False) -> None:
        if append and force:
            raise ValueError("bench: append and force exclude each other (keep or replace "
                             "the existing file?)")
        self.path = Path(path)
        if self.path.is_dir():
            raise ValueError(f"bench: out must be a file, got the directory {str(path)!r}")
        self.existing = 0
        exists = self.path.exists() and self.path.stat().st_size > 0
        if exists and not (append or force):
            raise FileExistsError(
                f"bench: {str(path)!r} exists and is not empty; pass append=True (--append) to "
                "add rows to it or force=True (--force) to replace it")
        self._needs_newline = False
        if exists and append:
            text = self.path.read_text(encoding="utf-8")
            self.existing = sum(1 for line in text.splitlines() if line.strip())
            self._needs_newline = not text.endswith("\n")
        self._mode = "a" if append else "w"
        self._file: IO[str] | None = None

    def write(self, row: dict[str, Any]) -> None:
        """Write one row as a line and flush it to disk (an interrupted run keeps it)."""
        if self._file is None:
            self._file = open(self.path, self._mode, encoding="utf-8")  # noqa: SIM115
            if self._needs_newline:
                self._file.write("\n")
        self._file.write(json.dumps(row, allow_nan=False) + "\n")
        self._file.flush()

    def close(self) -> None:
        """Close the file (creating it, empty, when no row was written and it was not there)."""
        if self._file is None and self._mode == "w" and not self.path.exists():
            self.path.touch()
        if self._file is not None:
            self._file.close()
            self._file = None
