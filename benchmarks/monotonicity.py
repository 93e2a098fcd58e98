"""Count monotonicity violations of the attention model over a grid, for every hardware entry.

A violation is a pair of shapes that differ in one argument (the larger one a bigger value of
batch, heads, q_len, kv_len, head_dim or kv_heads) whose predicted time goes *down*. The model
is meant to be monotone by construction (docs/model.md, "Monotone by construction"), so every
count printed here should be 0.

Usage::

    PYTHONPATH=python python benchmarks/monotonicity.py [--points 400] [--hardware "H100 SXM"]
    PYTHONPATH=python python benchmarks/monotonicity.py --classes [--before OTHER/python]

``--classes`` samples, on six GPUs, the classes of issue #25 (section 2, "Monotonicity"), each
a pair that must not get faster: causal <= non-causal attention (same shape), attention q_len
and kv_len steps (causal), more KV heads at the same query heads (backward), backward >=
forward (fused attention backends; eager and compiled softmax / cross-entropy), row ops one
column wider (eager, compiled), GEMM +1 steps that do not land on a multiple of 8, and a
training step one token longer (batch x seq_len not landing on a multiple of 8).
``--before`` runs the same sample with another checkout's package (its ``python`` folder) in
a subprocess and prints both counts side by side.

Each configuration (hardware x backend x forward/backward x causal) draws ``--points`` base
shapes (seeded) from value lists that straddle the model's thresholds (tile sizes, decode's
16 queries, head dims 128/192/256, multiples of 8) and compares each with its neighbours one
step up in every argument (the next value in the list and +1). GEMMs are checked the same way
(m, k, n, batch).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
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


def _exists(hw: Any, backend: str) -> bool:
    """Whether ``backend`` runs on ``hw`` (cuDNN attention only on NVIDIA GPUs: elsewhere
    the model refuses it, as it must, and there is no pair to compare)."""
    try:
        rl.attention(1, 1, 1, 1, 64, hardware=hw, backend=backend,
                     dtype="bf16" if hw.bf16_flops_per_s else "fp32")
    except ValueError as e:
        if "does not exist" in str(e):
            return False
        raise
    return True


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
                if not _exists(hw, backend):
                    continue
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


SIX = ("H100 SXM", "H200", "B200", "A100 SXM 80GB", "MI300X", "L4")


def _t(e: Any) -> np.ndarray:
    return np.asarray(e.time_s, dtype=float)


def _bad(small: np.ndarray, big: np.ndarray) -> np.ndarray:
    return big < small * (1 - 1e-9)


def _not_aligned(x: np.ndarray) -> np.ndarray:
    """Steps allowed to get faster: onto a multiple of 8 (cuBLAS rewards alignment)."""
    return np.mod(x, 8) != 0


def classes(hardware: list[str], points: int, seed: int) -> dict[str, tuple[int, int]]:
    """(pairs, violations) per class of issue #25 over `hardware`."""
    rng = np.random.default_rng(seed)
    out: Counter[str] = Counter()
    pairs: Counter[str] = Counter()

    def add(name: str, bad: np.ndarray) -> None:
        pairs[name] += int(bad.size)
        out[name] += int(bad.sum())

    for name in hardware:
        hw = rl.hardware(name)
        dtype = "bf16" if hw.bf16_flops_per_s else "fp32"
        for backend in ("flash", "cudnn", "efficient", "auto"):
            s = attention_shapes(rng, points)
            if not _exists(hw, backend):
                continue
            kw = dict(kv_heads=s["kv_heads"], dtype=dtype, hardware=hw, backend=backend)
            args = (s["batch"], s["heads"], s["q_len"], s["kv_len"], s["head_dim"])
            for bwd in (False, True):
                full = _t(rl.attention(*args, causal=False, backward=bwd, **kw))
                causal = _t(rl.attention(*args, causal=True, backward=bwd, **kw))
                add("attention causal <= full", _bad(causal, full))
                for arg in ("q_len", "kv_len"):
                    big = dict(s)
                    big[arg] = s[arg] + 1
                    t1 = _t(rl.attention(big["batch"], big["heads"], big["q_len"], big["kv_len"],
                                         big["head_dim"], causal=True, backward=bwd, **kw))
                    add(f"attention causal {arg} +1", _bad(causal, t1))
            fwd = _t(rl.attention(*args, causal=False, **kw))
            bwd_t = _t(rl.attention(*args, causal=False, backward=True, **kw))
            add("attention backward >= forward", _bad(fwd, bwd_t))
            ok = np.mod(s["heads"], 2 * s["kv_heads"]) == 0
            more = _t(rl.attention(*args, causal=False, backward=True, **{
                **kw, "kv_heads": np.where(ok, 2 * s["kv_heads"], s["kv_heads"])}))
            add("attention bwd more kv heads", _bad(bwd_t, more))
        rows = rng.choice([1, 8, 64, 100, 1024, 4096, 16384], points)
        cols = rng.choice([100, 1000, 1024, 1025, 4096, 8192, 9216, 12000, 17536, 24512, 32000,
                           128256], points)
        cols = cols + rng.integers(0, 9, points)
        for fn in ("softmax", "cross_entropy"):
            f = getattr(rl, fn)
            for backend in ("eager", "compiled"):
                a = _t(f(rows, cols, dtype, hw, backend=backend))
                b = _t(f(rows, cols + 1, dtype, hw, backend=backend))
                add(f"{backend} softmax/CE cols +1", _bad(a, b))
                g = _t(f(rows, cols, dtype, hw, backend=backend, backward=True))
                add(f"{backend} softmax/CE backward >= forward", _bad(a, g))
        gd = {k: rng.choice(GEMM_DIMS, points) for k in ("m", "k", "n")}
        t0 = _t(rl.gemm(gd["m"], gd["k"], gd["n"], dtype, hw))
        for arg in ("m", "k", "n"):
            big = dict(gd)
            big[arg] = gd[arg] + 1
            t1 = _t(rl.gemm(big["m"], big["k"], big["n"], dtype, hw))
            add("gemm +1 (not onto a multiple of 8)", _bad(t0, t1) & _not_aligned(big[arg]))
        if dtype == "bf16":
            for _ in range(max(1, points // 100)):
                tokens = int(rng.choice([511, 1023, 2047, 4095, 4097, 6000, 8191]))
                tokens += int(rng.integers(-3, 4))  # every step counts (no GEMM of a layer
                # has the tokens as a stride: the K of the weight gradient sets none)
                t = [rl.transformer.estimate("Llama-3-8B", "train", 1, seq_len=x,
                                             hardware=hw).time_s for x in (tokens, tokens + 1)]
                add("train step seq_len +1", np.array([t[1] < t[0] * (1 - 1e-9)]))
    return {k: (pairs[k], out[k]) for k in pairs}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--points", type=int, default=200, help="base shapes per configuration")
    p.add_argument("--hardware", action="append", help="only these entries (repeatable)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--classes", action="store_true",
                   help="the classes of issue #25 on six GPUs (see the module docstring)")
    p.add_argument("--before", metavar="PYTHONPATH",
                   help="with --classes: also run on this package path and print both")
    p.add_argument("--json", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.classes:
        names = args.hardware or list(SIX)
        after = classes(names, args.points, args.seed)
        if args.json:
            print(json.dumps(after))
            return 0
        before: dict[str, Any] = {}
        if args.before:
            cmd = [sys.executable, __file__, "--classes", "--json", "--points", str(args.points),
                   "--seed", str(args.seed)] + [x for n in names for x in ("--hardware", n)]
            env = {**os.environ, "PYTHONPATH": args.before}
            before = json.loads(subprocess.run(cmd, env=env, check=True, capture_output=True,
                                               text=True).stdout)
        print(f"{len(names)} GPUs ({', '.join(names)}), {args.points} points per configuration")
        print(f"{'class':<44} {'pairs':>8} {'before':>8} {'after':>8}")
        for k, (n, bad) in after.items():
            b = before.get(k, (n, None))[1]
            print(f"{k:<44} {n:>8,} {'' if b is None else f'{b:,}':>8} {bad:>8,}")
        return 0
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
