"""Token counts per expert under the perf scripts' force-balanced routing, and what their spread
can add to the MoE training rows (#24, hardware-notes section 44).

Megatron-Bridge's MoE perf rows route with ``moe_router_force_load_balancing`` (Megatron-Core's
``RandomSTE``: iid normal logits, then the top-k), so each token's experts are a uniform
``k``-subset and the per-expert counts are binomial, not exactly equal as ``routing_skew=0``
prices them. For every ``train_moe`` row run that way this prints the rows per expert (mean and
standard deviation), per EP rank, and the busiest rank's expected excess
(:func:`roofline.transformer.routing.random_routing_spread`); for a GPT-OSS-120B row the
milliseconds that excess would add to its expert GEMMs (the rows of
``benchmarks/gptoss_kernel_budget.py``). Nothing is fitted and nothing here changes a price.
Run: ``PYTHONPATH=python python benchmarks/routing_spread.py``.
"""

from __future__ import annotations

from typing import Any

from roofline.transformer.config import config
from roofline.transformer.routing import random_routing_spread
from roofline.validation.jobs import JOBS_FILE, read_jobs

#: The priced rows of the expert GEMMs (forward; each has its " bwd" twin).
EXPERT_GEMMS = ("experts gate_up", "experts down")


def force_balanced(row: dict[str, Any]) -> bool:
    """A train_moe row whose source routes with random logits (its notes say so)."""
    text = (row.get("notes", "") + " ".join(row["config"].get("assumptions", []))).lower()
    return row["family"] == "train_moe" and "force-balanced" in text


def spread_rows() -> list[dict[str, Any]]:
    """One record per force-balanced train_moe row: id, model, ep, tokens per rank and the
    :class:`~roofline.transformer.routing.RoutingSpread`."""
    out = []
    for row in read_jobs(JOBS_FILE):
        if not force_balanced(row):
            continue
        c = row["config"]
        cfg = config(c["model"])
        t = c["micro_batch"] * c["seq_len"] // (c.get("tp", 1) * c.get("cp", 1))
        out.append({"id": row["id"], "model": c["model"], "ep": c["ep"], "tokens": t,
                    "spread": random_routing_spread(t, cfg.num_experts, cfg.experts_per_token,
                                                    c["ep"])})
    return out


def gptoss_bound(rid: str = "mbridge2511_gb200_gptoss120b_bf16") -> dict[str, float]:
    """The expert GEMMs' priced ms per micro-batch of a GPT-OSS row, the ms the busiest rank's
    expected excess adds to them, and the micro-batch total (priced and implied)."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    try:
        from gptoss_kernel_budget import budget
    finally:
        sys.path.pop(0)
    b = budget(rid)
    c = b["row"]["config"]
    cfg = config(c["model"])
    s = random_routing_spread(c["micro_batch"] * c["seq_len"], cfg.num_experts,
                              cfg.experts_per_token, c["ep"])
    gemm_ms = sum(r[-1] for r in b["rows"] if r[1].removesuffix(" bwd") in EXPERT_GEMMS)
    return {"expert_gemm_ms": gemm_ms, "excess_ms": gemm_ms * s.busiest_excess,
            "total_ms": b["total_ms"], "implied_ms": b["implied_ms"]}


def main() -> None:
    print(f"{'row':48s} {'model':16s} {'ep':>3s} {'tok/rank':>8s} {'rows/expert':>14s} "
          f"{'rows/rank':>15s} {'busiest':>8s}")
    for r in spread_rows():
        s = r["spread"]
        print(f"{r['id'][:48]:48s} {r['model']:16s} {r['ep']:3d} {r['tokens']:8d} "
              f"{s.expert_mean:7.0f} ±{s.expert_sd:5.0f} {s.rank_mean:8.0f} ±{s.rank_sd:5.0f} "
              f"{100 * s.busiest_excess:+7.2f}%")
    for rid in ("mbridge2511_gb200_gptoss120b_bf16", "mbridge2511_b200_gptoss120b_bf16"):
        g = gptoss_bound(rid)
        print(f"{rid}: expert GEMMs {g['expert_gemm_ms']:.1f} ms a micro-batch, busiest rank's "
              f"excess +{g['excess_ms']:.2f} ms of {g['total_ms']:.1f} priced "
              f"({g['implied_ms']:.1f} implied by the measurement)")


if __name__ == "__main__":
    main()
