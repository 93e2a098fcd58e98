"""A rich progress bar with ETA on stderr, or nothing (not a terminal, ``--quiet``)."""

from __future__ import annotations

from typing import Any

__all__ = ["Bar"]


class Bar:
    """Context manager: ``update(description)`` then ``advance()`` per case."""

    def __init__(self, total: int, enabled: bool) -> None:
        self.enabled = enabled and total > 0
        self._progress: Any = None
        self._task: Any = None
        self.total = total

    def __enter__(self) -> Bar:
        if self.enabled:
            import sys

            from rich.console import Console
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                Progress,
                TextColumn,
                TimeElapsedColumn,
                TimeRemainingColumn,
            )

            self._progress = Progress(
                TextColumn("{task.description:<32}"), BarColumn(), MofNCompleteColumn(),
                TimeElapsedColumn(), TextColumn("ETA"), TimeRemainingColumn(),
                console=Console(file=sys.stderr), transient=False)
            self._progress.__enter__()
            self._task = self._progress.add_task("bench", total=self.total)
        return self

    def update(self, description: str) -> None:
        """Name the case being measured."""
        if self._progress is not None:
            self._progress.update(self._task, description=description)

    def advance(self) -> None:
        """One case done."""
        if self._progress is not None:
            self._progress.advance(self._task)

    def __exit__(self, *exc: Any) -> None:
        if self._progress is not None:
            self._progress.__exit__(*exc)
