"""``roofline model``: one decode / prefill / training step of a transformer, op by op.

Hooked into ``roofline.cli`` with ``_cli_model.add_parser(sub)`` (it sets ``func=run``).
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

__all__ = ["add_parser", "run"]



def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add the ``model`` subcommand to an ``argparse`` subparsers object; returns its parser."""
    from roofline.cli import FALLBACK_HARDWARE

    from .transformer import list_configs

    p: argparse.ArgumentParser = subparsers.add_parser(
        "model",
        help="one decode / prefill / training step of a transformer, per op, with memory",
        description="Estimate one step of a built-in transformer (or a Hugging Face "
        "config.json) on one GPU: per-op table (summed over layers), totals and memory.",
    )
    p.add_argument("name", metavar="MODEL",
                   help=f"built-in ({', '.join(list_configs())}) or a path to a config.json")
    p.add_argument("--phase", choices=("decode", "prefill", "train"), default="decode",
                   help="default: %(default)s")
    p.add_argument("--batch", type=int, default=1, help="sequences per GPU / tp group")
    p.add_argument("--seq-len", type=int, default=None, help="prefill / train sequence length")
    p.add_argument("--kv-len", type=int, default=None, help="decode: cached tokens + q_len")
    p.add_argument("--q-len", type=int, default=1, help="decode: new tokens per sequence")
    p.add_argument("--tp", type=int, default=1, help="tensor parallelism")
    p.add_argument("--ep", type=int, default=1, help="expert parallelism")
    p.add_argument("--linear-recipe", default=None,
                   help="run linears as rl.float8.linear with this recipe (e.g. blockwise)")
    p.add_argument("--hardware", default=None,
                   help="accelerator; default: the detected GPU, else "
                   f"{FALLBACK_HARDWARE['roofline']}")
    p.add_argument("--efficiency", default="default", help="default, peak or torchao")
    p.add_argument("--per-layer", action="store_true",
                   help="one row per (layer, op) instead of ops summed over layers")
    p.add_argument("--format", choices=("table", "csv", "json"), default="table",
                   help="default: table")
    p.set_defaults(func=run)
    return p


def run(args: argparse.Namespace) -> int:
    """Run ``roofline model``; returns the exit status (library errors propagate)."""
    from pathlib import Path

    from roofline.cli import _resolve_hardware

    from . import transformer

    name = args.name
    cfg = transformer.from_hf(name) if Path(name).exists() else transformer.config(name)
    hw = _resolve_hardware(args.hardware, "roofline")
    r = transformer.estimate(
        cfg, args.phase, args.batch, seq_len=args.seq_len, kv_len=args.kv_len,
        q_len=args.q_len, hardware=hw, tp=args.tp, ep=args.ep,
        linear_recipe=args.linear_recipe, efficiency=args.efficiency,
    )
    df = r.table() if args.per_layer else r.summary()
    if args.format == "csv":
        df.to_csv(sys.stdout, index=False)
        return 0
    if args.format == "json":
        doc = {"model": cfg.name, "hardware": hw.name, "phase": r.phase,
               "totals": r.totals, "memory": r.memory,
               "ops": json.loads(df.to_json(orient="records"))}
        print(json.dumps(doc, indent=2))
        return 0
    show = df.copy()
    show["time_us"] = show["time_s"] * 1e6
    show["GFLOP"] = show["flops"] / 1e9
    show["MB"] = show["bytes"] / 1e6
    cols = [c for c in ("layer", "op", "kind", "time_us", "GFLOP", "MB", "share", "bound")
            if c in show.columns]
    print(r)
    print(show[cols].to_string(index=False, float_format=lambda v: f"{v:,.3f}"))
    t = r.totals
    m = r.memory
    print(f"\ntotal {t['time_s'] * 1e3:.3f} ms, {t['tokens_per_s']:,.0f} tokens/s, "
          f"MFU {t['mfu']:.1%}; memory per GPU: weights {m['weights_bytes'] / 1e9:.2f} GB, "
          f"KV cache {m['kv_cache_bytes'] / 1e9:.2f} GB, total {m['total_bytes'] / 1e9:.2f} GB")
    return 0
