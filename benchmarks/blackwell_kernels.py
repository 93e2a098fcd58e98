"""The model's kernel prices on Blackwell (B200 / GB200 / GB300) against published
microbenchmarks (issue #24): ``data/published/blackwell_kernels.jsonl``.

Each row of that file is one published kernel time with its source URL, commit / date and
software versions: cuDNN and FlashAttention-2 SDPA from cudnn-frontend's
``benchmark/sdpa_benchmark_training`` (B200 cuDNN 9.13.0, GB200 / GB300 cuDNN 9.17.0 and
9.22), Transformer Engine's MXFP8 quantize, cuBLAS MXFP4 GEMMs (cublasTest), torchao's
bf16 / NVFP4 GEMM benchmark, its MoE grouped GEMMs (bf16 ``torch._grouped_mm``, MXFP8
``torch._scaled_grouped_mm``), vLLM's Llama-3.1-8B GEMM benchmark (``torch.mm`` bf16 and its
CUTLASS fp8 kernel) and CUB's elementwise add (NVBench), all on a B200. None of
them is fitted except the three TE quantize rows, which are among the nine published B200
MXFP8 quantize kernels whose median sets Blackwell's ``mxfp8_quantize_fraction``
(``cast.json``); the other terms come from H100 / H200 measurements and the accelerators'
peaks (``data/hardware-notes.md`` §8, §11). Prices are per call at the kernel's own clock (no
training-step power-limiter clock), as the benchmarks time them.

Run: ``PYTHONPATH=python python benchmarks/blackwell_kernels.py [--rows]``. Prints, per
source group, the rows' count, the median signed error (model / published - 1, + = the model
is too slow), the median absolute error, and the median signed error with GEMMs and attention
at the power limiter's settled clock (``roofline.ops.sustained``, as a training step prices
them: the clock of long back-to-back timing loops); ``--rows`` adds every row.
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path
from typing import Any

import roofline as rl
from roofline.ops.sustained import at_settled_clock, settled_clock

DATA = Path(__file__).resolve().parents[1] / "data" / "published" / "blackwell_kernels.jsonl"


def _quantize_s(c: dict[str, Any], hardware: str) -> float:
    """Transformer Engine's quantize_mxfp8 of a rows x cols bf16 tensor, as the model prices it
    inside ``float8.linear(recipe="mxfp8_te")``: the training path's one kernel writing both
    layouts (``both``), the inference path's rowwise-only kernel (``rowwise``; ``colwise``
    moves the same bytes, priced alike)."""
    both = c["scaling"] == "both"
    lin = rl.float8.linear(c["rows"], c["cols"], 4096, recipe="mxfp8_te", hardware=hardware,
                           mode="training" if both else "inference")
    k = lin.kernels()
    name = "input quantize mxfp8 (row- and column-wise)" if both else \
        "input quantize mxfp8 (rowwise)"
    return float(k.loc[k["kernel"] == name, "time_s"].iloc[0])


def price(row: dict[str, Any], settled: bool = False) -> float:
    """The model's time (s) of one published row: per call (a kernel run alone, its clock
    dropping with its own length), or with ``settled`` its GEMM / attention at the power
    limiter's settled clock, as in a training step or a long back-to-back timing loop."""
    c, hw = row["config"], row["hardware"]
    clock = settled_clock(hw, "default") if settled else None
    if row["kernel"] == "attention":
        return float(at_settled_clock(rl.attention(
            c["batch"], c["heads"], c["q_len"], c["kv_len"], c["head_dim"],
            kv_heads=c["kv_heads"], causal=c["causal"], backward=c["backward"],
            dtype=c["dtype"], hardware=hw, backend=c["backend"]), clock).time_s)
    if row["kernel"] == "gemm":
        return float(at_settled_clock(rl.gemm(c["m"], c["k"], c["n"], c["dtype"], hardware=hw),
                                      clock).time_s)
    if row["kernel"] == "grouped_gemm":
        return float(at_settled_clock(rl.grouped_gemm(
            c["m_per_group"], c["k"], c["n"], c["groups"], c["dtype"], hardware=hw),
            clock).time_s)
    if row["kernel"] == "grouped_fwd_bwd":
        # torch._grouped_mm's autograd: forward (m x k by k x n per group), dgrad (m x n by
        # n x k) and wgrad (k x m by m x n: the group's tokens are the reduction, priced as a
        # grouped GEMM of k-row groups), uniform groups of tokens / groups rows.
        m, g, k, n = c["tokens"] // c["groups"], c["groups"], c["k"], c["n"]
        return sum(float(at_settled_clock(rl.grouped_gemm(a, b, d, g, c["dtype"], hardware=hw),
                                          clock).time_s)
                   for a, b, d in ((m, k, n), (m, n, k), (k, m, n)))
    if row["kernel"] == "mxfp8_quantize":
        return _quantize_s(c, hw)
    if row["kernel"] == "elementwise":
        return float(rl.elementwise(c["numel"], reads=c["reads"], writes=c["writes"],
                                    dtype=c["dtype"], hardware=hw).time_s)
    raise ValueError(f"{row['id']}: unknown kernel {row['kernel']!r}")


