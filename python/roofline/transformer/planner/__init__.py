"""Plan a training or serving job: search parallel layouts, serve over batch sizes, cost.

>>> import roofline as rl
>>> df = rl.transformer.plan("Llama-3-70B", gpus=64, hardware="H100 SXM", seq_len=8192,
...                          global_batch_tokens=4 * 2**20)          # doctest: +SKIP
>>> df.head(), df.attrs["min_gpus"]                                  # doctest: +SKIP
"""

from __future__ import annotations

import time
from typing import Any

from ..._errors import ArgumentValueError
from ...hardware import hardware as _hardware
from ..arguments import MAX_COUNT, MAX_SEQ, MAX_TOKENS, batch_sizes, positive_number
from ..config import TransformerConfig, config
from .cost import dollars_per_million_tokens, gpu_hours
from .pareto import pareto_front
from .serve import serve
from .train_search import row_settings, search_train

__all__ = ["OBJECTIVES", "dollars_per_million_tokens", "gpu_hours", "pareto_front", "plan",
           "row_settings", "serve"]

OBJECTIVES = ("throughput", "latency", "cost")
_PHASES = ("train", "decode", "prefill")


def _pos_int(fn: str, name: str, value: Any, maximum: int = MAX_TOKENS) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ArgumentValueError(fn, name, f"must be a positive integer, got {value!r}")
    if value > maximum:
        raise ArgumentValueError(fn, name, f"must be <= {maximum} "
                                 f"(2**{maximum.bit_length() - 1}), got {value!r}")
    return value


def plan(model: TransformerConfig | str, gpus: int, hardware: Any = None, *,
         seq_len: int = 4096, global_batch_tokens: int | None = None, phase: str = "train",
         objective: str = "throughput", gpus_per_node: int = 8, memory_fraction: float = 0.9,
         linear_recipe: str | None = None, routing_skew: float = 0.0,
         micro_batches: tuple[int, ...] = (1, 2), price_per_gpu_hour: float | None = None,
         train_tokens: float | None = None, network_bytes_per_s: float | None = None,
         prompt_len: int | None = None, output_len: int = 512,
         batches: tuple[int, ...] = (1, 4, 16, 64, 128, 256), max_tpot_s: float | None = None,
         ) -> Any:
    """Search the parallel layouts of a job on ``gpus`` GPUs; a ranked DataFrame of those
    that fit in memory.

    Parameters
    ----------
    model : TransformerConfig or str
        The model.
    gpus : int
        GPUs of the job.
    hardware : Hardware or str
        Accelerator.
    seq_len : int
        Training sequence length (serving: the prompt length unless ``prompt_len``).
    global_batch_tokens : int, optional
        Training: tokens per optimizer step (default ``seq_len · gpus``: one sequence per GPU).
    phase : {"train", "decode", "prefill"}
        Training search (tp, pp, dp, ep, cp, ZeRO 0-3, recomputation, micro-batch, virtual
        stages) or serving search (tp or ep per replica, batch; ``prefill`` ranks by TTFT).
    objective : {"throughput", "latency", "cost"}
        Ranking: tokens/s (per GPU for serving), step time / TPOT (TTFT for prefill), or $
        per million tokens (needs ``price_per_gpu_hour``; on a fixed GPU count it orders rows
        as throughput does).
    gpus_per_node : int
        Scale-up domain size (NVLink): groups beyond it leave through their ranks' NICs
        (``network_bytes_per_s`` each, one per GPU; :func:`roofline.all_reduce`'s
        ``ranks_per_node``).
    memory_fraction : float
        Usable share of GPU memory (the rest: allocator fragmentation, CUDA context, NCCL).
    micro_batches : tuple of int
        Training micro-batch sizes (sequences) tried.
    price_per_gpu_hour, train_tokens : float, optional
        Add ``usd_per_m_tokens`` and (training) ``gpu_hours`` to train on ``train_tokens``.
    prompt_len, output_len, batches, max_tpot_s : serving
        Request shape, batch sizes tried, and an optional TPOT limit.

    Returns
    -------
    pandas.DataFrame
        One row per fitting layout, best first, with ``pareto`` marking the front of
        throughput against memory per GPU (training) or tokens/s per GPU against TPOT
        (serving). ``df.attrs``: ``min_gpus`` (fewest GPUs, powers of two up to ``gpus``, on
        which some layout fits), ``search_s``, ``estimates``.

    Notes
    -----
    Training: one op estimate per (tp, ep, cp, micro-batch) — a few hundred at most — and
    every pipeline / data-parallel / ZeRO / recomputation variant composed on top of it in
    vectorised C++ (:mod:`roofline.transformer.training`). Experts are either tensor-split
    (``ep = 1``) or expert-parallel with ``tp = 1``; ``ep`` must divide ``dp·cp``; Adam with
    fp32 master weights, sequence parallelism when ``tp > 1``, communication overlapped,
    ranks ordered tp, cp, dp, pp inside nodes of ``gpus_per_node``.

    Every row carries the settings it used (layout columns, ``sequence_parallel``,
    ``optimizer_update``, ``optimizer``, ``overlap``, ``gpus_per_node``; the rest in
    ``df.attrs["estimate_kwargs"]``): ``rl.transformer.estimate(model, "train",
    **row_settings(df, i))`` reproduces row ``i``'s ``time_s`` and ``total_bytes``.
    """
    fn = "transformer.plan"
    cfg = config(model)
    hw = _hardware(hardware)
    gpus = _pos_int(fn, "gpus", gpus, MAX_COUNT)
    seq_len = _pos_int(fn, "seq_len", seq_len, MAX_SEQ)
    gpus_per_node = _pos_int(fn, "gpus_per_node", gpus_per_node, MAX_COUNT)
    micro_batches = tuple(batch_sizes(fn, "micro_batches", micro_batches))
    batches = tuple(batch_sizes(fn, "batches", batches))
    if phase not in _PHASES:
        raise ValueError(f"{fn}: phase must be one of {_PHASES}, got {phase!r}")
    if objective not in OBJECTIVES:
        raise ValueError(f"{fn}: objective must be one of {OBJECTIVES}, got {objective!r}")
    if price_per_gpu_hour is not None:
        price_per_gpu_hour = positive_number(fn, "price_per_gpu_hour", price_per_gpu_hour)
    if train_tokens is not None:
        train_tokens = positive_number(fn, "train_tokens", train_tokens)
    output_len = _pos_int(fn, "output_len", output_len, MAX_SEQ)  # checked in every phase
    if prompt_len is not None:
        prompt_len = _pos_int(fn, "prompt_len", prompt_len, MAX_SEQ)
    if max_tpot_s is not None:
        max_tpot_s = positive_number(fn, "max_tpot_s", max_tpot_s)
    if objective == "cost" and price_per_gpu_hour is None:
        raise ValueError(f"{fn}: objective='cost' needs price_per_gpu_hour")
    if not (isinstance(memory_fraction, (int, float)) and 0 < memory_fraction <= 1):
        raise ValueError(f"{fn}: memory_fraction must be in (0, 1], got {memory_fraction!r}")
    if not hw.mem_capacity_bytes:
        raise ValueError(f"{fn}: {hw.name} has no mem_capacity_bytes in the database")
    if phase == "train":
        gbt = seq_len * gpus if global_batch_tokens is None else _pos_int(
            fn, "global_batch_tokens", global_batch_tokens, 2**40)
        if gbt % seq_len:
            raise ValueError(f"{fn}: global_batch_tokens must be a multiple of seq_len "
                             f"({seq_len}), got {gbt}")
        return search_train(cfg, hw, gpus=gpus, seq_len=seq_len, global_batch_tokens=gbt,
                            gpus_per_node=gpus_per_node, memory_fraction=memory_fraction,
                            linear_recipe=linear_recipe, routing_skew=routing_skew,
                            micro_batches=tuple(micro_batches),
                            price_per_gpu_hour=price_per_gpu_hour, train_tokens=train_tokens,
                            network_bytes_per_s=network_bytes_per_s, objective=objective)
    return _search_serve(cfg, hw, gpus=gpus, prompt_len=prompt_len or seq_len,
                         output_len=output_len, batches=batches, phase=phase,
                         objective=objective, gpus_per_node=gpus_per_node,
                         memory_fraction=memory_fraction, linear_recipe=linear_recipe,
                         routing_skew=routing_skew, price_per_gpu_hour=price_per_gpu_hour,
                         max_tpot_s=max_tpot_s)


