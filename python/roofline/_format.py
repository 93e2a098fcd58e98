"""Display helpers: SI prefixes appear only here and in the data loaders."""

from __future__ import annotations

import math

_PREFIXES = {
    18: "E", 15: "P", 12: "T", 9: "G", 6: "M", 3: "k", 0: "", -3: "m", -6: "µ", -9: "n",
    -12: "p",
}

#: Largest prefix exponent per unit: a time is never shown in ks or Ms (``3153 s``).
_MAX_EXPONENT = {"s": 0}

#: Seconds below this many are written out in full (``3153 s``); above, scientific.
_MAX_PLAIN_SECONDS = 1e6

#: Shown where a value is unknown (a database field that is ``None``).
MISSING = "—"


def si(value: float, unit: str, digits: int = 4) -> str:
    """Format ``value`` with an SI prefix: ``si(1.5e-5, "s") == "15 µs"``.

    Prefixes run from p (1e-12) to E (1e18), except for seconds, which stop at the unit
    (``si(3153, "s") == "3153 s"``). The prefix is chosen after rounding to ``digits``
    significant digits, so ``si(999.96, "B") == "1 kB"`` and ``si(0.99996, "s") == "1 s"``.
    Values beyond the prefixes are written in scientific notation (``1e+30 FLOP/s``,
    ``1e-15 s``); zero, infinities and NaN without a prefix (``0 s``, ``inf s``, ``nan s``).
    """
    value = float(value)
    if value == 0 or not math.isfinite(value):
        return f"{value:g} {unit}"
    top = _MAX_EXPONENT.get(unit, 18)
    mag = abs(value)
    exp = min(max(3 * math.floor(math.log10(mag) / 3), -12), top)
    mantissa = float(f"{mag / 10.0**exp:.{digits}g}")
    if mantissa >= 1000 and exp < top:  # 999.96 rounds to 1000: one prefix up
        exp += 3
        mantissa = float(f"{mag / 10.0**exp:.{digits}g}")
    sign = "-" if value < 0 else ""
    if mantissa < 1:  # below the smallest prefix
        return f"{value:.{digits}g} {unit}"
    if mantissa >= 1000:  # beyond the largest prefix
        if unit == "s" and mag < _MAX_PLAIN_SECONDS:
            return f"{sign}{mag:.0f} {unit}"
        return f"{value:.{digits}g} {unit}"
    return f"{sign}{mantissa:.{digits}g} {_PREFIXES[exp]}{unit}"


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
