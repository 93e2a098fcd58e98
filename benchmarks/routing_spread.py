"""Token counts per expert under the perf scripts' force-balanced routing, and what their spread
can add to the MoE training rows (#24, hardware-notes section 46).

Megatron-Bridge's MoE perf rows route with ``moe_router_force_load_balancing`` (Megatron-Core's
``RandomSTE``: iid normal logits, then the top-k), so each token's experts are a uniform
``k``-subset and the per-expert counts are binomial, not exactly equal as an even split
has them. For every ``train_moe`` row run that way this prints the rows per expert (mean and
standard deviation), per EP rank, the busiest rank's expected excess
(:func:`roofline.transformer.routing.random_routing_spread`), how much longer the step is
priced with it (``estimate(moe_router="force_balanced")``, the rows' setting) than with an exact
even split, and the row's error both ways. Nothing is fitted.
Run: ``PYTHONPATH=python python benchmarks/routing_spread.py``.
"""

from __future__ import annotations

from typing import Any

from roofline.transformer.config import config
from roofline.transformer.routing import random_routing_spread
from roofline.validation.jobs import JOBS_FILE, job_estimate, read_jobs


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


def priced_effect(row: dict[str, Any]) -> dict[str, float]:
    """The row priced with ``moe_router="topk"`` and ``"force_balanced"`` (tokens/s/GPU) and
    measured."""
    off = dict(row, config={**row["config"], "moe_router": "topk"})
    on = dict(row, config={**row["config"], "moe_router": "force_balanced"})
    pred = []
    for r in (off, on):
        st = job_estimate(r).step
        pred.append(st.tokens_per_s / st.gpus)
    return {"even": pred[0], "sampled": pred[1], "measured": float(row["measured"])}


def main() -> None:
    print(f"{'row':44s} {'model':16s} {'ep':>3s} {'tok/rank':>8s} {'rows/expert':>14s} "
          f"{'rows/rank':>15s} {'busiest':>8s} {'step':>7s} {'error even -> sampled':>22s}")
    rows = {r["id"]: r for r in read_jobs(JOBS_FILE)}
    for r in spread_rows():
        s = r["spread"]
        e = priced_effect(rows[r["id"]])
        print(f"{r['id'][:44]:44s} {r['model']:16s} {r['ep']:3d} {r['tokens']:8d} "
              f"{s.expert_mean:7.0f} ±{s.expert_sd:5.0f} {s.rank_mean:8.0f} ±{s.rank_sd:5.0f} "
              f"{100 * s.busiest_excess:+7.2f}% {100 * (e['even'] / e['sampled'] - 1):+6.2f}% "
              f"{100 * (e['measured'] / e['even'] - 1):+9.2f}% -> "
              f"{100 * (e['measured'] / e['sampled'] - 1):+6.2f}%")


if __name__ == "__main__":
    main()
