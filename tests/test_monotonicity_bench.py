"""benchmarks/monotonicity.py keeps running where a backend does not exist (issue #25): since
``backend="cudnn"`` is refused on AMD GPUs, ``--classes`` (which includes MI300X) crashed
on it; the benchmark now skips backends a GPU does not run."""

from __future__ import annotations

from pathlib import Path

from _benchmarks import load_benchmark

ROOT = Path(__file__).resolve().parents[1]


def _bench():
    return load_benchmark("monotonicity")


def test_classes_run_on_amd_without_cudnn() -> None:
    m = _bench()
    import roofline as rl
    assert not m._exists(rl.hardware("MI300X"), "cudnn")
    assert m._exists(rl.hardware("H100 SXM"), "cudnn")
    got = m.classes(["MI300X"], 4, 0)
    assert got["attention causal <= full"][0] > 0  # the other backends were compared
