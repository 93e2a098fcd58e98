"""Shape lists per device and suite (CPU sizes are small: CI runs ``--quick`` on 2 cores)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["by_suite"]

Shapes = Callable[[str, str], list[dict[str, Any]]]


def by_suite(cpu_quick: list[dict[str, Any]], cpu_full: list[dict[str, Any]],
             gpu_quick: list[dict[str, Any]], gpu_full: list[dict[str, Any]]) -> Shapes:
    """A shapes function choosing one of four lists by (device, suite)."""
    table = {("cpu", "quick"): cpu_quick, ("cpu", "full"): cpu_full,
             ("cuda", "quick"): gpu_quick, ("cuda", "full"): gpu_full}

    def shapes(device: str, suite: str) -> list[dict[str, Any]]:
        return [dict(a) for a in table[(device, suite)]]

    return shapes
