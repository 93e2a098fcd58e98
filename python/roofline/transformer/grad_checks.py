"""Megatron-Core's gradient checks before the data-parallel reduction
(``estimate(check_for_nan_in_grad=True)``), as NeMo 2.x's recipes leave them on.

What runs (Megatron-LM core_v0.12.0, ``distributed/param_and_grad_buffer.py``): when a
bucket's gradients are complete in the last micro-batch's backward, ``start_grad_sync``
calls ``check_grads``: ``bucket.grad_data.norm(p=2)`` (one read of the bucket's gradients),
then ``rerun_state_machine.validate_result`` with ``torch.isnan`` and again with
``torch.isinf``, each result evaluated as a Python bool (``rerun_state_machine.py``, disabled
mode): a device-to-host copy that waits for the GPU to drain. After each wait the GPU idles
while the host issues the next calls from an empty queue: the ``isinf`` kernel and its copy
(then the second wait), then the bucket's reduce-scatter and the next backward kernel
(:data:`CALLS_AFTER_EACH_WAIT`, priced by ``roofline.ops.host.calls_wall``).

Buckets (``distributed_data_parallel.py``): ``bucket_size = max(40e6, 1e6 x dp)`` elements;
``_ParamAndGradBuffer`` walks a model chunk's parameters in reverse registration order
(embedding, each layer's norm, QKV, output, norm, up and down projections, final norm, head)
and closes a bucket once it holds ``bucket_size`` (``_core.ddp_bucket_count``). Only the
first pipeline stage buckets (later stages: ``bucket_size = None``, one bucket per chunk);
NeMo 2.x's ``MegatronParallel`` (v2.3.0 ``nemo/lightning/megatron_parallel.py``) buckets its
first model chunk only, and none when ``overlap_param_gather_with_optimizer_step``, which
NeMo's performance scripts set for dp > 1, pp > 1 and vp > 1. The first stage finishes its
backward last, so its checks are on the step's path. Megatron-Bridge's performance scripts
turn the checks off (``_set_common_perf_overrides``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import _core
from ..efficiency import EfficiencyLike
from .composer import idle_calls_s, layer_tensors, passes_s
from .config import TransformerConfig

__all__ = ["CALLS_AFTER_EACH_WAIT", "check_buckets", "grad_check_s"]

#: Host calls (class ``kernel``) issued from an idle GPU after each of a bucket's two waits:
#: the ``isinf`` kernel and its device-to-host copy; the reduce-scatter and the next kernel.
CALLS_AFTER_EACH_WAIT = 2
#: Rows of a learned position table (GPT-3's ``max_position_embeddings``; a bucket-size
#: detail only: 2048 x hidden elements beside the vocabulary's).
_POSITIONS = 2048


def check_buckets(cfg: TransformerConfig, tp: int, dp: int, pp: int, vp: int
                  ) -> tuple[float, float]:
    """``(buckets, gradient elements)`` the first pipeline stage of a dense model checks per
    step: its ``ceil(L / pp)`` layers in ``vp`` chunks, the first with the embedding (a
    learned position table without RoPE) and, with ``pp == 1``, the final norm and an untied
    head after the layers. Linear weights and the vocabulary split ``tp`` ways; norms, the
    position table and the row-parallel biases are replicated."""
    h = float(cfg.hidden_size)
    layer = layer_tensors(cfg)
    rep = np.zeros(len(layer), dtype=bool)
    rep[layer == h] = True  # norms and the output / down projections' biases
    lay = np.where(rep, layer, layer / tp)
    emb = [cfg.vocab_size * h / tp] + ([] if cfg.rope else [_POSITIONS * h])
    tail: list[float] = []
    if pp == 1:
        tail = [h] * (2 if cfg.norm == "layernorm" else 1)
        tail += [] if cfg.tie_embeddings else [cfg.vocab_size * h / tp]
    stage_layers = float(np.ceil(cfg.num_layers / pp))
    chunk0 = np.concatenate([emb, np.tile(lay, int(np.ceil(stage_layers / vp))), tail])
    bucketed = pp == 1 or not (dp > 1 and vp > 1)
    bucket = max(40e6, 1e6 * dp) if bucketed else 0.0
    first = float(_core.ddp_bucket_count(chunk0[::-1].astype(float), bucket))
    elements = float(sum(emb) + lay.sum() * stage_layers + sum(tail))
    return first + (vp - 1), elements


def grad_check_s(cfg: TransformerConfig, tp: int, par: dict[str, Any], grad_bytes: float,
                 hw: Any, efficiency: EfficiencyLike = "default") -> float:
    """Seconds the first stage's checks (:func:`check_buckets` of the checked training
    arguments ``par``: ``dp``, ``pp``, ``virtual_stages``) add to a step, 0 unless
    ``par["check_for_nan_in_grad"]``: the norms' read of its gradients (``grad_bytes`` each;
    one ``roofline.elementwise`` pass per bucket, at the mean bucket) and per bucket the tiny
    ``isnan`` kernel queued behind the norm, then the host calls after each of its two waits
    from an idle stream (``calls_wall`` of :data:`CALLS_AFTER_EACH_WAIT` kernel calls, the
    ``isinf`` kernel among them: the GPU runs nothing else meanwhile)."""
    if not par.get("check_for_nan_in_grad"):
        return 0.0
    buckets, elements = check_buckets(cfg, tp, par["dp"], par["pp"], par["virtual_stages"])
    if buckets <= 0:
        return 0.0
    norm = float(passes_s([(elements / buckets, grad_bytes / 2.0, 0.0)], hw, efficiency))
    tiny = float(passes_s([(1.0, 1.0, 1.0)], hw, efficiency))
    wait = idle_calls_s([0.0] + [tiny] * CALLS_AFTER_EACH_WAIT, hw)
    return buckets * (norm + tiny + 2.0 * wait)