def read(path: Path = DATA) -> list[dict[str, Any]]:
    """The published rows."""
    with path.open() as f:
        return [json.loads(line) for line in f if line.strip()]


def errors(rows: list[dict[str, Any]], settled: bool = False) -> dict[str, list[float]]:
    """Signed errors (model / published - 1) per group, in file order (``settled``: GEMM and
    attention at the settled clock, :func:`price`)."""
    out: dict[str, list[float]] = {}
    for r in rows:
        out.setdefault(r["group"], []).append(price(r, settled) / float(r["measured_s"]) - 1.0)
    return out


def pair_ratios(rows: list[dict[str, Any]], a: str = "GB200", b: str = "GB300",
                settled: bool = False) -> dict[str, list[float]]:
    """Per source group, (model a / model b) / (published a / published b) - 1 over the rows
    of the same configuration published for both GPUs by the same source and library
    (the group names differ only in the GPU's): how well the model's relative physics of the
    two entries (clocks, SMs, board power through the settled clock, the SFU rate) matches the
    published time ratio, whatever the absolute error of each. + = the model makes ``a``
    slower relative to ``b`` than measured."""
    by: dict[tuple[str, str, str], dict[str, Any]] = {}
    for r in rows:
        if r["hardware"] in (a, b):
            by[(r["group"].replace(r["hardware"], "{}"), json.dumps(r["config"], sort_keys=True),
                r["hardware"])] = r
    out: dict[str, list[float]] = {}
    for (g, cfg, hw), ra in by.items():
        rb = by.get((g, cfg, b))
        if hw != a or rb is None:
            continue
        model = price(ra, settled) / price(rb, settled)
        out.setdefault(g.format(f"{a}/{b}"), []).append(
            model / (float(ra["measured_s"]) / float(rb["measured_s"])) - 1.0)
    return out


def main() -> None:
    rows = read()
    if "--rows" in sys.argv[1:]:
        print(f"{'id':58s} {'published':>11s} {'model':>11s} {'error':>7s} {'settled':>7s}")
        for r in rows:
            t, ts = price(r), price(r, settled=True)
            print(f"{r['id']:58s} {r['measured_s'] * 1e3:9.3f}ms {t * 1e3:9.3f}ms "
                  f"{t / r['measured_s'] - 1.0:+7.1%} {ts / r['measured_s'] - 1.0:+7.1%}")
        print()
    by, at = errors(rows), errors(rows, settled=True)
    print(f"{'group':42s} {'rows':>4s} {'median':>7s} {'|median|':>8s} {'min':>7s} {'max':>7s}"
          f" {'settled':>8s}")
    for g, e in by.items():
        print(f"{g:42s} {len(e):4d} {statistics.median(e):+7.1%} "
              f"{statistics.median(abs(x) for x in e):8.1%} {min(e):+7.1%} {max(e):+7.1%} "
              f"{statistics.median(at[g]):+8.1%}")
    allv = [x for e in by.values() for x in e]
    print(f"{'all':42s} {len(allv):4d} {statistics.median(allv):+7.1%} "
          f"{statistics.median(abs(x) for x in allv):8.1%}")
    print("median: model / published - 1 per call (+ = model too slow); settled: the same with"
          " GEMMs and attention at the power limiter's settled clock (training-step pricing)")
    print()
    for a, b in (("GB200", "GB300"), ("B200", "GB200")):
        pr, prs = pair_ratios(rows, a, b), pair_ratios(rows, a, b, settled=True)
        for g, e in pr.items():
            print(f"{g:42s} {len(e):4d} {statistics.median(e):+7.1%} {'':8s} {min(e):+7.1%} "
                  f"{max(e):+7.1%} {statistics.median(prs[g]):+8.1%}")
    print("same configuration on both GPUs: (model A / model B) / (published A / published B) - 1"
          " (B200 / GB200: different flash_attn and PyTorch builds, see hardware-notes §14)")


if __name__ == "__main__":
    main()
