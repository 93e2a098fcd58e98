"""Seconds of ``roofline.torch.estimate`` on a Llama-3-70B-shaped model, after torch is
imported, with ``dedupe`` off and on.

The model is HF ``LlamaForCausalLM`` built from a ``LlamaConfig`` on the meta device (80
layers, hidden 8192, FFN 28672, 64 heads / 8 KV heads, vocabulary 128256), bf16, one sequence
of ``--tokens`` tokens, ``mode="train"``; without ``transformers``, a hand-written stack of
pre-norm decoder blocks of the same shapes. Prints the best of ``--repeat`` runs, the
recorded kernels and the step's GPU time (the same for both settings).

Run: ``python benchmarks/torch_estimate_speed.py [--layers 80] [--tokens 8192] [--repeat 2]``
(``--profile`` prints the top of a cProfile of one ``dedupe=True`` run). ``--against DIR``
times another checkout's package (``DIR`` holds its ``roofline``, e.g. ``/tmp/old/python``)
side by side: each round runs both in fresh processes, one after the other, and the table
gives each one's best and the ratio, so a shared machine's load weighs on both alike.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
import warnings
from typing import Any


def _hf(layers: int) -> Any:
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    cfg = LlamaConfig(hidden_size=8192, intermediate_size=28672, num_hidden_layers=layers,
                      num_attention_heads=64, num_key_value_heads=8, vocab_size=128256,
                      max_position_embeddings=8192)
    with torch.device("meta"):
        return LlamaForCausalLM(cfg).to(torch.bfloat16), "HF LlamaForCausalLM"


def _blocks(layers: int) -> Any:
    import torch
    from torch import nn

    class Block(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            h, f = 8192, 28672
            self.n1, self.n2 = nn.RMSNorm(h), nn.RMSNorm(h)
            self.qkv = nn.Linear(h, h + 2 * 1024, bias=False)
            self.o = nn.Linear(h, h, bias=False)
            self.up = nn.Linear(h, 2 * f, bias=False)
            self.down = nn.Linear(f, h, bias=False)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            b, t, h = x.shape
            q, k, v = self.qkv(self.n1(x)).split([h, 1024, 1024], dim=-1)
            q = q.view(b, t, 64, 128).transpose(1, 2)
            k = k.view(b, t, 8, 128).transpose(1, 2).repeat_interleave(8, dim=1)
            v = v.view(b, t, 8, 128).transpose(1, 2).repeat_interleave(8, dim=1)
            a = nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
            x = x + self.o(a.transpose(1, 2).reshape(b, t, h))
            g, u = self.up(self.n2(x)).chunk(2, dim=-1)
            return x + self.down(nn.functional.silu(g) * u)

    class Model(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.emb = nn.Embedding(128256, 8192)
            self.layers = nn.ModuleList(Block() for _ in range(layers))
            self.head = nn.Linear(8192, 128256, bias=False)

        def forward(self, ids: torch.Tensor) -> torch.Tensor:
            x = self.emb(ids)
            for blk in self.layers:
                x = blk(x)
            return self.head(x)

    with torch.device("meta"):
        return Model().to(torch.bfloat16), "hand-written block stack"


def _side_by_side(args: argparse.Namespace) -> None:
    """Best seconds of this checkout's package and of ``args.against``'s, run alternately."""
    here = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python")
    paths = {"before": os.path.abspath(args.against), "after": os.path.abspath(here)}
    best: dict[tuple[str, bool], float] = {}
    facts: dict[str, Any] = {}
    for _ in range(args.repeat):
        for label, path in paths.items():
            env = {**os.environ, "PYTHONPATH": path}
            cmd = [sys.executable, os.path.abspath(__file__), "--layers", str(args.layers),
                   "--tokens", str(args.tokens), "--repeat", "1", "--json"]
            got = json.loads(subprocess.run(cmd, env=env, check=True, capture_output=True,
                                            text=True).stdout.strip().splitlines()[-1])
            for d, t in got["seconds"].items():
                best[label, d == "True"] = min(best.get((label, d == "True"), 1e300), t)
            facts[label] = (got["kernels"], got["gpu_ms"])
    print(f"{args.layers} layers, {args.tokens} tokens, train, H100 SXM; best of {args.repeat} "
          "alternating rounds")
    print(f"{'dedupe':<8} {'before s':>9} {'after s':>9} {'ratio':>7}")
    for dd in (False, True):
        b, a = best["before", dd], best["after", dd]
        print(f"{dd!s:<8} {b:9.2f} {a:9.2f} {b / a:6.1f}x")
    for label, (k, ms) in facts.items():
        print(f"{label}: {k} kernels, {ms:.2f} GPU ms")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--layers", type=int, default=80)
    parser.add_argument("--tokens", type=int, default=8192)
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--against", help="another checkout's python/ directory")
    parser.add_argument("--json", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.against:
        _side_by_side(args)
        return
    warnings.filterwarnings("ignore")
    import torch

    import roofline.torch as rlt

    try:
        model, what = _hf(args.layers)
    except ImportError:
        model, what = _blocks(args.layers)
    ids = torch.zeros(1, args.tokens, dtype=torch.long, device="meta")
    if not args.json:
        print(f"{what}, {args.layers} layers, {args.tokens} tokens, train, H100 SXM")
        print(f"{'dedupe':<8} {'best s':>8} {'kernels':>8} {'GPU ms':>10}")
    seconds: dict[str, float] = {}
    for dedupe in (False, True):
        best = float("inf")
        rep: Any = None
        for _ in range(args.repeat):
            t0 = time.perf_counter()
            rep = rlt.estimate(model, ids, hardware="H100 SXM", mode="train", dedupe=dedupe)
            best = min(best, time.perf_counter() - t0)
        seconds[str(dedupe)] = best
        if not args.json:
            print(f"{dedupe!s:<8} {best:8.2f} {len(rep.records):8d} {rep.time_s * 1e3:10.2f}")
    if args.json:
        print(json.dumps({"seconds": seconds, "kernels": len(rep.records),
                          "gpu_ms": rep.time_s * 1e3}))
    if args.profile:
        import cProfile
        import pstats

        prof = cProfile.Profile()
        prof.runcall(rlt.estimate, model, ids, hardware="H100 SXM", mode="train")
        pstats.Stats(prof).sort_stats("tottime").print_stats(15)


if __name__ == "__main__":
    main()
