"""A user's script built from the README's examples; ``mypy --strict`` must accept it.

tests/test_typing.py runs mypy on this file. The ``reveal``-free checks below are plain
annotations: if an overload returned the wrong type, mypy --strict would fail here.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
import pandas as pd

import roofline as rl
from roofline.testing import assert_efficiency, assert_within

hw: rl.Hardware = rl.hardware("H100 SXM")
e: rl.Estimate[float] = rl.gemm(8192, 8192, 8192, dtype="bf16", hardware=hw)
t: float = e.time_s
parts: tuple[float, float, float] = (e.compute_s, e.memory_s, e.overhead_s)
intensity: float = e.intensity
bound: str = e.bound  # str on a scalar estimate (an array of str on an array estimate)
print(bound.upper(), t, parts, intensity)

m = np.array([128, 1024, 8192])
sweep = rl.gemm(m, 4096, 4096, dtype="fp8", hardware=hw)
times: npt.NDArray[np.float64] = sweep.time_s
frame: pd.DataFrame = sweep.to_pandas()
bounds: npt.NDArray[np.str_] = sweep.bound
hw_frame: pd.DataFrame = hw.to_pandas()

r = rl.float8.linear(8192, 8192, 8192, recipe="rowwise", hardware=hw)
speedup: float = r.speedup
fp8: float = r.fp8_s + r.bf16_s + r.fp8_gemm_s + r.fp8_overhead_s
kernels: pd.DataFrame = r.kernels()
ra = rl.float8.linear(m, 4096, 4096, recipe="rowwise", hardware="H100 SXM", mode="train")
speedups: npt.NDArray[np.float64] = ra.speedup

table: pd.DataFrame = rl.float8.sweep(shapes="pow2_extended", recipe="mxfp8_cublas",
                                      hardware="B200")
torchao_table: pd.DataFrame = rl.float8.sweep(hardware="B200", columns="torchao")
inference = rl.float8.linear(16, 4096, 4096, recipe="nvfp4", mode="inference", hardware="B200")

total: rl.Estimate[float] = e + 2 * e
print((e + 2 * e).time_s)
arrays: rl.Estimate[npt.NDArray[np.float64]] = sweep + sweep

norm: float = rl.rmsnorm(4096, 8192, hardware=hw).time_s
ew: float = rl.elementwise(2**26, reads=2, hardware="H100 SXM").time_s
ce: float = rl.cross_entropy(4096, 128256, backend="compiled", hardware=hw).time_s
sm: float = rl.softmax(4096, 32000, backend="eager", hardware=hw).time_s
up = rl.grouped_gemm(256, 7168, 4096, groups=2, dtype="fp8", out_dtype="fp32", hardware="H800")
up_s: float = up.time_s
cast_s: float = rl.float8.cast(8192, 4096, granularity="rowwise", hardware=hw).time_s

cfg = rl.transformer.config("Llama-3-8B")
rep = rl.transformer.estimate(cfg, phase="decode", batch=1, kv_len=4096, hardware="H100 SXM")
print(rep.time_s)

try:
    rl.hardware("H100 SMX")
except rl.UnknownNameError as exc:
    matches: tuple[str, ...] = exc.matches
    print(matches)


def test_my_gemm_reaches_70_percent_of_its_roofline() -> None:
    measured_s = 1.6e-3
    g = rl.gemm(8192, 8192, 8192, dtype="bf16", hardware="H100 SXM")
    assert_efficiency(g, measured_s=measured_s, at_least=0.7)
    assert_within(g, measured_s=measured_s, rel=0.3)
    assert_efficiency(r, measured_s=r.fp8_s)
    assert_efficiency(rep, measured_s=rep.time_s)
