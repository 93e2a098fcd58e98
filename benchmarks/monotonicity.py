"""Count monotonicity violations of the attention model over a grid, for every hardware entry.

A violation is a pair of shapes that differ in one argument (the larger one a bigger value of
batch, heads, q_len, kv_len, head_dim or kv_heads) whose predicted time goes *down*. The model
is meant to be monotone by construction (docs/model.md, "Monotone by construction"), so every
count printed here should be 0.

Usage::

    PYTHONPATH=python python benchmarks/monotonicity.py [--points 400] [--hardware "H100 SXM"]

Each configuration (hardware x backend x forward/backward x causal) draws ``--points`` base
shapes (seeded) from value lists that straddle the model's thresholds (tile sizes, decode's
16 queries, head dims 128/192/256, multiples of 8) and compares each with its neighbours one
step up in every argument (the next value in the list and +1). GEMMs are checked the same way
(m, k, n, batch).
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from typing import Any

import numpy as np

import roofline as rl

BATCH = [1, 2, 3, 5, 8, 13, 18, 19, 33, 64, 127, 128]
GROUPS = [1, 2, 3, 4, 5, 8, 16]          # heads per kv head
KV_HEADS = [1, 2, 3, 4, 8, 16]
Q_LEN = [1, 2, 3, 4, 8, 15, 16, 17, 32, 33, 63, 64, 65, 100, 127, 128, 129, 192, 262, 326,
         1000, 2048, 4096, 8745]
KV_LEN = [1, 2, 3, 8, 11, 16, 17, 63, 64, 65, 127, 128, 129, 262, 1000, 1024, 4096, 8745,
          16384, 55355]
HEAD_DIM = [8, 16, 32, 60, 63, 64, 65, 96, 100, 127, 128, 129, 136, 160, 191, 192, 193, 200,
            224, 225, 255, 256, 257, 264, 265, 512, 576]
BACKENDS = ("auto", "flash", "cudnn", "efficient", "math", "standard")
ARGS = ("batch", "heads", "q_len", "kv_len", "head_dim", "kv_heads")
GEMM_DIMS = [1, 2, 3, 7, 8, 15, 16, 17, 63, 64, 65, 127, 128, 129, 255, 256, 257, 1000, 1024,
             2047, 2048, 4096, 8192, 12345]


def _up(values: list[int], x: np.ndarray) -> np.ndarray:
    """The next value of ``values`` above each ``x`` (x itself at the top)."""
    v = np.asarray(values)
    i = np.searchsorted(v, x, side="right")
    return np.where(i < len(v), v[np.minimum(i, len(v) - 1)], x)


def attention_shapes(rng: np.random.Generator, n: int) -> dict[str, np.ndarray]:
    kvh = rng.choice(KV_HEADS, n)
    return {
        "batch": rng.choice(BATCH, n),
        "kv_heads": kvh,
        "heads": kvh * rng.choice(GROUPS, n),
        "q_len": rng.choice(Q_LEN, n),
        "kv_len": rng.choice(KV_LEN, n),
        "head_dim": rng.choice(HEAD_DIM, n),
    }


def _steps(base: dict[str, np.ndarray]) -> list[tuple[str, dict[str, np.ndarray]]]:
    out = []
    for arg in ARGS:
        lists = {"batch": BATCH, "q_len": Q_LEN, "kv_len": KV_LEN, "head_dim": HEAD_DIM}
        for how in ("next", "+1"):
            big = dict(base)
            if arg == "heads":
                # one more query head per kv head group keeps kv_heads dividing heads
                step = base["kv_heads"] if how == "+1" else base["heads"]
                big["heads"] = base["heads"] + step
            elif arg == "kv_heads":
                if how == "+1":
                    continue
                # more kv heads at the same query heads adds K/V work: G -> 2G where it divides
                ok = np.mod(base["heads"], 2 * base["kv_heads"]) == 0
                big["kv_heads"] = np.where(ok, 2 * base["kv_heads"], base["kv_heads"])
            elif how == "+1":
                big[arg] = base[arg] + 1
            else:
                big[arg] = _up(lists[arg], base[arg])
            out.append((f"{arg}{'' if how == 'next' else ' +1'}", big))
    return out


def _times(shapes: dict[str, np.ndarray], hw: Any, backend: str, causal: bool,
           backward: bool) -> np.ndarray:
    dtype = "bf16" if hw.bf16_flops_per_s else "fp32"
    e = rl.attention(shapes["batch"], shapes["heads"], shapes["q_len"], shapes["kv_len"],
                     shapes["head_dim"], kv_heads=shapes["kv_heads"], causal=causal,
                     backward=backward, dtype=dtype, hardware=hw,
                     backend=backend)
    return np.asarray(e.time_s, dtype=float)


def count_attention(hw: Any, rng: np.random.Generator, points: int,
                    by_arg: Counter[str], examples: list[str]) -> tuple[int, int]:
    pairs = violations = 0
    for backend in BACKENDS:
        for backward in (False, True):
            for causal in (False, True):
                base = attention_shapes(rng, points)
                t0 = _times(base, hw, backend, causal, backward)
                for name, big in _steps(base):
                    t1 = _times(big, hw, backend, causal, backward)
                    bad = t1 < t0 * (1 - 1e-12)
                    pairs += len(t0)
                    violations += int(bad.sum())
                    by_arg[name.split()[0]] += int(bad.sum())
                    by_arg[f"backend {backend}"] += int(bad.sum())
                    if bad.any() and sum(backend in x for x in examples) < 3:
                        i = int(np.flatnonzero(bad)[0])
                        shape = {k: int(v[i]) for k, v in base.items()}
                        examples.append(f"{hw.name} {backend} bwd={backward} causal={causal} "
                                        f"{shape} {name}: {t0[i]:.4g} -> {t1[i]:.4g} s")
    return pairs, violations


def count_gemm(hw: Any, rng: np.random.Generator, points: int) -> tuple[int, int]:
    pairs = violations = 0
    for dtype in ("bf16", "fp32"):
        if getattr(hw, f"{dtype}_flops_per_s", None) is None:
            continue
        base = {k: rng.choice(GEMM_DIMS, points) for k in ("m", "k", "n")}
        base["batch"] = rng.choice(BATCH, points)
        t0 = np.asarray(rl.gemm(base["m"], base["k"], base["n"], dtype, hw,
                                batch=base["batch"]).time_s)
        for arg in base:
            big = dict(base)
            big[arg] = base[arg] + 1
            t1 = np.asarray(rl.gemm(big["m"], big["k"], big["n"], dtype, hw,
                                    batch=big["batch"]).time_s)
            pairs += len(t0)
            violations += int((t1 < t0 * (1 - 1e-12)).sum())
    return pairs, violations


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--points", type=int, default=200, help="base shapes per configuration")
    p.add_argument("--hardware", action="append", help="only these entries (repeatable)")
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    names = args.hardware or rl.list_hardware()
    rng = np.random.default_rng(args.seed)
    by_arg: Counter[str] = Counter()
    examples: list[str] = []
    total_pairs = total_bad = gemm_pairs = gemm_bad = 0
    print(f"{'hardware':<24} {'attention pairs':>16} {'violations':>11} {'gemm pairs':>11} "
          f"{'violations':>11}")
    for name in names:
        hw = rl.hardware(name)
        pairs, bad = count_attention(hw, rng, args.points, by_arg, examples)
        gp, gb = count_gemm(hw, rng, args.points)
        total_pairs += pairs
        total_bad += bad
        gemm_pairs += gp
        gemm_bad += gb
        print(f"{name:<24} {pairs:>16,} {bad:>11,} {gp:>11,} {gb:>11,}")
    print(f"{'total':<24} {total_pairs:>16,} {total_bad:>11,} {gemm_pairs:>11,} {gemm_bad:>11,}")
    print("attention violations by argument:",
          ", ".join(f"{k} {by_arg[k]}" for k in ARGS))
    print("attention violations by backend:",
          ", ".join(f"{k} {by_arg['backend ' + k]}" for k in BACKENDS))
    for line in examples:
        print("  e.g.", line)
    return 0 if total_bad == 0 and gemm_bad == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
