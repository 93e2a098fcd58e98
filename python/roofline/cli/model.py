"""``roofline model``: one decode / prefill / training step of a transformer, op by op.

``add_parser(sub)`` adds it to the ``roofline`` parser (it sets ``func=run``).
"""

from __future__ import annotations

import argparse
from typing import Any

from .._format import si
from ..transformer.report import COLUMNS
from ._common import (
    FALLBACK_HARDWARE,
    CLIError,
    count,
    literal,
    make_console,
    meta,
    print_json,
    resolve_hardware,
    write_csv,
)

__all__ = ["add_parser", "run"]

#: Largest --batch / --seq-len / --kv-len / --q-len (2**31 tokens; far beyond any model's
#: context, and small enough that every tensor's element count stays exact in a float64).
MAX_TOKENS = 2**31

_PHASES = {"train": "train", "training": "train", "decode": "decode", "inference": "decode",
           "prefill": "prefill"}


def _phase(text: str) -> str:
    return _PHASES.get(text.strip().lower(), text)


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add the ``model`` subcommand to an ``argparse`` subparsers object; returns its parser."""
    from ..transformer import list_configs

    p: argparse.ArgumentParser = subparsers.add_parser(
        "model",
        help="one decode / prefill / training step of a transformer, per op, with memory",
        description="Estimate one step of a built-in transformer (or a Hugging Face "
        "config.json) on one GPU: per-op table (summed over layers), totals and memory.",
    )
    p.add_argument("name", metavar="MODEL",
                   help=f"built-in ({', '.join(list_configs())}) or a path to a config.json")
    p.add_argument("--phase", type=_phase, choices=("decode", "prefill", "train"),
                   default="decode",
                   help="decode, prefill or train (also: training; inference = decode); "
                   "default: %(default)s")
    p.add_argument("--batch", type=count("--batch", MAX_TOKENS), default=1,
                   help="sequences per GPU / tp group")
    p.add_argument("--seq-len", type=count("--seq-len", MAX_TOKENS), default=None,
                   help="prefill / train sequence length")
    p.add_argument("--kv-len", type=count("--kv-len", MAX_TOKENS), default=None,
                   help="decode: cached tokens + q_len")
    p.add_argument("--q-len", type=count("--q-len", MAX_TOKENS), default=1,
                   help="decode: new tokens per sequence")
    p.add_argument("--tp", type=count("--tp", 2**20), default=1, help="tensor parallelism")
    p.add_argument("--ep", type=count("--ep", 2**20), default=1, help="expert parallelism")
    p.add_argument("--linear-recipe", default=None,
                   help="run linears as rl.float8.linear with this recipe (e.g. blockwise), "
                   "or weight-only (w4a16, w8a16, w4a16_g128_zp: rl.weight_only_gemm)")
    p.add_argument("--hardware", default=None,
                   help="accelerator; default: the detected GPU, else "
                   f"{FALLBACK_HARDWARE['roofline']}")
    p.add_argument("--efficiency", default="default",
                   help="default, constant, peak or torchao; default: %(default)s")
    p.add_argument("--per-layer", action="store_true",
                   help="one row per (layer, op) instead of ops summed over layers")
    p.add_argument("--format", choices=("table", "csv", "json"), default="table",
                   help="default: table")
    p.set_defaults(func=run)
    return p


def run(args: argparse.Namespace) -> int:
    """Run ``roofline model``; returns the exit status (library errors propagate)."""
    from pathlib import Path

    from .. import transformer

    name = args.name
    cfg = transformer.from_hf(name) if Path(name).exists() else transformer.config(name)
    hw = resolve_hardware(args.hardware, "roofline")
    try:
        r = transformer.estimate(
            cfg, args.phase, args.batch, seq_len=args.seq_len, kv_len=args.kv_len,
            q_len=args.q_len, hardware=hw, tp=args.tp, ep=args.ep,
            linear_recipe=args.linear_recipe, efficiency=args.efficiency,
        )
    except ValueError as exc:
        if "2**53" not in str(exc):
            raise
        sizes = "--batch x --seq-len" if args.phase != "decode" else "--batch x --kv-len"
        raise CLIError(f"{sizes} too large for {cfg.name}: a tensor of the step would hold "
                       "more than 2**53 elements; use smaller values") from None
    rows = _per_layer(r) if args.per_layer else _summary(r)
    columns = list(rows[0]) if rows else []
    if args.format == "csv":
        write_csv(rows, columns)
        return 0
    if args.format == "json":
        doc = {**meta(args, hw, model=cfg.name, phase=r.phase, batch=args.batch,
                      seq_len=args.seq_len, kv_len=args.kv_len, q_len=args.q_len, tp=args.tp,
                      ep=args.ep, recipe=args.linear_recipe),
               "totals": r.totals, "memory": r.memory, "ops": rows}
        print_json(doc)
        return 0
    _print_table(r, rows, args)
    return 0


def _ops(r: Any) -> list[dict[str, Any]]:
    """One row per op of each layer kind (as ``ModelEstimate.ops()``), without pandas."""
    bound = r._bound()
    out = []
    for i, (g, name, kind) in enumerate(r.rows):
        row: dict[str, Any] = {"block": r.groups[g][0], "layers": len(r.groups[g][1]) or 1,
                               "op": name, "kind": kind}
        row.update({c: float(r.columns[c][i]) for c in COLUMNS})
        row["bound"] = str(bound[i])
        out.append(row)
    return out


def _summary(r: Any) -> list[dict[str, Any]]:
    """``ModelEstimate.summary()`` as rows: ops summed over layers, slowest first."""
    merged: dict[tuple[str, str], dict[str, Any]] = {}
    for row in _ops(r):
        key = (row["op"], row["kind"])
        acc = merged.setdefault(key, {"op": row["op"], "kind": row["kind"],
                                      **{c: 0.0 for c in COLUMNS}})
        for c in COLUMNS:
            acc[c] += row[c] * row["layers"]
    total = r.time_s
    out = list(merged.values())
    for row in out:
        row["share"] = row["time_s"] / total
    out.sort(key=lambda row: -row["time_s"])  # stable, as pandas' sort
    return out


def _per_layer(r: Any) -> list[dict[str, Any]]:
    """``ModelEstimate.to_pandas()`` as rows: one per (layer, op)."""
    ops = _ops(r)
    out: list[dict[str, Any]] = []

    def add(layer: int, row: dict[str, Any]) -> None:
        out.append({"layer": layer, "block": row["block"], "op": row["op"],
                    "kind": row["kind"], **{c: row[c] for c in COLUMNS},
                    "bound": row["bound"]})

    head = [o for o in ops if o["block"] == "head"]
    for o in head:
        if o["op"] == "embedding":
            add(-1, o)
    for kind, layers in r.groups:
        if kind == "head":
            continue
        block = [o for o in ops if o["block"] == kind]
        for layer in layers:
            for o in block:
                add(layer, o)
    for o in head:
        if o["op"] != "embedding":
            add(r.config.num_layers, o)
    out.sort(key=lambda row: row["layer"])  # stable
    return out


def _print_table(r: Any, rows: list[dict[str, Any]], args: argparse.Namespace) -> None:
    from rich.table import Table

    table = Table(title=r.title, title_style="bold")
    lead = ["layer"] if args.per_layer else []
    for col in (*lead, "op", "kind"):
        table.add_column(col)
    last = "bound" if args.per_layer else "share"
    for col in ("time", "FLOPs", "DRAM / link bytes", last):
        table.add_column(col, justify="left" if col == "bound" else "right")
    style = {"compute": "green", "memory": "yellow", "overhead": "red"}
    for row in rows:
        cells = [literal(row["layer"])] if args.per_layer else []
        cells += [literal(row["op"]), literal(row["kind"]), literal(si(row["time_s"], "s")),
                  literal(si(row["flops"], "FLOP")), literal(si(row["bytes"], "B"))]
        if args.per_layer:
            cells.append(literal(row["bound"], style.get(row["bound"], "")))
        else:
            cells.append(literal(f"{100 * row['share']:.1f} %"))
        table.add_row(*cells)
    t, m = r.totals, r.memory
    console = make_console()
    console.print(table)
    console.print(literal(
        f"total {si(t['time_s'], 's')} per step (GPU; wall {si(t['wall_s'], 's')} {r.launch}), "
        f"{t['tokens_per_s']:,.0f} tokens/s, MFU {t['mfu']:.1%}; "
        f"memory per GPU: weights {si(m['weights_bytes'], 'B')}, KV cache "
        f"{si(m['kv_cache_bytes'], 'B')}, total {si(m['total_bytes'], 'B')}"))

