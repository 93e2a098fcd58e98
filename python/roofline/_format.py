"""Display helpers: SI prefixes appear only here and in the data loaders."""

from __future__ import annotations

import math

_PREFIXES = [
    (1e18, "E"), (1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"),
    (1.0, ""), (1e-3, "m"), (1e-6, "µ"), (1e-9, "n"), (1e-12, "p"),
]


def si(value: float, unit: str, digits: int = 4) -> str:
    """Format ``value`` with an SI prefix: ``si(1.5e-5, "s") == "15 µs"``."""
    if value == 0 or not math.isfinite(value):
        return f"{value:g} {unit}"
    mag = abs(value)
    for factor, prefix in _PREFIXES:
        if mag >= factor * 0.9995:
            return f"{value / factor:.{digits}g} {prefix}{unit}"
    factor, prefix = _PREFIXES[-1]
    return f"{value / factor:.{digits}g} {prefix}{unit}"
