"""Filling a core terms struct from a dict of values."""

from __future__ import annotations

from typing import Any

__all__ = ["fill"]


def fill(terms: Any, values: dict[str, Any]) -> Any:
    """Set each ``values`` entry on the core terms struct ``terms`` (as a float); return it."""
    for key, value in values.items():
        setattr(terms, key, float(value))
    return terms
