"""Search of training layouts: tp, pp, dp, ep, cp, ZeRO stage, recomputation, activation
offloading, micro-batch."""

from __future__ import annotations

import itertools
import time
from typing import Any

import numpy as np

from ...hardware import Hardware
from ...ops.collectives import DEFAULT_LATENCY_S, NCCL_NIC_FRACTION, nccl_nvlink_fraction
from ...ops.collectives import link_bytes_per_s as _link_bw
from ..config import TransformerConfig
from ..estimate import estimate
from ..offload import host_link_bytes_per_s
from ..training import DEFAULT_NETWORK_BYTES_PER_S, PLAN_RECOMPUTE, compose
from .cost import dollars_per_million_tokens
from .pareto import pareto_front

__all__ = ["ROW_ARGUMENTS", "row_settings", "search_train"]

_POW2 = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024)


def _gpu_counts(gpus: int) -> list[int]:
    """The counts tried for the minimum: powers of two below ``gpus``, then ``gpus``."""
    return sorted({g for g in _POW2 if g < gpus} | {gpus})


def search_train(cfg: TransformerConfig, hw: Hardware, *, gpus: int, seq_len: int,
                 global_batch_tokens: int, gpus_per_node: int, memory_fraction: float,
                 linear_recipe: str | None, routing_skew: float, micro_batches: tuple[int, ...],
                 price_per_gpu_hour: float | None, train_tokens: float | None,
                 network_bytes_per_s: float | None, objective: str) -> Any:
    """Every fitting training layout on ``gpus`` GPUs (and the minimum GPU count that fits).

    One op estimate per (tp, ep, cp, micro-batch); every (pp, dp, zero, recompute,
    virtual stages) on top of it is composed in one vectorised call.
    """
    import pandas as pd

    start = time.perf_counter()
    seqs = global_batch_tokens // seq_len
    tps = [t for t in _POW2 if t <= gpus_per_node and cfg.num_heads % t == 0 and t <= gpus]
    cps = [c for c in (1, 2, 4, 8) if seq_len % c == 0 and c <= gpus]
    eps = ([e for e in _POW2 if cfg.num_experts % e == 0 and e <= gpus] if cfg.is_moe
           else [1])
    link = _link_bw(hw, nccl_nvlink_fraction(hw))  # training: NCCL over NVLink
    net = DEFAULT_NETWORK_BYTES_PER_S if network_bytes_per_s is None else network_bytes_per_s
    peak_class = "bf16" if linear_recipe is None else "fp8"
    peak = hw.peak_flops_per_s(peak_class)
    counts = _gpu_counts(gpus)
    # activation offloading (pp = 1, no recomputation): half the layers, or all but two (the
    # most that still overlaps, Transformer Engine's guidance)
    offloads = sorted({k for k in (cfg.num_layers // 2, cfg.num_layers - 2) if k >= 1})
    host = host_link_bytes_per_s(hw)
    frames = []
    estimates = 0
    for tp, ep, cp, mb in itertools.product(tps, eps, cps, micro_batches):
        if tp * cp > gpus or (ep > 1 and tp > 1):
            continue  # experts are either tensor- or expert-parallel, not both
        # layouts of every GPU count on top of this micro-batch estimate
        rows = []
        for n in counts:
            for pp in _POW2:
                if pp > cfg.num_layers or n % (tp * cp * pp):
                    continue
                dp = n // (tp * cp * pp)
                if (dp * cp * tp) % ep or seqs % (mb * dp):
                    continue
                m = seqs // (mb * dp)
                if pp > 1 and m < pp:
                    continue  # fewer micro-batches than stages: mostly bubble
                for v in (1, 2) if pp > 1 else (1,):
                    if v > 1 and (cfg.num_layers // pp) % v:
                        continue
                    for zero in (0, 1, 2, 3):
                        if zero and dp * cp == 1:
                            continue
                        for ri in range(len(PLAN_RECOMPUTE)):
                            rows.append((n, dp, pp, zero, ri, m, v, 0))
                            if pp == 1 and PLAN_RECOMPUTE[ri][0] == "none":
                                rows += [(n, dp, pp, zero, ri, m, v, k) for k in offloads]
        if not rows:
            continue
        est = estimate(cfg, "train", mb, seq_len=seq_len, hardware=hw, tp=tp, ep=ep, cp=cp,
                       linear_recipe=linear_recipe, routing_skew=routing_skew,
                       gpus_per_node=gpus_per_node, network_bytes_per_s=net)
        estimates += 1
        base = est._cache["train_base"]
        a = np.array(rows, dtype=np.float64)
        n, dp, pp, zero, ri, m, v, off = a.T
        modes = ri.astype(int)
        rc = np.array([PLAN_RECOMPUTE[i][1] for i in range(len(PLAN_RECOMPUTE))])[modes]
        every = np.array([PLAN_RECOMPUTE[i][2] for i in range(len(PLAN_RECOMPUTE))])[modes]
        r = compose(base, hw, dp=dp, pp=pp, tp=tp, ep=ep, cp=cp, zero=zero, recompute=rc,
                    recompute_every=every,
                    micro_batch=mb, grad_accum=m, virtual_stages=v, seq_len=seq_len,
                    optimizer="adam", overlap=True, sequence_parallel=tp > 1,
                    optimizer_update=True, gpus_per_node=gpus_per_node,
                    link_bytes_per_s=link, network_bytes_per_s=net * NCCL_NIC_FRACTION,
                    latency_s=DEFAULT_LATENCY_S, peak_flops_per_s=peak, offload_layers=off,
                    host_bytes_per_s=host)
        frames.append(pd.DataFrame({
            "gpus": n.astype(int), "tp": tp, "pp": pp.astype(int), "dp": dp.astype(int),
            "ep": ep, "cp": cp, "zero": zero.astype(int),
            "recompute": np.array([name for name, _, _ in PLAN_RECOMPUTE])[modes],
            "micro_batch": mb, "grad_accum": m.astype(int), "virtual_stages": v.astype(int),
            "sequence_parallel": tp > 1, "optimizer_update": True, "optimizer": "adam",
            "overlap": True, "gpus_per_node": gpus_per_node,
            "offload_layers": off.astype(int),
            **{k: r[k] for k in ("time_s", "mfu", "hfu", "bubble_fraction", "exposed_comm_s",
                                 "total_bytes", "weights_bytes", "gradients_bytes",
                                 "optimizer_bytes", "activations_bytes")},
            "tokens_per_s": r["tokens"] / r["time_s"],
        }))
    if not frames:
        raise ValueError(f"transformer.plan: no layout of {gpus} GPUs splits the {seqs} "
                         f"sequences of global_batch_tokens={global_batch_tokens} (seq_len="
                         f"{seq_len}) into micro-batches of micro_batches={micro_batches} "
                         f"sequences per data-parallel rank")
    df = pd.concat(frames, ignore_index=True)
    capacity = (hw.mem_capacity_bytes or 0.0) * memory_fraction
    df["fits"] = df["total_bytes"] <= capacity
    fit_counts = df.loc[df["fits"], "gpus"]
    min_gpus = int(fit_counts.min()) if len(fit_counts) else None
    here = df[df["gpus"] == gpus]
    leanest = here.loc[here["total_bytes"].idxmin()] if len(here) else None
    why = {} if leanest is None else {  # why nothing fits: the leanest layout on `gpus`
        "leanest_bytes": float(leanest["total_bytes"]), "capacity_bytes": capacity,
        "leanest_layout": {k: (v.item() if hasattr(v, "item") else v) for k, v in leanest[
            ["tp", "pp", "dp", "ep", "cp", "zero", "recompute", "offload_layers",
             "micro_batch"]].items()}}
    df = df[(df["gpus"] == gpus) & df["fits"]].drop(columns=["fits"]).reset_index(drop=True)
    df["memory_gb"] = df["total_bytes"] / 1e9
    if price_per_gpu_hour is not None and len(df):
        df["usd_per_m_tokens"] = dollars_per_million_tokens(price_per_gpu_hour, df["gpus"],
                                                            df["tokens_per_s"])
    if train_tokens is not None and len(df):
        df["gpu_hours"] = train_tokens / df["tokens_per_s"] * df["gpus"] / 3600.0
    df["pareto"] = pareto_front(df["tokens_per_s"].to_numpy(), df["total_bytes"].to_numpy()) \
        if len(df) else []
    key = "time_s" if objective == "latency" else "tokens_per_s"
    df = df.sort_values([key, "total_bytes"], ascending=[key == "time_s", True],
                        ignore_index=True)
    df.attrs.update(min_gpus=min_gpus, search_s=time.perf_counter() - start,
                    estimates=estimates, phase="train", model=cfg.name, hardware=hw.name,
                    estimate_kwargs=dict(seq_len=seq_len, hardware=hw, network_bytes_per_s=net,
                                         linear_recipe=linear_recipe,
                                         routing_skew=routing_skew), **why)
    return df


#: Columns of a training plan row that are arguments of ``rl.transformer.estimate``.
ROW_ARGUMENTS = ("tp", "pp", "dp", "ep", "cp", "zero", "recompute", "micro_batch", "grad_accum",
                 "virtual_stages", "sequence_parallel", "optimizer_update", "optimizer",
                 "overlap", "gpus_per_node", "offload_layers")


def row_settings(df: Any, i: int) -> dict[str, Any]:
    """Every argument of ``rl.transformer.estimate`` that row ``i`` of a training plan used:
    ``rl.transformer.estimate(model, "train", **row_settings(df, i))`` reproduces the row's
    ``time_s`` and ``total_bytes``."""
    row = df.iloc[i]
    out: dict[str, Any] = dict(df.attrs["estimate_kwargs"])
    for c in ROW_ARGUMENTS:
        v = row[c]
        out[c] = v.item() if hasattr(v, "item") else v
    return out
