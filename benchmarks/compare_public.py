"""Two versions of the package give the same numbers through every public entry point.

A refactor must change no number. This script prices a fixed set of questions through the
public API only (so it runs unchanged on the code before and after a restructuring) and writes
every number it got, keyed by question; errors are recorded as their type and message, so both
versions must also refuse alike. It covers every public op (scalars and arrays, every preset),
``float8.linear`` and ``float8.sweep``, ``transformer.estimate`` / ``plan`` / ``serve``,
``roofline.torch.estimate`` of two modules (when torch is installed), ``trace.explain`` of the
two shared profiler traces, collectives, host wall times, fusion and the torchao compat layer.

    git stash  # or a worktree of the old commit, with its _core built
    PYTHONPATH=/tmp/old/python python benchmarks/compare_public.py dump /tmp/old.json
    PYTHONPATH=python python benchmarks/compare_public.py dump /tmp/new.json
    python benchmarks/compare_public.py compare /tmp/old.json /tmp/new.json

``compare`` prints each key whose values differ (relative difference above 0, i.e. bit for
bit) and a summary line ``N values, M differ``; it exits 1 when any differ.
"""

# ruff: noqa: B023  (each lambda runs at once, inside Recorder.__call__)
from __future__ import annotations

import json
import math
import sys
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

TRACES = Path("tests") / "data" / "traces"  # run from the repository root
HW = ["H100 SXM", "H200", "B200", "MI300X", "A100 SXM 80GB", "L4"]
PRESETS = ["default", "peak", "torchao"]


def _flat(value: Any) -> list[Any]:
    """Every number inside a result, in a stable order (floats, ints, bools, strings)."""
    import pandas as pd

    if value is None or isinstance(value, (bool, str)):
        return [value]
    if isinstance(value, (int, float, np.integer, np.floating)):
        return [float(value)]
    if isinstance(value, np.ndarray):
        if value.dtype.kind in "fiub":
            return [float(x) for x in value.ravel()]
        return [str(x) for x in value.ravel()]
    if isinstance(value, pd.DataFrame):
        out: list[Any] = [list(map(str, value.columns))]
        for col in value.columns:
            out += _flat(value[col].to_numpy())
        return out
    if isinstance(value, pd.Series):
        return _flat(value.to_numpy())
    if isinstance(value, dict):
        return [x for k in sorted(value, key=str) for x in [str(k), *_flat(value[k])]]
    if isinstance(value, (list, tuple)):
        return [x for v in value for x in _flat(v)]
    # result objects: their public numeric attributes
    out = []
    for name in sorted(dir(value)):
        if name.startswith("_"):
            continue
        try:
            attr = getattr(value, name)
        except Exception:  # noqa: BLE001 - a property may refuse; skip it
            continue
        if callable(attr):
            continue
        if isinstance(attr, (bool, int, float, str, np.ndarray, np.integer, np.floating)):
            out += [name, *_flat(attr)]
    return out


class Recorder:
    def __init__(self) -> None:
        self.out: dict[str, list[Any]] = {}

    def __call__(self, key: str, fn: Callable[[], Any]) -> None:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                self.out[key] = _flat(fn())
        except Exception as exc:  # noqa: BLE001 - recorded: both versions must refuse alike
            self.out[key] = [f"{type(exc).__name__}: {exc}"]


def ops(rec: Recorder) -> None:
    import roofline as rl

    rng = np.random.default_rng(7)
    m, k, n = (np.exp(rng.uniform(0, np.log(40000), 400)).round() + 1 for _ in range(3))
    rows = np.exp(rng.uniform(0, np.log(200000), 300)).round() + 1
    cols = np.exp(rng.uniform(0, np.log(150000), 300)).round() + 1
    for hw in HW:
        for eff in PRESETS:
            key = f"{hw}|{eff}"
            for dt in ("bf16", "fp8", "fp32", "tf32"):
                rec(f"gemm|{key}|{dt}", lambda: rl.gemm(m, k, n, dtype=dt, hardware=hw,
                                                         efficiency=eff))
            rec(f"gemm-scalar|{key}", lambda: rl.gemm(4096, 4096, 4096, hardware=hw,
                                                       efficiency=eff))
            rec(f"grouped|{key}", lambda: rl.grouped_gemm(m[:50], 2048, 1408, groups=64,
                                                          dtype="fp8", hardware=hw,
                                                          efficiency=eff))
            rec(f"elementwise|{key}", lambda: rl.elementwise(rows * cols, reads=2, writes=1,
                                                             hardware=hw, efficiency=eff))
            for be in ("fused", "eager", "compiled"):
                for fname in ("rmsnorm", "layernorm", "softmax", "cross_entropy"):
                    f = getattr(rl, fname)
                    for bwd in (False, True):
                        rec(f"{fname}|{key}|{be}|{bwd}",
                            lambda: f(rows, cols, backend=be, backward=bwd, hardware=hw,
                                      efficiency=eff))
            for be in ("auto", "flash", "cudnn", "efficient", "math"):
                for causal in (False, True):
                    for bwd in (False, True):
                        rec(f"attention|{key}|{be}|{causal}|{bwd}",
                            lambda: rl.attention(np.array([1, 4, 16]), 32,
                                                 np.array([1, 512, 4096]),
                                                 np.array([4096, 512, 4096]), 128, kv_heads=8,
                                                 causal=causal, backward=bwd, backend=be,
                                                 hardware=hw, efficiency=eff))
            rec(f"mla|{key}", lambda: rl.attention(8, 128, 1, 8192, 576, kv_heads=1,
                                                   v_head_dim=512, shared_kv=True, hardware=hw,
                                                   efficiency=eff))
        rec(f"collectives|{hw}", lambda: [
            rl.all_reduce(2**28, 8, hardware=hw), rl.all_gather(2**26, 64, hardware=hw),
            rl.reduce_scatter(2**27, 16, hardware=hw), rl.all_to_all(2**25, 8, hardware=hw),
            rl.send_recv(2**24, hardware=hw)])
        rec(f"launch|{hw}", lambda: [rl.launch_overhead(np.array([1, 10, 1000]), mode,
                                                        hardware=hw)
                                     for mode in ("eager", "compiled", "graph")])
        rec(f"wall|{hw}", lambda: [rl.wall_time([float(rl.gemm(1024, 1024, 1024, hardware=hw)
                                                      .time_s)] * 5, mode, hardware=hw)
                                   for mode in ("eager", "compiled", "graph")])
        rec(f"explain|{hw}", lambda: rl.explain(rl.gemm(8192, 8192, 8192, hardware=hw), 2e-3))


