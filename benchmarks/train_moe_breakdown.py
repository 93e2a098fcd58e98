"""Where the predicted step of each MoE training row goes (issue #24).

For every ``train_moe`` row of ``python/roofline/data/jobs/published_jobs.jsonl`` (or the
family given as the first argument), prints the predicted and measured tokens/s/GPU, the
step's decomposition (``TrainStep``: compute, bubble, pipeline sends, exposed data-parallel
communication, optimizer, host launch time exposed by the MoE syncs, recomputation; with
pipeline stages, the pacing stage's host time per micro-batch by its terms) and the
GPU time of one micro-batch on the busiest stage split by what runs: dense GEMMs, expert GEMMs
(routed and shared), attention, norms and other elementwise kernels, router / permute / chunk
sorting, expert-parallel all-to-alls, the LM head and loss. The implied MFU is the model's
MFU scaled by predicted / measured throughput (the FLOPs are the same; only the time
differs). Nothing here is fitted. Run:
``PYTHONPATH=python python benchmarks/train_moe_breakdown.py [family]``.
"""

from __future__ import annotations

import sys
from collections import defaultdict
from typing import Any

from roofline import _core
from roofline.validation.jobs import JOBS_FILE, job_estimate, read_jobs

_ROUTING = ("router", "topk", "permute", "sort chunks", "unsort chunks", "moe weighted sum",
            "moe shared add", "hybridep metadata")


def bucket(group: str, name: str, kind: str) -> str:
    """The breakdown column of one op row."""
    base = name.removesuffix(" bwd")
    if group == "head":
        return "head"
    if kind == "collective":
        return "a2a" if "all_to_all" in base else "comm"
    if kind == "attention":
        return "attn"
    if base.startswith(("experts ", "shared ")):
        return "expert_gemm" if kind in ("gemm", "linear") else "expert_elt"
    if base.startswith(_ROUTING):
        return "routing"
    if kind in ("gemm", "linear"):
        return "dense_gemm"
    return "norm_elt"


def job_row(rid: str, fn: str) -> dict[str, Any]:
    """The row of the shipped jobs file whose id is ``rid`` (``fn``'s error otherwise)."""
    row = next((r for r in read_jobs(JOBS_FILE) if r["id"] == rid), None)
    if row is None:
        raise ValueError(f"{fn}: no job row {rid!r} in {JOBS_FILE}")
    return row


def main() -> None:
    family = sys.argv[1] if len(sys.argv) > 1 else "train_moe"
    for row in read_jobs(JOBS_FILE):
        if row["family"] != family or row["config"].get("api") != "train":
            continue
        c = row["config"]
        est = job_estimate(row)
        st = est.step
        pred = st.tokens_per_s / st.gpus  # price_job's figure (job_estimate is its estimate)
        pp = int(c.get("pp", 1))
        stage = float(_core.busiest_stage_layers(est.config.num_layers, pp))
        by: dict[str, float] = defaultdict(float)
        for (g, name, kind), t in zip(est.rows, est.columns["time_s"], strict=True):
            gkind, layers = est.groups[g]
            share = 1.0 / pp if gkind == "head" else len(layers) * stage / est.config.num_layers
            by[bucket(gkind, name, kind)] += float(t) * share
        ms = {k: v * 1e3 for k, v in by.items()}
        err = row["measured"] / pred - 1.0
        print(f"{row['id']}: measured {row['measured']:.0f}, predicted {pred:.0f} "
              f"tokens/s/GPU, error {err:+.1%}; MFU predicted {st.mfu:.3f}, implied by the "
              f"measurement {st.mfu * row['measured'] / pred:.3f}")
        print(f"  step {st.time_s:.2f} s = compute {st.compute_s:.2f} (host {st.host_s:.2f}, "
              f"recompute {st.recompute_s:.2f}) + bubble {st.bubble_s:.2f} + p2p "
              f"{st.p2p_s:.3f} + exposed DP comm {st.exposed_comm_s:.3f} (of "
              f"{st.comm_s:.3f}) + optimizer {st.optimizer_s:.3f}; the measurement implies "
              f"{st.time_s * pred / row['measured']:.2f} s")
        b = est._cache["train_base"]
        if pp > 1 and "host_pass_start_s" in b:
            v = float(c.get("virtual_stages", 1) or 1)
            print(f"  host per micro-batch, pacing stage {st.host_s / c['grad_accum'] * 1e3:.1f} ms"
                  f" (per layer of the longest kind {b['host_heavy_layer_s'] * 1e3:.2f} ms + "
                  f"hooks {b['hook_heavy_layer_s'] * 1e3:.2f}, {v:.0f} backward pass start(s) of "
                  f"{b['host_pass_start_s'] * 1e3:.2f} ms); the whole pass / pp: "
                  f"{(b['host_s'] + b['hook_host_s']) / pp * 1e3:.1f} ms")
        print("  one micro-batch, busiest stage, ms: " + ", ".join(
            f"{k} {ms.get(k, 0.0):.1f}" for k in ("dense_gemm", "expert_gemm", "attn",
                                                   "norm_elt", "expert_elt", "routing", "a2a",
                                                   "comm", "head"))
              + f" | sum {sum(ms.values()):.1f}")


if __name__ == "__main__":
    main()
