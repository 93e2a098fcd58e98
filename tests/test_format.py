"""roofline._format.si: prefixes chosen after rounding, capped per unit, edges readable."""

from __future__ import annotations

import pytest

from roofline._format import si


@pytest.mark.parametrize(
    ("value", "unit", "want"),
    [
        (1.5e-5, "s", "15 µs"),
        (1.327e-3, "s", "1.327 ms"),
        (3153.0, "s", "3153 s"),            # seconds never go to ks (was "3.153 ks")
        (12345.6, "s", "12346 s"),
        (3.153e7, "s", "3.153e+07 s"),      # beyond 1e6 s: scientific
        (1.979e15, "FLOP/s", "1.979 PFLOP/s"),
        (2.5e18, "FLOP/s", "2.5 EFLOP/s"),
        (1e30, "FLOP/s", "1e+30 FLOP/s"),   # beyond E: scientific, no prefix
        (1e30, "s", "1e+30 s"),
        (1e-12, "s", "1 ps"),
        (1e-15, "s", "1e-15 s"),            # below p: scientific
        (9.9996e-13, "s", "1 ps"),          # rounds up into the p range
        (999.95, "B", "1 kB"),              # 999.95 -> 1000 with 4 digits: next prefix
        (999.94, "B", "999.9 B"),
        (999.96e-3, "s", "1 s"),
        (0.9999, "s", "999.9 ms"),
        (999.96e3, "B/s", "1 MB/s"),
        (999.96e15, "FLOP/s", "1 EFLOP/s"),
        (999.96e18, "FLOP/s", "1e+21 FLOP/s"),
        (0.0, "s", "0 s"),
        (-5e-6, "s", "-5 µs"),
        (-3153.0, "s", "-3153 s"),
        (float("inf"), "s", "inf s"),
        (float("-inf"), "B", "-inf B"),
        (float("nan"), "FLOP", "nan FLOP"),
    ],
)
def test_si(value: float, unit: str, want: str) -> None:
    assert si(value, unit) == want


def test_every_boundary_rounds_up_to_the_next_prefix() -> None:
    prefixes = ["p", "n", "µ", "m", "", "k", "M", "G", "T", "P", "E"]
    for i, p in enumerate(prefixes[:-1]):
        value = 999.96 * 10.0 ** (3 * (i - 4))
        assert si(value, "B") == f"1 {prefixes[i + 1]}B", value
        assert si(value * 0.9999, "B") == f"999.9 {p}B", value
