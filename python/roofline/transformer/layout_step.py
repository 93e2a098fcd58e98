"""One parallel layout's composed training step: :class:`TrainStep` and :func:`train_step`,
which :func:`.training.compose` prices for a single layout (``transformer.estimate``'s
``.step``; the planner composes many layouts at once with ``compose`` itself)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..efficiency import EfficiencyLike
from ..hardware import Hardware
from .offload import DEFAULT_HOST_LINK
from .training import compose, recompute_name

__all__ = ["TrainStep", "train_step"]


@dataclass(frozen=True)
class TrainStep:
    """One training step of a parallel job, per GPU (all times in seconds).

    Attributes
    ----------
    time_s : float
        The step: ``compute_s + bubble_s + p2p_s + exposed_comm_s + optimizer_s``.
    compute_s : float
        ``m·(fwd + bwd + recompute + host)`` of one pipeline stage.
    bubble_s, bubble_fraction : float
        Pipeline idle time ``(p-1)/v·(fwd + bwd + recompute)``; fraction ``(p-1)/(v·m+p-1)``.
    recompute_s : float
        Recomputed forward time per step (included in ``compute_s``).
    p2p_s, exposed_comm_s, comm_s, optimizer_s : float
        Pipeline sends, data-parallel / FSDP communication left exposed and in all, optimizer
        update (with the weights' refresh and DDP's gradient checks, :mod:`.grad_checks`).
    host_s : float
        Host launch time exposed by device-to-host syncs (dropless MoE layers: the expert
        token counts), ``m`` micro-batches of one stage; included in ``compute_s``.
    tokens : float
        Tokens per step over the whole job (``micro_batch·seq_len·grad_accum·dp``).
    gpus : int
        ``dp·pp·tp·cp``.
    mfu, hfu : float
        Model FLOPs (hardware FLOPs, with recomputation) per GPU / (step time · peak).
    memory : dict
        Bytes per GPU: ``weights_bytes``, ``gradients_bytes``, ``optimizer_bytes``,
        ``activations_bytes``, ``total_bytes``.
    layout : dict
        The parallel layout and options it was computed for.
    """

    time_s: float
    compute_s: float
    bubble_s: float
    bubble_fraction: float
    recompute_s: float
    p2p_s: float
    exposed_comm_s: float
    comm_s: float
    optimizer_s: float
    tokens: float
    gpus: int
    mfu: float
    hfu: float
    memory: dict[str, float] = field(default_factory=dict)
    layout: dict[str, Any] = field(default_factory=dict)
    host_s: float = 0.0

    @property
    def tokens_per_s(self) -> float:
        """Tokens per second of the whole job."""
        return self.tokens / self.time_s


def train_step(base: dict[str, float], hw: Hardware, par: dict[str, Any], *, tp: int, ep: int,
               seq_len: int, link_bytes_per_s: float, network_bytes_per_s: float,
               latency_s: float, peak_flops_per_s: float,
               param_tensors: tuple[np.ndarray, np.ndarray] | None = None,
               efficiency: EfficiencyLike = "default") -> TrainStep:
    """The composed step of one layout ``par`` (checked arguments) as a :class:`TrainStep`
    (``param_tensors``, ``efficiency``: :func:`compose`'s)."""
    keys = ("dp", "pp", "cp", "zero", "recompute", "micro_batch", "grad_accum", "virtual_stages",
            "optimizer", "overlap", "sequence_parallel", "optimizer_update", "gpus_per_node",
            "reduce_bytes", "reshard_after_forward", "recompute_every")
    r = compose(base, hw, tp=tp, ep=ep, seq_len=seq_len, link_bytes_per_s=link_bytes_per_s,
                network_bytes_per_s=network_bytes_per_s, latency_s=latency_s,
                peak_flops_per_s=peak_flops_per_s, param_tensors=param_tensors,
                efficiency=efficiency, **{k: par[k] for k in keys},
                overlap_param_gather=par.get("overlap_param_gather"),
                fsdp=par.get("fsdp", "fsdp2"), clip_grad_norm=bool(par.get("clip_grad_norm")),
                offload_layers=par.get("offload_layers", 0),
                host_bytes_per_s=par.get("host_bytes_per_s", DEFAULT_HOST_LINK),
                pipeline_head=par.get("pipeline_head", "spread"),
                moe_a2a_overlap=bool(par.get("moe_a2a_overlap", False)))
    v = {k: float(np.asarray(x).reshape(-1)[0]) for k, x in r.items()}
    mem_keys = ("weights_bytes", "gradients_bytes", "optimizer_bytes", "activations_bytes",
                "total_bytes")
    layout = {k: par[k] for k in ("dp", "pp", "cp", "zero", "grad_accum", "virtual_stages",
                                  "micro_batch", "optimizer")}
    layout.update(tp=tp, ep=ep, recompute=recompute_name(
        par["recompute"], par["recompute_every"], par.get("recompute_modules", ())))
    return TrainStep(
        time_s=v["time_s"], compute_s=v["compute_s"], bubble_s=v["bubble_s"],
        bubble_fraction=v["bubble_fraction"], recompute_s=v["recompute_s"], p2p_s=v["p2p_s"],
        exposed_comm_s=v["exposed_comm_s"], comm_s=v["comm_s"], optimizer_s=v["optimizer_s"],
        tokens=v["tokens"], gpus=int(v["gpus"]), mfu=v["mfu"], hfu=v["hfu"],
        memory={k: v[k] for k in mem_keys}, layout=layout, host_s=v["host_s"])