def float8(rec: Recorder) -> None:
    import roofline as rl

    rng = np.random.default_rng(11)
    m, k, n = (np.exp(rng.uniform(0, np.log(40000), 300)).round() + 1 for _ in range(3))
    for hw in ("H100 SXM", "H200", "B200", "MI300X"):
        for recipe in ("tensorwise", "rowwise", "rowwise_with_gw_hp", "mxfp8_cublas", "nvfp4",
                       "blockwise"):
            for mode in ("training", "inference"):
                for eff in PRESETS:
                    rec(f"f8|{hw}|{recipe}|{mode}|{eff}",
                        lambda: rl.float8.linear(m, k, n, recipe=recipe, hardware=hw,
                                                 mode=mode, efficiency=eff))
                rec(f"f8scalar|{hw}|{recipe}|{mode}",
                    lambda: rl.float8.linear(4096, 4096, 4096, recipe=recipe, hardware=hw,
                                             mode=mode))
            rec(f"f8sweep|{hw}|{recipe}",
                lambda: rl.float8.sweep(shapes="pow2", recipe=recipe, hardware=hw))


def transformer(rec: Recorder) -> None:
    import roofline as rl

    models = rl.transformer.list_configs()
    for model in models:
        for hw in ("H100 SXM", "B200", "MI300X"):
            for phase, kw in (("decode", {"batch": 16, "kv_len": 4096}),
                              ("prefill", {"batch": 2, "seq_len": 4096}),
                              ("train", {"batch": 1, "seq_len": 4096, "tp": 8}),
                              ("train", {"batch": 1, "seq_len": 8192, "dp": 8, "zero": 3,
                                         "recompute": "full", "grad_accum": 4})):
                rec(f"tf|{model}|{hw}|{phase}|{sorted(kw.items())}",
                    lambda: rl.transformer.estimate(model, phase, hardware=hw, **kw))
        rec(f"tf-fp8|{model}", lambda: rl.transformer.estimate(
            model, "train", 1, seq_len=4096, hardware="H100 SXM", tp=8,
            linear_recipe="tensorwise"))
    rec("plan|70b", lambda: rl.transformer.plan("Llama-3-70B", gpus=64, hardware="H100 SXM",
                                                seq_len=8192, global_batch_tokens=2**21))
    rec("plan|8b", lambda: rl.transformer.plan("Llama-3-8B", gpus=8, hardware="H100 SXM"))
    rec("plan|mixtral", lambda: rl.transformer.plan("Mixtral-8x7B", gpus=16, hardware="H100 SXM"))
    rec("plan|serve", lambda: rl.transformer.plan("Llama-3-8B", gpus=1, hardware="H100 SXM",
                                                  phase="serve"))
    for model in ("Llama-3-8B", "Llama-3-70B", "DeepSeek-V3", "Qwen3-30B-A3B"):
        rec(f"serve|{model}", lambda: rl.transformer.serve(model, "H100 SXM", tp=8))


