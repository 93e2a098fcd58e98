"""Which kernels one step launches, by runtime: the recording half of :func:`.estimate.estimate`.

``runtime="hf"`` / ``"compiled"``: the aten (or Inductor) calls a Hugging Face module runs
(:mod:`.hf`, :mod:`.compiled`). Otherwise the fused framework kernels of :mod:`.layers`,
which a serving engine (:mod:`.engines`) then rewrites into what it launches (its CUDA
graph's padded batch, its attention kernels, its eager host calls). Composer's per-batch
metrics (:func:`.composer.record_train_metrics`) follow the head in every runtime.
"""

from __future__ import annotations

from typing import Any

from ..hardware import Hardware
from .automodel import MODULES_AUTOMODEL, automodel_rewrite
from .compiled import record_compiled_step
from .composer import record_train_metrics
from .config import TransformerConfig
from .engines import ENGINE_RUNTIMES, EnginePlan, engine_host_calls, engine_plan, engine_rewrite
from .hf import check_hf, record_hf_step
from .layers import record_step
from .program import Program

__all__ = ["record_program"]


def record_program(fn: str, ops: Program, cfg: TransformerConfig, hw: Hardware, *,
                   runtime: str, phase: str, batch: int, q: int, kv: int, tp: int, ep: int,
                   cp: int, par: dict[str, Any], attn_kw: dict[str, Any], act_bytes: float,
                   kv_dtype_bytes: float, lowp: bool, skew: float, choices: dict[str, Any],
                   ) -> tuple[list[tuple[str, list[int]]], EnginePlan | None, str]:
    """Record one step's kernels into ``ops``.

    ``choices`` holds :func:`.program_choices.program_choices`' resolved settings (``launch``,
    ``cache``, ``reads``, ``gated``, ``plugin``, ``mods``, ``act``) with ``flash``, the
    linear ``recipe`` as the user named it and ``dtype``. Returns the layer groups, the
    engine's plan (None outside the serving engines) and the launch mode the step runs
    under (an engine's own: its CUDA graphs or eager forward). Raises
    :class:`~roofline.ArgumentValueError` for what the runtime does not run.
    """
    launch: str = choices["launch"]
    cp_arg = (cp, par["cp_comm"])
    engine = None
    if runtime in ("hf", "compiled"):
        check_hf(fn, cfg, phase, tp=tp, ep=ep, cp=cp_arg, recipe=choices["recipe"],
                 flash=choices["flash"], kv_dtype_bytes=kv_dtype_bytes, act_bytes=act_bytes,
                 runtime=runtime, sdpa=attn_kw["backend"])
        record = record_compiled_step if runtime == "compiled" else record_hf_step
        groups = record(ops, cfg, batch=batch, q=q, kv=kv, phase=phase, dtype=choices["dtype"],
                        cache=choices["cache"], cp=cp_arg, sdpa=attn_kw["backend"])
    else:
        engine = None if runtime not in ENGINE_RUNTIMES else engine_plan(
            fn, runtime, cfg, hw, phase, batch, cp, choices["flash"], launch, kv_dtype_bytes)
        run_batch = batch if engine is None else engine.batch  # a CUDA graph's padded batch
        # Megatron-Core's Transformer Engine modules save what TE saves (Program.te_modules)
        ops.te_modules = phase == "train" and choices["mods"] != "torch"
        groups = record_step(ops, cfg, batch=run_batch, q=q, kv=kv,
                             tokens=run_batch * q // cp, tp=tp, ep=ep,
                             cp=cp, phase=phase, attn_kw=attn_kw, act_bytes=act_bytes,
                             lowp=lowp, skew=skew, cp_comm=par["cp_comm"],
                             kv_per_query_head=choices["reads"] == "per_query_head",
                             separate_gate=choices["gated"] == "separate",
                             plugin_kv_bytes=kv_dtype_bytes if choices["plugin"] else None,
                             torch_modules=choices["mods"] == "torch",
                             loss_impl=par["cross_entropy"], activation=choices["act"])
        if choices["mods"] == MODULES_AUTOMODEL:
            automodel_rewrite(ops, cfg, run_batch * q // cp, tp)
        if engine is not None:
            launch = engine.launch
            engine_rewrite(ops, cfg, engine, batch, q, max(cfg.num_kv_heads // tp, 1),
                           kv_dtype_bytes, tp)
            if launch == "eager":  # the engine's nn.Module forward, run by Python
                ops.host_extra = engine_host_calls(cfg, groups)
    record_train_metrics(ops, len(groups) - 1, batch * q // cp, -(-cfg.vocab_size // tp),
                         par["train_metrics"])  # Composer's, on the head's logits
    return groups, engine, launch
