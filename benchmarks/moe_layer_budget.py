"""One MoE layer of a Megatron-Bridge MoE training row, op by op, as the model prices it (#24).

For a published ``train_moe`` row (default: the Megatron-Bridge 25.11 GB200 DeepSeek-V3 bf16
row, PP4 VP4 EP64), prints every priced op of one MoE layer (forward and backward time in
µs, the rate it runs at), the layer's total by part (the columns of
``benchmarks/train_moe_breakdown.py``), the MoE layers on the busiest GPU, and the time per
MoE layer the measurement leaves unpriced: (the step the measurement implies - the priced
step) / grad_accum / those layers. For pipelined rows, which ``gptoss_kernel_budget.py``
(PP1) does not split by stage. Nothing here is fitted (hardware-notes "one DeepSeek-V3 /
Qwen3-235B GB200 micro-batch"). Run:
``PYTHONPATH=python python benchmarks/moe_layer_budget.py [row id]``.
"""

from __future__ import annotations

import sys
from collections import defaultdict
from typing import Any

from train_moe_breakdown import bucket, job_row

from roofline import _core
from roofline.validation.jobs import job_estimate

DEFAULT_ROW = "mbridge2511_gb200_deepseekv3_bf16"


def budget(rid: str = DEFAULT_ROW) -> dict[str, Any]:
    """The MoE layer of job row ``rid``: ``ops`` ((name, forward s, backward s, rate)),
    ``parts`` (s per layer by breakdown column), ``layer_s``, ``busiest_moe_layers``, the
    priced and implied step (``step_s``, ``implied_s``) and ``missing_per_layer_s``."""
    row = job_row(rid, "budget")
    c = row["config"]
    est = job_estimate(row)
    pred = est.step.tokens_per_s / est.step.gpus  # price_job's figure
    cols = est.columns
    fwd: dict[str, float] = {}
    bwd: dict[str, float] = {}
    rate: dict[str, str] = {}
    parts: dict[str, float] = defaultdict(float)
    moe_layers = 0
    for i, (g, name, kind) in enumerate(est.rows):
        gkind, layers = est.groups[g]
        if gkind != "moe":
            continue
        moe_layers = len(layers)
        t = float(cols["time_s"][i])
        base = name.removesuffix(" bwd")
        (bwd if name.endswith(" bwd") else fwd)[base] = t
        parts[bucket(gkind, name, kind)] += t
        flops, nbytes = float(cols["flops"][i]), float(cols["bytes"][i])
        if base not in rate and t > 0:
            rate[base] = (f"{flops / t / 1e12:6.0f} TFLOP/s"
                          if kind in ("gemm", "linear", "attention") and flops > 0
                          else f"{nbytes / t / 1e9:6.0f} GB/s")
    if not moe_layers:
        raise ValueError(f"budget: row {rid!r} has no MoE layer")
    pp = int(c.get("pp", 1))
    stage = float(_core.busiest_stage_layers(est.config.num_layers, pp))
    busiest = min(stage, float(moe_layers))  # Megatron puts the dense layers first
    step = est.step
    implied = step.time_s * pred / row["measured"]
    micro = int(c.get("grad_accum", 1))
    ops = [(n, fwd[n], bwd.get(n, 0.0), rate.get(n, "")) for n in fwd]
    return {"row": row, "pred": pred, "ops": ops, "parts": dict(parts),
            "layer_s": sum(parts.values()), "busiest_moe_layers": busiest,
            "step_s": step.time_s, "implied_s": implied,
            "missing_per_layer_s": (implied - step.time_s) / micro / busiest}


def main() -> None:
    rid = sys.argv[1] if len(sys.argv) > 1 else DEFAULT_ROW
    b = budget(rid)
    row = b["row"]
    print(f"{rid}: {row['hardware']}; measured {row['measured']:.0f}, predicted "
          f"{b['pred']:.0f} tokens/s/GPU")
    print(f"{'op':34s} {'fwd us':>8s} {'bwd us':>8s} {'rate (fwd)':>16s}")
    for name, f, bk, rate in b["ops"]:
        print(f"{name:34s} {f * 1e6:8.1f} {bk * 1e6:8.1f} {rate:>16s}")
    print("one MoE layer, fwd + bwd, us: " + ", ".join(
        f"{k} {v * 1e6:.0f}" for k, v in sorted(b["parts"].items()))
          + f" | sum {b['layer_s'] * 1e6:.0f}")
    print(f"MoE layers on the busiest GPU {b['busiest_moe_layers']:.0f}; step priced "
          f"{b['step_s']:.2f} s, implied {b['implied_s']:.2f} s: "
          f"{b['missing_per_layer_s'] * 1e3:+.2f} ms per MoE layer and micro-batch unpriced")


if __name__ == "__main__":
    main()
