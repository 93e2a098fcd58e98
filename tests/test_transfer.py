"""Transfer across GPUs: every H100 measurement row predicted on other accelerators.

The implementation-aware terms were fitted on one H100; they must give sensible predictions on
accelerators without calibration rows, from their hardware entries alone. The bounds are
physics, not fits: an H200 is H100 silicon with 1.43x the bandwidth (same SMs, clocks and
peaks), so no kernel may get slower, nor faster than the bandwidth ratio allows (plus the
latency floor); an A100 has 0.32x the bf16 peak and 0.61x the bandwidth of an H100 SXM, so it
is never faster and at most ~3.2x slower (plus its launch-path differences); a B200 is faster
than an H100 on everything, at most by its peak or bandwidth ratio (and its larger L2).
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from roofline.validation import compare

DATA = Path(__file__).resolve().parents[1] / "data" / "measurements"
FILE = DATA / "gpu_h100_calibration.jsonl"

assert FILE.exists(), f"{FILE} is part of the repository"

#: (accelerator, lowest and highest allowed time ratio to the H100 SXM prediction)
BOUNDS = {
    "H200": (1 / 1.45, 1.0 + 1e-9),
    "A100 SXM 80GB": (1.0 - 1e-9, 4.0),
    # B200: 2.4x the bandwidth, and 126 MB of L2 (H100: 50 MB) keeps rows that aten kernels
    # re-read on chip, so a re-reading kernel may gain a little more than the bandwidth ratio.
    "B200": (1 / 3.2, 1.0 + 1e-9),
    "MI300X": (1 / 4.0, 4.0),
}


def _by_row(hardware: str) -> dict[tuple[str, str], float]:
    errors: list[tuple[str, str]] = []
    out = {(c.id, c.family): c.predicted_s for c in compare(FILE, hardware=hardware,
                                                           errors=errors)}
    # The only acceptable failures: an accelerator without the row's math (A100: no fp8) or
    # without the row's kernel (cuDNN attention on MI300X).
    assert all("peak" in msg or "fp8" in msg or "does not exist on" in msg
               for _, msg in errors), errors[:3]
    return out


@pytest.fixture(scope="module")
def h100() -> dict[tuple[str, str], float]:
    return _by_row("H100 SXM")


@pytest.mark.parametrize("name", sorted(BOUNDS))
def test_predictions_transfer_within_physical_bounds(
    name: str, h100: dict[tuple[str, str], float]
) -> None:
    other = _by_row(name)
    assert len(other) > 0.5 * len(h100)
    lo, hi = BOUNDS[name]
    bad = []
    for key, t in other.items():
        assert math.isfinite(t) and t > 0, (name, key, t)
        if key[1].startswith("gpu_launch_overhead"):
            continue  # host (CPU/driver) time: the same on every GPU by construction
        if "wall_s" in key[1]:
            continue  # do_bench's flush hides host time: see test_do_bench_wall_transfer
        if "speedup" in key[1] or key[1].startswith("gpu_linear_train"):
            continue  # end-to-end calls: ratios, and times that include the host's
        ratio = t / h100[key]
        if not lo <= ratio <= hi:
            bad.append((key, round(ratio, 3)))
    assert not bad, f"{name}: {len(bad)} rows outside [{lo:.3f}, {hi:.3f}] x H100: {bad[:8]}"


@pytest.mark.parametrize("name", ["H200", "B200"])
def test_do_bench_wall_transfer(name: str, h100: dict[tuple[str, str], float]) -> None:
    # A float8 linear's do_bench wall is max(GPU time, host period - flush): the L2 flush
    # before each call is a GPU kernel that hides host time, and a faster GPU runs it sooner,
    # so a host-bound row may get slower by at most the flush's saving, never more. The same
    # step in a plain loop (Float8Linear.wall_s, no flush) never gets slower.
    import roofline as rl

    flush = {hw: float(rl.elementwise(2**26, 0, 1, dtype="fp32", hardware=hw).time_s)
             for hw in ("H100 SXM", name)}
    assert flush[name] < flush["H100 SXM"]
    other = _by_row(name)
    walls = [k for k in h100 if "wall_s" in k[1]]
    assert walls
    for key in walls:
        assert other[key] <= h100[key] + (flush["H100 SXM"] - flush[name]) + 1e-9, key
    for m, k, n in ((1024, 1024, 1024), (4096, 4096, 4096), (16384, 8192, 8192)):
        fast = rl.float8.linear(m, k, n, hardware=name).wall_s
        assert fast <= rl.float8.linear(m, k, n, hardware="H100 SXM").wall_s * (1 + 1e-9)
