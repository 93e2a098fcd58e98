"""The three "done" figures of issue #13 §1, in one printout.

1. ``roofline float8`` wall time with ROOFLINE_HARDWARE set (fresh interpreter, median / min).
2. ``rl.gemm(4096, 4096, 4096, hardware=hw)`` per call, in µs (best / median of repeats),
   beside ``rl.float8.linear`` and ``rl.attention``.
3. The default shape-aware model sweeping training float8 linears (tensorwise, H100 SXM,
   random shapes in [256, 65536]^3), in M linears/s, all threads and one thread.
4. ``roofline.torch.estimate`` of a 32-layer Llama-3-8B (bf16, meta tensors, 1 x 8192 tokens,
   training step) when torch is installed.

The CLI runs with the bytecode cache a user has (``PYTHONDONTWRITEBYTECODE`` removed from its
environment, one warm-up run first): with it set, every run recompiles every module.

Run: ``PYTHONPATH=python python benchmarks/speed_figures.py``. Timings vary with the load of
the (shared, 2-core) machine: the minimum is the cost, the median what one waits.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time
import timeit
from pathlib import Path

import numpy as np

import roofline as rl

ROOT = Path(__file__).resolve().parents[1]


def cli_float8(repeat: int = 7) -> tuple[float, float]:
    env = {**os.environ, "ROOFLINE_HARDWARE": "H100 SXM",
           "PYTHONPATH": str(ROOT / "python") + os.pathsep + os.environ.get("PYTHONPATH", "")}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    times = []
    for _ in range(repeat + 1):
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-m", "roofline", "float8"], env=env, check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        times.append(time.perf_counter() - t0)
    times = times[1:]  # the warm-up wrote the bytecode cache
    return statistics.median(times), min(times)


def per_call_us(stmt: str, env: dict[str, object], number: int = 5000) -> tuple[float, float]:
    runs = [t / number * 1e6 for t in timeit.repeat(stmt, globals=env, number=number, repeat=7)]
    return min(runs), statistics.median(runs)


def sweep_rate(points: int, threads: int, efficiency: str = "default") -> float:
    rng = np.random.default_rng(0)
    s = np.exp(rng.uniform(np.log(256), np.log(65536), size=(points, 3))).round()
    m, k, n = (np.ascontiguousarray(s[:, i]) for i in range(3))
    hw = rl.hardware("H100 SXM")
    rl.set_num_threads(threads)
    best = float("inf")
    for _ in range(3):
        t0 = time.perf_counter()
        rl.float8.linear(m, k, n, "tensorwise", hw, efficiency=efficiency)
        best = min(best, time.perf_counter() - t0)
    rl.set_num_threads(0)
    return points / best / 1e6


def torch_llama(repeat: int = 3) -> float | None:
    """Best wall time of roofline.torch.estimate on a 32-layer Llama-3-8B (None without torch)."""
    try:
        import torch
        from torch import nn
        from torch.nn import functional as F

        import roofline.torch as rlt
    except ImportError:
        return None

    class Block(nn.Module):
        def __init__(self, d: int = 4096, heads: int = 32, kv: int = 8, hidden: int = 14336):
            super().__init__()
            self.heads, self.kv_heads, self.hd = heads, kv, d // heads
            self.attn_norm, self.mlp_norm = nn.RMSNorm(d), nn.RMSNorm(d)
            self.q = nn.Linear(d, d, bias=False)
            self.kv = nn.Linear(d, 2 * kv * self.hd, bias=False)
            self.o = nn.Linear(d, d, bias=False)
            self.gate = nn.Linear(d, hidden, bias=False)
            self.up = nn.Linear(d, hidden, bias=False)
            self.down = nn.Linear(hidden, d, bias=False)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            b, s, d = x.shape
            h = self.attn_norm(x)
            q = self.q(h).view(b, s, self.heads, self.hd).transpose(1, 2)
            k, v = self.kv(h).view(b, s, 2, self.kv_heads, self.hd).unbind(2)
            a = F.scaled_dot_product_attention(q, k.transpose(1, 2), v.transpose(1, 2),
                                               is_causal=True, enable_gqa=True)
            x = x + self.o(a.transpose(1, 2).reshape(b, s, d))
            h = self.mlp_norm(x)
            out: torch.Tensor = x + self.down(F.silu(self.gate(h)) * self.up(h))
            return out

    class Llama(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.emb = nn.Embedding(128256, 4096)
            self.layers = nn.ModuleList(Block() for _ in range(32))
            self.norm = nn.RMSNorm(4096)
            self.head = nn.Linear(4096, 128256, bias=False)

        def forward(self, tokens: torch.Tensor) -> torch.Tensor:
            x = self.emb(tokens)
            for layer in self.layers:
                x = layer(x)
            out: torch.Tensor = self.head(self.norm(x))
            return out

    with torch.device("meta"):
        model = Llama().to(torch.bfloat16)
    tokens = torch.zeros(1, 8192, dtype=torch.long, device="meta")
    hw = rl.hardware("H100 SXM")
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        rlt.estimate(model, tokens, hardware=hw)
        best = min(best, time.perf_counter() - t0)
    return best


def main() -> None:
    med, best = cli_float8()
    print(f"1. roofline float8, ROOFLINE_HARDWARE set: median {med:.3f} s, min {best:.3f} s "
          "(target < 0.5 s)")
    env: dict[str, object] = {"rl": rl, "hw": rl.hardware("H100 SXM")}
    for stmt in ("rl.gemm(4096, 4096, 4096, hardware=hw)",
                 "rl.float8.linear(4096, 4096, 4096, hardware=hw)",
                 "rl.attention(8, 32, 4096, 4096, 128, hardware=hw)"):
        lo, mid = per_call_us(stmt, env, 2000 if "attention" in stmt else 5000)
        print(f"2. {stmt:<52} best {lo:7.2f} µs, median {mid:7.2f} µs")
    print("   (target for rl.gemm: <= 5 µs)")
    for threads in (0, 1):
        rate = sweep_rate(1_000_000, threads)
        which = f"all {os.cpu_count()} threads" if threads == 0 else "1 thread"
        plain = sweep_rate(1_000_000, threads, "torchao")
        print(f"3. default-model training float8 linears, {which}: {rate:.2f} M/s "
              f"(target >= 10 M/s on 2 cores; the same call with torchao's plain model, "
              f"no search: {plain:.2f} M/s)")
    llama = torch_llama()
    if llama is not None:
        print(f"4. roofline.torch.estimate, Llama-3-8B (32 layers) training step: best "
              f"{llama:.3f} s (target <= 0.5 s)")


if __name__ == "__main__":
    main()
