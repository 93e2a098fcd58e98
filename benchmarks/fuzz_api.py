"""Random calls over the public API with random and extreme arguments.

Each call must return a finite, non-negative estimate or raise a *named* error (ValueError,
TypeError, KeyError naming the function); anything else counts:

- crash: any other exception (OverflowError, ZeroDivisionError, RecursionError, MemoryError,
  SystemError, ...);
- odd error: a named error whose message does not name the function, or a pybind11 dump
  ("incompatible function arguments", "Invoked with"); for the high-level calls
  (transformer.estimate / serve / plan, calibration profiles, fusion) a message that does not
  start with the public function's name (e.g. one blaming an internal op, "gemm: m");
- bad result: NaN, inf or a negative time;
- hang: a call over --timeout seconds (each call runs in a worker process).

``--surface new`` draws only the calls of the surface sessions 7-8 added (synthetic traces of
the newer registry entries, ``from_hf`` of newer models, the newer config fields and
``estimate`` options, ``serve`` runtimes, jobs rows: ``_fuzz_surface.py``), ``old`` only the
earlier ones, ``all`` (default) both.

Usage::

    PYTHONPATH=python python benchmarks/fuzz_api.py [--calls 2000] [--seed 0] [--timeout 5]
        [--surface all|old|new]
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import random
import sys
from collections import Counter
from typing import Any

import _fuzz_surface

EXTREME: list[Any] = [0, 1, 2, 7, 64, 128, 129, 4096, 2**31, 2**53, 2**53 + 1, 2**62, 10**400,
                      -1, 0.5, 1.5, 5e-324, 1e-300, 1e308, float("inf"), float("nan"), True,
                      None, "abc", "64", [1, 2], [], (3,), {"a": 1}, 1j]
SIZES = [1, 2, 3, 8, 16, 17, 64, 127, 128, 129, 1000, 4096, 65536]
DTYPES = ["bf16", "fp16", "fp32", "fp8", "int8", "int32", "nvfp4", "mxfp8", "bogus", 3]
HARDWARE = ["H100 SXM", "A100 SXM 80GB", "B200", "MI300X", "TPU v5p", "nope", 5]


def _arg(rng: random.Random) -> Any:
    return rng.choice(SIZES) if rng.random() < 0.6 else rng.choice(EXTREME)


def _call(rng: random.Random, surface: str = "all") -> tuple[str, Any]:
    import roofline as rl

    if surface == "new" or (surface == "all" and rng.random() < 0.25):
        name = rng.choice(sorted(_fuzz_surface.KINDS))
        gen = _fuzz_surface.KINDS[name]
        return name, lambda: gen(rng)

    hw = rng.choice(HARDWARE) if rng.random() < 0.2 else "H100 SXM"
    dt = rng.choice(DTYPES) if rng.random() < 0.2 else "bf16"
    a = [_arg(rng) for _ in range(6)]
    which = rng.randrange(18)
    if which == 0:
        return "gemm", lambda: rl.gemm(a[0], a[1], a[2], dt, hw)
    if which == 1:
        return "attention", lambda: rl.attention(
            a[0], a[1], a[2], a[3], a[4], causal=rng.random() < 0.5,
            backward=rng.random() < 0.5, dtype=dt, hardware=hw,
            backend=rng.choice(["auto", "flash", "cudnn", "efficient", "math", "standard"]))
    if which == 2:
        return "elementwise", lambda: rl.elementwise(a[0], flops_per_element=a[1], dtype=dt,
                                                     hardware=hw)
    if which == 3:
        return "rmsnorm", lambda: rl.rmsnorm(a[0], a[1], dtype=dt, hardware=hw)
    if which == 4:
        return "grouped_gemm", lambda: rl.grouped_gemm(a[0], a[1], a[2], groups=a[3],
                                                       dtype=dt, hardware=hw)
    if which == 5:
        return "linear", lambda: rl.float8.linear(a[0], a[1], a[2], hardware=hw)
    if which == 6:
        algo = rng.choice(["ring", "nccl", "custom"])  # "custom": vLLM's kernels (session 12)
        # session 13: rings spanning nodes through the group's NICs (ranks_per_node)
        span = {} if rng.random() < .5 else {"ranks_per_node": a[5], "network_bytes_per_s":
                                             rng.choice([48e9, a[3]])}
        fn = rng.choice([rl.all_reduce, rl.all_gather, rl.reduce_scatter]) if span \
            else rl.all_reduce
        algo = rng.choice(["ring", "tree", algo]) if span else algo
        return fn.__name__, lambda: fn(a[0], a[1], algo, link_bytes_per_s=a[2],
                                       latency_s=a[3] if rng.random() < .5 else 0,
                                       bandwidth_fraction=a[4] if rng.random() < .5 else 1.0,
                                       **span)
    if which == 7:
        return "explain", lambda: rl.explain(rl.gemm(64, 64, 64, hardware="H100 SXM"), a[0])
    if which == 8:
        field = rng.choice(["mem_bytes_per_s", "bf16_flops_per_s", "sms", "l2_bytes"])
        return "Hardware", lambda: rl.gemm(64, 64, 64, hardware=rl.hardware("H100 SXM")
                                           .replace(**{field: a[0]}))
    if which == 9:
        return "Efficiency", lambda: rl.gemm(64, 64, 64, hardware="H100 SXM",
                                             efficiency=rl.Efficiency(a[0], a[1], a[2]))
    if which == 10:
        key = rng.choice(["hidden_size", "num_attention_heads", "num_hidden_layers",
                          "num_key_value_heads", "intermediate_size", "tie_word_embeddings"])
        cfg = {"hidden_size": 256, "num_attention_heads": 4, "num_hidden_layers": 2,
               "intermediate_size": 512, "vocab_size": 1000, key: a[0]}
        return "from_hf", lambda: rl.transformer.estimate(rl.transformer.from_hf(cfg),
                                                          "prefill", seq_len=128,
                                                          hardware="H100 SXM")
    if which == 11:  # the session-6 surface: spanning all-to-all, finite-run serving options
        return rng.choice([
            ("all_to_all", lambda: rl.all_to_all(a[0], a[1], hardware=hw,
                                                 ranks_per_node=a[2], network_bytes_per_s=(
                                                     a[3] if rng.random() < .5 else 50e9))),
            ("transformer.serve", lambda: rl.transformer.serve(
                "Llama-3-8B", "H100 SXM", prompt_len=128, output_len=16,
                num_requests=rng.choice([8, a[0]]),
                request_rate=rng.choice([None, 4.0, a[1]]),
                arrivals=rng.choice(["even", "poisson", a[2]]),
                mixed_prefill=rng.choice([None, False, a[3]]),
                overlap_schedule=rng.choice([None, True, a[4]]),
                sustained_clock=rng.choice([None, True, a[5]]))),
            ("transformer.estimate", lambda: rl.transformer.estimate(
                "Llama-3-8B", "decode", rng.choice([8, a[0]]), kv_len=1024,
                hardware="H100 SXM", sustained=rng.choice([True, a[1]]))),
        ])
    if which == 12:
        kw = {k: a[i] if rng.random() < 0.5 else rng.choice(SIZES) for i, k in enumerate(
            rng.sample(["dp", "pp", "tp", "cp", "grad_accum", "micro_batch", "virtual_stages"],
                       3))}
        kw.update({k: _arg(rng) for k in rng.sample(["latency_s", "link_bytes_per_s",
                                                      "network_bytes_per_s", "zero",
                                                      "recompute"], rng.randrange(2))})
        phase = rng.choice(["train", "prefill", "decode"])
        sizes = ({"kv_len": _arg(rng)} if phase == "decode" else {"seq_len": _arg(rng)})
        if phase != "train":
            kw = {k: v for k, v in kw.items() if k in ("tp", "latency_s", "link_bytes_per_s")}
        return "transformer.estimate", lambda: rl.transformer.estimate(
            "Llama-3-8B", phase, _arg(rng), hardware="H100 SXM", **sizes, **kw)
    if which == 13:
        return "transformer.serve", lambda: rl.transformer.serve(
            "Llama-3-8B", "H100 SXM", batches=[_arg(rng) for _ in range(rng.randrange(1, 3))],
            prompt_len=rng.choice([128, 2048, _arg(rng)]), output_len=rng.choice([64, a[5]]))
    if which == 14:
        return "transformer.plan", lambda: rl.transformer.plan(
            "Llama-3-8B", rng.choice([8, a[0]]), "H100 SXM",
            seq_len=rng.choice([2048, a[1]]), micro_batches=(rng.choice([1, 2, a[2]]),))
    if which == 15:
        return "Profile", lambda: _profile(rng, a)
    if which == 16:
        return "fusion", lambda: rng.choice([
            lambda: rl.fusion.batch_gemms(64, 64, 64, a[0], hardware="H100 SXM"),
            lambda: rl.fusion.horizontal_fusion(64, 64, [64] * min(int(a[1]) if isinstance(
                a[1], int) and not isinstance(a[1], bool) and a[1] < 10**6 else 3, 10**6),
                hardware="H100 SXM"),
            lambda: rl.fusion.epilogue_fusion(64, 64, 64, extra_inputs=a[2],
                                              hardware="H100 SXM")])()
    if which == 17:
        return "profile file", lambda: _profile_file(rng, a)
    return "set_num_threads", lambda: rl.set_num_threads(a[0])


#: Paths a profile's ``fitted`` patch may set (and some it may not).
PROFILE_PATHS = [("compute_fraction", "bf16"), ("compute_fraction", "fp8"),
                 ("compute_fraction", "bf17"), ("params", "memory_fraction"),
                 ("params", "memory_latency_s"), ("params", "overlap_p"), ("params", "nope"),
                 ("gemm", "terms", "latency_s"), ("gemm", "compute_scale", "H100 SXM", "bf16"),
                 ("gemm",), ("attention", "flash_fraction"),
                 ("attention", "universal", "efficient", "ratio"),
                 ("host", "terms", "eager_launch_s"), ("cast", "universal", "amax_fraction"),
                 ("row_ops", "universal", "aten_reread"), ("bogus",)]


def _profile(rng: random.Random, a: list[Any]) -> Any:
    """A Profile with a random patch; accepted ones must price at or above the datasheet."""
    import dataclasses

    import roofline as rl
    from roofline.hardware.profile import Profile

    hw = rl.hardware("H100 SXM")
    fitted: dict[str, Any] = {}
    for i in range(rng.randrange(1, 4)):
        path = rng.choice(PROFILE_PATHS)
        node = fitted
        for k in path[:-1]:
            node = node.setdefault(k, {}) if isinstance(node.get(k, {}), dict) else {}
        node[path[-1]] = a[i] if rng.random() < 0.5 else rng.choice([0.3, 0.9, 1.0, 2.0, 5e-6])
    prof = Profile(**{f.name: getattr(hw, f.name) for f in dataclasses.fields(type(hw))},
                   fitted=fitted)
    t = rl.gemm(4096, 4096, 4096, hardware=prof)
    floor = rl.gemm(4096, 4096, 4096, hardware=hw, efficiency="peak").time_s
    if not t.time_s >= floor * (1 - 1e-12):
        raise AssertionError(f"profile {fitted} prices gemm below the datasheet")  # a crash
    return t


def _profile_file(rng: random.Random, a: list[Any]) -> Any:
    """A hostile profile file: deep nesting, non-UTF-8 bytes, NaN, wrong shapes."""
    import json
    import os
    import tempfile

    from roofline.hardware.profile import load_profile

    body = rng.choice([
        b"[" * 50_000 + b"]" * 50_000,
        b'{"name": "' + bytes([0xFF, 0xFE]) + b'"}',
        b'{"name": "x", "fitted": {"params": {"memory_fraction": NaN}}}',
        json.dumps({"name": "H100 SXM", "fitted": {"gemm": a[0]}}, default=str).encode(),
        json.dumps({"fitted": a[1]}, default=str).encode(),
        b'{"fitted": {"params": {"overlap_p": ' + b"9" * 5000 + b"}}}",
    ])
    fd, path = tempfile.mkstemp(suffix=".json")
    try:
        os.write(fd, body)
        os.close(fd)
        return load_profile(path)
    finally:
        os.unlink(path)


#: Prefix the message of a named error must start with, per call kind (others: any).
PREFIX = {"transformer.estimate": "transformer.estimate:", "transformer.serve":
          "transformer.", "transformer.plan": "transformer.plan:", "Profile": "Profile:",
          "fusion": "fusion.", "profile file": "profile:", **_fuzz_surface.PREFIX}


def _worker(seed: int, n: int, queue: Any, surface: str = "all") -> None:
    import numpy as np

    from roofline.hardware import HardwareNotSpecifiedError  # the documented "no hardware"

    rng = random.Random(seed)
    for _ in range(n):
        name, fn = _call(rng, surface)
        queue.put(("start", name, ""))
        try:
            out = fn()
        except (ValueError, TypeError, LookupError, HardwareNotSpecifiedError,
                NotImplementedError) as exc:  # the last: a documented, named refusal
            text = str(exc)
            odd = "incompatible function arguments" in text or "Invoked with" in text or (
                name in PREFIX and not text.startswith(PREFIX[name]))
            queue.put(("odd error" if odd else "named error", name, f"{type(exc).__name__}: "
                       f"{text[:120]}"))
            continue
        except _fuzz_surface.BadResult as exc:
            queue.put(("bad result", name, str(exc)[:160]))
            continue
        except BaseException as exc:  # noqa: BLE001 - the point is to count these
            queue.put(("crash", name, f"{type(exc).__name__}: {str(exc)[:120]}"))
            continue
        t = getattr(out, "time_s", getattr(out, "fp8_s", None))
        if t is not None and not (np.all(np.isfinite(t)) and np.all(np.asarray(t) >= 0)):
            queue.put(("bad result", name, repr(t)[:120]))
        else:
            queue.put(("ok", name, ""))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--calls", type=int, default=2000)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--timeout", type=float, default=5.0, help="seconds per call")
    p.add_argument("--surface", choices=("all", "old", "new"), default="all",
                   help="which calls to draw (new: the surface sessions 7-8 added)")
    p.add_argument("--show", type=int, default=6, help="examples printed per kind")
    p.add_argument("--named", action="store_true", help="print named errors' examples too")
    args = p.parse_args(argv)
    ctx = mp.get_context("fork")
    counts: Counter[str] = Counter()
    examples: dict[str, list[str]] = {}
    done, seed, current = 0, args.seed, "?"
    while done < args.calls:
        queue = ctx.Queue()
        proc = ctx.Process(target=_worker, args=(seed, args.calls - done, queue, args.surface),
                           daemon=True)
        proc.start()
        while done < args.calls:
            try:
                kind, name, text = queue.get(timeout=args.timeout)
                if kind == "start":
                    current = name
                    continue
            except Exception:  # noqa: BLE001 - queue.Empty: the call hangs (or the worker died)
                kind, name = ("hang" if proc.is_alive() else "crash"), current
                text = f"no answer in {args.timeout} s"
                proc.kill()
                done += 1
                counts[kind] += 1
                examples.setdefault(kind, []).append(f"{name}: {text}")
                break
            done += 1
            counts[kind] += 1
            if kind != "ok" and (kind != "named error" or args.named):
                examples.setdefault(kind, []).append(f"{name}: {text}")
        else:
            proc.kill()
        seed += 1_000_003
    bad = sum(counts[k] for k in ("crash", "odd error", "bad result", "hang"))
    print(f"calls {done}: ok {counts['ok']}, named errors {counts['named error']}, "
          f"crashes {counts['crash']}, odd errors {counts['odd error']}, "
          f"bad results {counts['bad result']}, hangs {counts['hang']}")
    for kind, lines in examples.items():
        for line in sorted(set(lines))[:args.show]:
            print(f"  {kind}: {line}")
    return 0 if bad == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