def _search_serve(cfg: TransformerConfig, hw: Any, *, gpus: int, prompt_len: int,
                  output_len: int, batches: Any, phase: str, objective: str,
                  gpus_per_node: int, memory_fraction: float, linear_recipe: str | None,
                  routing_skew: float, price_per_gpu_hour: float | None,
                  max_tpot_s: float | None) -> Any:
    import pandas as pd

    start = time.perf_counter()
    layouts = [(t, 1) for t in (1, 2, 4, 8, 16) if t <= gpus and cfg.num_heads % t == 0]
    if cfg.is_moe:
        layouts += [(1, e) for e in (2, 4, 8, 16, 32, 64, 128, 256)
                    if e <= gpus and cfg.num_experts % e == 0]
    frames = []
    for tp, ep in layouts:
        df = serve(cfg, hw, prompt_len=prompt_len, output_len=output_len, batches=batches,
                   tp=tp, ep=ep, linear_recipe=linear_recipe, memory_fraction=memory_fraction,
                   gpus_per_node=gpus_per_node, routing_skew=routing_skew,
                   price_per_gpu_hour=price_per_gpu_hour)
        df.insert(0, "ep", ep)
        df.insert(0, "tp", tp)
        df.insert(0, "replicas", gpus // (ep if ep > 1 else tp))
        df["max_batch"] = df.attrs["max_batch"]
        frames.append(df)
    df = pd.concat(frames, ignore_index=True)
    fit = df["fits"]
    min_gpus = int((df.loc[fit, "tp"] * df.loc[fit, "ep"]).min()) if fit.any() else None
    df = df[fit & (df["replicas"] >= 1)].drop(columns=["fits"]).reset_index(drop=True)
    if max_tpot_s is not None:
        df = df[df["tpot_s"] <= max_tpot_s].reset_index(drop=True)
    df["gpus"] = gpus
    df["job_tokens_per_s"] = df["tokens_per_s_per_gpu"] * gpus
    df["pareto"] = pareto_front(df["tokens_per_s_per_gpu"].to_numpy(), df["tpot_s"].to_numpy())
    if phase == "prefill" or objective == "latency":
        key, asc = ("ttft_s" if phase == "prefill" else "tpot_s"), True
    else:
        key, asc = "tokens_per_s_per_gpu", False
    df = df.sort_values(key, ascending=asc, ignore_index=True)
    df.attrs.update(min_gpus=min_gpus, search_s=time.perf_counter() - start, phase=phase,
                    model=cfg.name, hardware=hw.name, estimates=len(layouts))
    return df
