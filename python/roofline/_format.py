"""Display helpers: SI prefixes appear only here and in the data loaders."""

from __future__ import annotations

import math

_PREFIXES = [
    (1e18, "E"), (1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"),
    (1.0, ""), (1e-3, "m"), (1e-6, "µ"), (1e-9, "n"), (1e-12, "p"),
]

#: Shown where a value is unknown (a database field that is ``None``).
MISSING = "—"


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


def si_or_missing(value: float | None, unit: str, digits: int = 4) -> str:
    """:func:`si`, or :data:`MISSING` for ``None``."""
    return MISSING if value is None else si(value, unit, digits)


def scaled(value: float | None, factor: float, digits: int = 6) -> str:
    """``value / factor`` in ``%g`` style (``scaled(9.895e14, 1e12) == "989.5"``), or
    :data:`MISSING` for ``None``. For table columns whose header carries the unit."""
    if value is None:
        return MISSING
    return f"{value / factor:.{digits}g}"


def ratio(value: float, decimals: int = 2) -> str:
    """A speedup or other ratio: ``ratio(1.3985) == "1.40x"``."""
    return f"{value:.{decimals}f}x"


def percent(fraction: float | None, decimals: int = 1) -> str:
    """A fraction as a percentage: ``percent(0.78) == "78.0 %"``, or :data:`MISSING`."""
    if fraction is None:
        return MISSING
    return f"{100.0 * fraction:.{decimals}f} %"
