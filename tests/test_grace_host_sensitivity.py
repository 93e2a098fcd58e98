"""benchmarks/grace_host_sensitivity.py scales only the Grace hosts' Python / dispatch terms.

Hand-derived: a host-bound eager chain of N kernels shorter than ``kernel_gap_s`` ends at
``(N - 1) * eager_launch_s + kernel_gap_s`` (the last launch plus the last kernel), so at a
host ratio r its wall grows by exactly ``(r - 1) * (N - 1) * eager_launch_s`` on GB200 and
not at all on H100 (x86 host); the GPU-side terms are kept.
"""

from __future__ import annotations

import pytest
from _benchmarks import load_benchmark

import roofline as rl
from roofline._params import host as host_params
from roofline._params import packaged
from roofline._params.resolve import clear_caches


def test_scaled_terms_only_on_grace() -> None:
    mod = load_benchmark("grace_host_sensitivity")
    doc = {"terms": {"eager_launch_s": 10e-6, "kernel_gap_s": 1e-6, "compiled_call_s": 1e-4}}
    scaled = mod._scaled(2.0)
    gb = scaled(rl.hardware("GB200"), doc)
    h100 = scaled(rl.hardware("H100 SXM"), doc)
    assert gb["eager_launch_s"] == pytest.approx(20e-6)
    assert gb["compiled_call_s"] == pytest.approx(2e-4)
    assert gb["kernel_gap_s"] == pytest.approx(1e-6)          # GPU side: kept
    assert gb["kernel_latency_s"] == pytest.approx(h100["kernel_latency_s"])
    assert h100["eager_launch_s"] == pytest.approx(10e-6)     # x86 host: unchanged


def test_host_bound_chain_slower_by_the_ratio_share() -> None:
    mod = load_benchmark("grace_host_sensitivity")
    n, ratio = 100, 1.5
    kernels = [0.5e-6] * n
    base_gb = rl.wall_time(kernels, "eager", "GB200").wall_s
    base_h100 = rl.wall_time(kernels, "eager", "H100 SXM").wall_s
    doc = packaged.terms("host")
    fitted_e = host_params.values(rl.hardware("GB200"), doc)["eager_launch_s"]
    original = host_params.values
    try:
        host_params.values = mod._scaled(ratio)
        clear_caches()
        e = host_params.values(rl.hardware("GB200"), doc)["eager_launch_s"]
        slow_gb = rl.wall_time(kernels, "eager", "GB200").wall_s
        slow_h100 = rl.wall_time(kernels, "eager", "H100 SXM").wall_s
    finally:
        host_params.values = original
        clear_caches()
    assert e == pytest.approx(ratio * fitted_e)
    assert slow_gb - base_gb == pytest.approx((ratio - 1.0) * (n - 1) * fitted_e, rel=1e-9)
    assert slow_h100 == pytest.approx(base_h100, rel=1e-12)
    assert rl.wall_time(kernels, "eager", "GB200").wall_s == pytest.approx(base_gb)
