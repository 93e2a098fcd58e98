"""Shape-points per second for a full training float8 linear (3 GEMMs + casts), side by side.

(a) torchao's path as its benchmarks/float8/float8_roofline.py uses it: sympy expressions
    built once, then ``.subs`` per shape (three expressions per shape).
(b) the same expressions through ``sympy.lambdify`` (numpy): (b1) called per shape in a
    Python loop, (b2) called once on numpy arrays.
(c) ``roofline.float8.linear`` on numpy arrays (validation included), one thread and all
    threads, with the same (torchao) model as (a) and (b);
(d) the same call with the default shape-aware model on our H100 SXM entry (every GEMM
    searches 12 tiles x up to 5 split-K factors), then its parts: one GEMM, one cast.

Run: ``python benchmarks/sweep_speed.py [--points 2000000]`` (needs torch, torchao, sympy).
Every number is measured in this run; ratios compare rows of the same run. The closing "per
core" table times (b2) and (c1) alternately (best of --rounds each), both on one thread: numpy
runs lambdify's expressions on one core, and ours runs with set_num_threads(1); pin the process
to one core to compare cores (``taskset -c 0 python benchmarks/sweep_speed.py``).
"""

from __future__ import annotations

import argparse
import os
import time
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np


def _rate(n: int, fn: Callable[[], Any], repeat: int = 3) -> float:
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return n / best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--points", type=int, default=2_000_000, help="shapes for (b2) and (c)")
    parser.add_argument("--subs-points", type=int, default=30, help="shapes for (a)")
    parser.add_argument("--loop-points", type=int, default=20_000, help="shapes for (b1)")
    parser.add_argument("--recipe", default="tensorwise")
    parser.add_argument("--rounds", type=int, default=7,
                        help="alternating timings of the per-core comparison")
    args = parser.parse_args()

    warnings.filterwarnings("ignore")
    os.environ.setdefault("TORCH_CPP_LOG_LEVEL", "ERROR")
    import sympy
    import torch
    from torchao.testing.training import roofline_utils as tao

    import roofline as rl

    gpu = "NVIDIA H100"
    hw = rl.hardware(gpu, table="torchao")
    M, K, N = sympy.symbols("M K N")
    exprs = [
        tao.get_gemm_time_sympy(M, K, N, torch.bfloat16, None, None, gpu),
        tao.get_gemm_time_sympy(M, K, N, torch.float8_e4m3fn, args.recipe, None, gpu),
        tao.get_float8_mem_sympy(M, K, N, args.recipe, None, False, gpu),
    ]
    rng = np.random.default_rng(0)
    shapes = np.exp(rng.uniform(np.log(256), np.log(65536), size=(args.points, 3))).round()
    m, k, n = shapes[:, 0].copy(), shapes[:, 1].copy(), shapes[:, 2].copy()

    def subs() -> None:
        for i in range(args.subs_points):
            for e in exprs:
                float(e.subs(M, int(m[i])).subs(K, int(k[i])).subs(N, int(n[i])))

    lambdas = [sympy.lambdify((M, K, N), e, modules="numpy") for e in exprs]

    def lambdify_loop() -> None:
        for i in range(args.loop_points):
            mi, ki, ni = int(m[i]), int(k[i]), int(n[i])
            for f in lambdas:
                float(f(mi, ki, ni))

    def lambdify_arrays() -> None:
        for f in lambdas:
            f(m, k, n)

    def ours(threads: int, efficiency: str = "torchao") -> Callable[[], None]:
        # The default model needs the SM count (tile / wave quantization), which torchao's
        # table lacks: it runs on our H100 SXM entry.
        target = hw if efficiency == "torchao" else rl.hardware("H100 SXM")

        def run() -> None:
            rl.set_num_threads(threads)
            rl.float8.linear(m, k, n, args.recipe, target, efficiency=efficiency)

        return run

    # The four paths agree before they are timed.
    r = rl.float8.linear(m[:50], k[:50], n[:50], args.recipe, hw, efficiency="torchao")
    ref = np.array(
        [[float(e.subs({M: m[i], K: k[i], N: n[i]})) for e in exprs] for i in range(50)]
    )
    ours_cols = np.stack([r.bf16_s, r.fp8_gemm_s, r.fp8_overhead_s], axis=1)
    assert np.allclose(ours_cols, ref, rtol=1e-9), "roofline and torchao disagree"

    rows = [
        ("(a) torchao sympy .subs per shape", _rate(args.subs_points, subs, repeat=1)),
        ("(b1) sympy.lambdify, per-shape calls", _rate(args.loop_points, lambdify_loop, 1)),
        ("(b2) sympy.lambdify on numpy arrays", _rate(args.points, lambdify_arrays)),
        ("(c1) roofline, numpy arrays, 1 thread", _rate(args.points, ours(1))),
        (f"(c2) roofline, arrays, all threads ({os.cpu_count()})", _rate(args.points, ours(0))),
        ("(d1) default shape-aware model, 1 thread", _rate(args.points, ours(1, "default"))),
        ("(d2) default shape-aware model, all threads", _rate(args.points, ours(0, "default"))),
    ]
    # Where (d1)'s time goes: the same shapes' GEMMs (the search) and casts, one thread.
    h100 = rl.hardware("H100 SXM")
    rl.set_num_threads(1)
    parts = [
        ("one bf16 GEMM (m, k, n), default model",
         _rate(args.points, lambda: rl.gemm(m, k, n, "bf16", h100))),
        ("one fp8 GEMM (m, k, n), default model",
         _rate(args.points, lambda: rl.gemm(m, k, n, "fp8", h100))),
        ("one tensorwise cast (m x k: amax, reduce, cast)",
         _rate(args.points, lambda: rl.float8.cast(m, k, "tensorwise", h100))),
    ]
    rl.set_num_threads(0)
    base_a, base_b1, base_b2 = rows[0][1], rows[1][1], rows[2][1]
    print(f"training float8 linear, recipe {args.recipe}, torchao table entry {gpu!r}; "
          f"{args.points:,} random shapes in [256, 65536]^3")
    print(f"{'path':<48} {'shapes/s':>14} {'vs (a)':>10} {'vs (b1)':>9} {'vs (b2)':>9}")
    for name, rate in rows:
        print(f"{name:<48} {rate:>14,.0f} {rate / base_a:>9,.0f}x {rate / base_b1:>8,.1f}x "
              f"{rate / base_b2:>8,.1f}x")
    print("\nparts of (d1) (a training linear = 6 GEMMs + 3 operand casts), 1 thread, "
          "validation included:")
    for name, rate in parts:
        print(f"{name:<48} {rate:>14,.0f} {1e9 / rate:>9,.0f} ns each")

    # Per core, side by side: the same shapes through torchao's formulas (lambdify, numpy) and
    # through rl.float8.linear (torchao preset, validation and result object included), timed
    # alternately so that both see the same machine; best of the rounds for each.
    best = {"lambdify": float("inf"), "roofline": float("inf")}
    one = ours(1)
    for _ in range(args.rounds):
        for name, fn in (("lambdify", lambdify_arrays), ("roofline", one)):
            t0 = time.perf_counter()
            fn()
            best[name] = min(best[name], time.perf_counter() - t0)
    rl.set_num_threads(0)
    ns = {name: 1e9 * t / args.points for name, t in best.items()}
    print(f"\nper core, {args.points:,} training linears ({args.recipe}), one thread each, "
          f"best of {args.rounds} alternating rounds:")
    print(f"{'path':<48} {'ns / linear':>12} {'linears/s':>14}")
    print(f"{'torchao formulas, sympy.lambdify -> numpy':<48} {ns['lambdify']:>12.1f} "
          f"{1e9 / ns['lambdify']:>14,.0f}")
    label = 'rl.float8.linear(..., efficiency="torchao")'
    print(f"{label:<48} {ns['roofline']:>12.1f} "
          f"{1e9 / ns['roofline']:>14,.0f}")
    print(f"roofline / lambdify throughput: {ns['lambdify'] / ns['roofline']:.2f}x")


if __name__ == "__main__":
    main()
