"""Published Blackwell (sm100 / sm103) attention kernel figures against the model's price
(issue #24, session 13): ``data/published/blackwell_attention.jsonl``.

The file holds, one figure a row with its source (repository, file, commit or URL):

- cudnn-frontend's SDPA training benchmark at cuDNN 9.22 (@3929da2, results of 2026-04-24) on
  GB200 and GB300: the ``gpt_oss`` config (2 x 128 heads of 64, causal with a 128-token sliding
  window, 2k-32k tokens) and the ``ltx2`` / ``wan22`` configs (32 / 40 heads of 128, no mask,
  6k-76k tokens), forward and (non-deterministic) backward per call;
- the same benchmark's H200 run at cuDNN 9.19 (GPT-OSS GQA 64 / 8 heads of 64, window 1024), a
  Hopper control: does the model miss the same way on sm90?
- FlashAttention-4 (CuTe DSL) at head dim 128 from Dao-AILab/flash-attention PR #2280 (sm100,
  board not named) and cuDNN / FA4 forwards at head dim 64 (and one at 128) from two runs in
  PR #2605 plus three FA4-only forward tables of that PR with both head dims (board not named;
  their MFU columns imply 2500 or 2250 TFLOP/s peaks). Rows with
  an ``attribution`` field say what is inferred; ``--rows`` prices them on GB200 as well.

Sliding-window rows are priced as the training layer prices them
(``transformer.layers.local_attention``: blocks of 128 queries scoring window + 128 keys).
FA4 rows are priced with the cuDNN terms (the model has no FA4 backend: both are sm100
tcgen05 kernels). Prices are per call at the kernel's own clock (no training-step clock).
Nothing here is fitted.

Run: ``PYTHONPATH=python python benchmarks/blackwell_attention.py [--rows]``. Prints per group
the median signed error (model / published - 1; + = the model is too slow), forward and
backward apart, and the backward / forward time ratio per shape, published against priced;
``--rows`` adds every row (shape, published, priced, ratio).
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path
from typing import Any

import roofline as rl
from roofline.transformer.layers import local_attention

DATA = Path(__file__).resolve().parents[1] / "data" / "published" / "blackwell_attention.jsonl"


def load() -> list[dict[str, Any]]:
    """The published rows."""
    with DATA.open() as f:
        return [json.loads(line) for line in f if line.strip()]


def price(row: dict[str, Any], hardware: str | None = None) -> float:
    """The model's time (s) of one published row on ``hardware`` (default: the row's)."""
    c = row["config"]
    hw = hardware or row["hardware"]
    backend = "cudnn" if c["backend"] == "fa4" else c["backend"]
    batch, q, kv, causal, scale = c["batch"], c["q_len"], c["kv_len"], c["causal"], 1.0
    if c.get("window"):
        blocks, q, kv, causal, scale = local_attention("sliding", c["window"], q, kv)
        batch *= blocks
    e = rl.attention(batch, c["heads"], q, kv, c["head_dim"], kv_heads=c["kv_heads"],
                     v_head_dim=c.get("v_head_dim"), causal=causal, backward=c["backward"],
                     dtype=c["dtype"], hardware=hw, backend=backend)
    return float(e.time_s) * scale


def shape(row: dict[str, Any]) -> str:
    """A short label of the row's shape."""
    c = row["config"]
    mask = f"win{c['window']}" if c.get("window") else ("causal" if c["causal"] else "full")
    heads = f"{c['heads']}/{c['kv_heads']}" if c["kv_heads"] != c["heads"] else f"{c['heads']}"
    return (f"b{c['batch']} h{heads} s{c['q_len']} d{c['head_dim']} {mask} "
            f"{'bwd' if c['backward'] else 'fwd'}")


def errors(rows: list[dict[str, Any]]) -> dict[str, dict[str, list[float]]]:
    """Signed errors (model / published - 1) per group and direction."""
    out: dict[str, dict[str, list[float]]] = {}
    for r in rows:
        d = "bwd" if r["config"]["backward"] else "fwd"
        out.setdefault(r["group"], {}).setdefault(d, []).append(price(r) / r["measured_s"] - 1)
    return out


def bwd_fwd_ratios(rows: list[dict[str, Any]]) -> list[tuple[str, str, float, float]]:
    """(group, shape, published, priced) backward / forward time ratios of every shape published
    in both directions."""
    fwd = {(r["group"], shape(r)[:-4]): r for r in rows if not r["config"]["backward"]}
    out = []
    for r in rows:
        if not r["config"]["backward"]:
            continue
        f = fwd.get((r["group"], shape(r)[:-4]))
        if f is None:
            continue
        out.append((r["group"], shape(r)[:-4], r["measured_s"] / f["measured_s"],
                    price(r) / price(f)))
    return out


def head_dim_ratios(rows: list[dict[str, Any]]) -> list[tuple[str, str, float, float]]:
    """(group, shape, published, priced) time ratios head dim 64 / 128 of the forwards one run
    published at both head dims with the same FLOPs (same tokens, heads x head dim 2048)."""
    d128 = {(r["group"], r["config"]["causal"], r["config"]["q_len"]): r for r in rows
            if r["config"]["head_dim"] == 128 and not r["config"]["backward"]}
    out = []
    for r in rows:
        c = r["config"]
        other = d128.get((r["group"], c["causal"], c["q_len"]))
        if c["head_dim"] != 64 or c["backward"] or other is None:
            continue
        out.append((r["group"], shape(r)[:-4].replace(" d64", ""),
                    r["measured_s"] / other["measured_s"], price(r) / price(other)))
    return out


def main(argv: list[str]) -> None:
    rows = load()
    show_rows = "--rows" in argv
    print(f"{len(rows)} published rows ({DATA.name}); error = model / published - 1")
    print(f"{'group':58s} {'dir':>3s} {'n':>3s} {'median':>8s} {'min':>8s} {'max':>8s}")
    for group, by_dir in errors(rows).items():
        for d, errs in sorted(by_dir.items(), key=lambda kv: kv[0] != "fwd"):
            print(f"{group:58s} {d:>3s} {len(errs):3d} {statistics.median(errs):+8.1%} "
                  f"{min(errs):+8.1%} {max(errs):+8.1%}")
    print("\nbackward / forward time per shape (published, priced):")
    for group, label, pub, model in bwd_fwd_ratios(rows):
        print(f"  {group:50s} {label:36s} {pub:5.2f} {model:5.2f}")
    print("\nhead dim 64 / 128 forward time, same run and FLOPs (published, priced on B200):")
    for group, label, pub, model in head_dim_ratios(rows):
        print(f"  {group:62s} {label:24s} {pub:5.2f} {model:5.2f}")
    if show_rows:
        print(f"\n{'id':44s} {'shape':40s} {'published':>10s} {'priced':>10s} {'ratio':>6s}"
              f" {'GB200':>10s}")
        for r in rows:
            p = price(r)
            alt = f"{price(r, 'GB200') * 1e3:9.3f}m" if r.get("attribution") else ""
            print(f"{r['id']:44s} {shape(r):40s} {r['measured_s'] * 1e3:9.3f}m "
                  f"{p * 1e3:9.3f}m {p / r['measured_s']:6.2f} {alt:>10s}")


if __name__ == "__main__":
    main(sys.argv[1:])