def torch_modules(rec: Recorder) -> None:
    try:
        import torch
        from torch import nn
        from torch.nn import functional as F
    except ImportError:
        return
    import roofline.torch as rlt

    class Block(nn.Module):
        def __init__(self, d: int = 1024, heads: int = 16, kv_heads: int = 4,
                     hidden: int = 2816) -> None:
            super().__init__()
            self.heads, self.kv_heads, self.hd = heads, kv_heads, d // heads
            self.emb = nn.Embedding(32000, d)
            self.n1 = nn.RMSNorm(d)
            self.q = nn.Linear(d, d, bias=False)
            self.kv = nn.Linear(d, 2 * kv_heads * self.hd, bias=False)
            self.o = nn.Linear(d, d, bias=False)
            self.n2 = nn.RMSNorm(d)
            self.gate = nn.Linear(d, hidden, bias=False)
            self.up = nn.Linear(d, hidden, bias=False)
            self.down = nn.Linear(hidden, d, bias=False)
            self.head = nn.Linear(d, 32000, bias=False)

        def forward(self, ids: Any) -> Any:
            x = self.emb(ids)
            b, s, d = x.shape
            h = self.n1(x)
            q = self.q(h).view(b, s, self.heads, self.hd).transpose(1, 2)
            k, v = self.kv(h).view(b, s, 2, self.kv_heads, self.hd).unbind(2)
            k, v = k.transpose(1, 2), v.transpose(1, 2)
            a = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
            x = x + self.o(a.transpose(1, 2).reshape(b, s, d))
            h = self.n2(x)
            x = x + self.down(F.silu(self.gate(h)) * self.up(h))
            x = torch.cat([x, x[:, :1]], dim=1)
            return F.cross_entropy(self.head(x).flatten(0, 1).float(),
                                   torch.zeros(b * (s + 1), dtype=torch.long, device=x.device))

    class MLP(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.up = nn.Linear(4096, 14336)
            self.down = nn.Linear(14336, 4096)
            self.ln = nn.LayerNorm(4096)

        def forward(self, x: Any) -> Any:
            return self.ln(self.down(F.gelu(self.up(x))).softmax(-1))

    with torch.device("meta"):
        block = Block().to(torch.bfloat16)
        mlp = MLP().to(torch.bfloat16)
    ids = torch.zeros(4, 512, dtype=torch.long, device="meta")
    x = torch.empty(8, 1024, 4096, dtype=torch.bfloat16, device="meta")
    for hw in ("H100 SXM", "B200"):
        for train in (False, True):
            mode = "train" if train else "inference"
            for name, mod, inp in (("block", block, ids), ("mlp", mlp, x)):
                rec(f"torch|{name}|{hw}|{train}",
                    lambda: _torch_numbers(rlt.estimate(mod, inp, hardware=hw, mode=mode)))


def _torch_numbers(r: Any) -> list[Any]:
    return [r.to_pandas(), r.by_op(), r.time_s, r.wall_s]


def traces(rec: Recorder) -> None:
    import roofline as rl

    for path in sorted(TRACES.glob("*.json.gz")):
        for hw in ("H100 SXM", "H200"):
            def run(path: Path = path, hw: str = hw) -> Any:
                rep = rl.trace.explain(str(path), hardware=hw)
                return [rep.measured_s, rep.predicted_s, rep.kernels(), rep.by_op(),
                        rep.by_module(), rep.losses()]
            rec(f"trace|{path.name}|{hw}", run)


def misc(rec: Recorder) -> None:
    import roofline as rl
    import roofline.compat.torchao as tao

    rec("hardware", lambda: [[rl.hardware(h).to_dict() for h in rl.list_hardware()]])
    rec("torchao", lambda: tao.get_gemm_time_sympy(4096, 4096, 4096, "bf16", None, None,
                                                   "NVIDIA H100"))
    from roofline import fusion

    rec("fusion", lambda: fusion.batch_gemms(64, 4096, 4096, 8, hardware="H100 SXM")
        if hasattr(fusion, "batch_gemms") else 0)


def dump(path: str) -> None:
    rec = Recorder()
    for part in (ops, float8, transformer, torch_modules, traces, misc):
        part(rec)
    Path(path).write_text(json.dumps(rec.out))
    print(f"{sum(len(v) for v in rec.out.values())} values under {len(rec.out)} keys -> {path}")


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return a == b or (math.isnan(a) and math.isnan(b))
    return bool(a == b)


def compare(old_path: str, new_path: str) -> int:
    old = json.loads(Path(old_path).read_text())
    new = json.loads(Path(new_path).read_text())
    total = differ = 0
    for key in sorted(set(old) | set(new)):
        a, b = old.get(key), new.get(key)
        if a is None or b is None:
            print(f"only in {'new' if a is None else 'old'}: {key}")
            differ += 1
            continue
        total += max(len(a), len(b))
        bad = len(a) != len(b) or not all(_same(x, y) for x, y in zip(a, b, strict=True))
        if bad:
            n_bad = abs(len(a) - len(b)) + sum(
                not _same(x, y) for x, y in zip(a, b, strict=False))
            differ += n_bad
            show = next(((x, y) for x, y in zip(a, b, strict=False) if not _same(x, y)),
                        (len(a), len(b)))
            print(f"differs: {key}: {n_bad} values, first {show[0]!r} -> {show[1]!r}")
    print(f"{total} values, {differ} differ")
    return 1 if differ else 0


if __name__ == "__main__":
    if len(sys.argv) >= 3 and sys.argv[1] == "dump":
        dump(sys.argv[2])
    elif len(sys.argv) == 4 and sys.argv[1] == "compare":
        sys.exit(compare(sys.argv[2], sys.argv[3]))
    else:
        print(__doc__)
        sys.exit(2)
