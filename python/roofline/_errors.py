"""The one error class for names roofline does not know (hardware, dtype, recipe, ...)."""

from __future__ import annotations

from collections.abc import Iterable

from .hardware import UnknownNameError  # defined there: hardware.py loads standalone

__all__ = ["UnknownNameError", "close_matches"]


def close_matches(word: str, choices: Iterable[str], n: int = 5,
                  cutoff: float = 0.5) -> list[str]:
    """The choices closest to ``word`` (difflib), best first."""
    import difflib

    return difflib.get_close_matches(word, list(choices), n=n, cutoff=cutoff)
