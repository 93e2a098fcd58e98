"""What a Composer + PyTorch FSDP1 training step runs beyond the model's own kernels.

MosaicML's llm-foundry trains MPT through Composer (0.17, torch 2.1) with PyTorch's
``FullyShardedDataParallel`` (FSDP1: one ``FlatParameter`` per wrapped block,
``use_orig_params=True``, Composer's default). Three things run every step that the model's
kernels do not cover, each counted from the source:

- **FSDP1's gradient path** (``torch/distributed/fsdp/_runtime_utils.py``,
  ``_post_backward_hook`` / ``_reduce_grad``, and autograd through ``_flat_param.py``'s
  views), per wrapped unit and micro-batch: the original parameters are views of the unsharded
  flat parameter (``split`` + ``view``), so autograd's ``split_with_sizes`` backward
  concatenates their gradients into one flat gradient (a copy of every unsharded element);
  with ``reduce_dtype`` fp32 under bf16 parameters (Composer's mixed precision ``DEFAULT``)
  the hook casts it to fp32 (``flat_param.grad.to(reduce_dtype)``); it divides it by the
  pre-divide factor (``_core.fsdp_predivide_factor``, 4 on 8 ranks) before the
  reduce-scatter and the shard by the rest after it; a bf16 shard (``PURE``) is cast back to
  the fp32 parameter's dtype; with gradient accumulation every micro-batch after the first
  adds its shard to the saved one. Every unshard casts the fp32 shard to bf16 before the
  all-gather (``_use_low_precision_shard``): in the forward, and again in the backward when
  the unit was resharded after its forward (``FULL_SHARD``).
- **Composer's ``DecoupledAdamW``** (``composer/optim/decoupled_weight_decay.py``): a Python
  loop over the parameters, each reading its step count with ``.item()`` (a device-to-host
  copy that waits for the queue to drain) and then launching its own kernels: ``exp_avg.mul_``,
  ``.add_(grad)``, ``exp_avg_sq.mul_``, ``.addcmul_``, ``sqrt``, the division by
  ``sqrt(bias_correction2)``, ``.add_(eps)`` and ``param.addcdiv_`` (weight decay 0, as the
  MPT yamls set it: no ``param.mul_``), after ``step()``'s ``state['step'] += 1`` per
  parameter. With ``use_orig_params`` each parameter is the view of the original tensor
  inside this rank's flat-parameter shard, so the loop runs once per tensor that the busiest
  rank's shards overlap (``_core.flat_shard_tensors``).
- **Composer's training metrics**: after every micro-batch's backward, ``_eval_train_metrics``
  updates ``LanguageCrossEntropy`` and ``LanguagePerplexity`` (llm-foundry's
  ``ComposerMPTCausalLM`` train metrics) on the kept logits, each a
  ``torch.nn.CrossEntropyLoss(reduction='sum')`` under autocast: ``cross_entropy`` is on
  autocast's fp32 list, so each casts the bf16 logits to fp32 and runs ``log_softmax`` over
  them (its ``nll_loss`` gather, a few bytes per row, is left out), with no backward.

- **Their per-batch compute** (:func:`metric_sync_s`): Composer's ``_train_loop`` calls
  ``_compute_and_log_metrics`` on the train metrics after every batch; each
  ``metric.compute()`` syncs its two 0-d ``sum`` states (``sum_loss``, ``total_items``)
  through torchmetrics' ``gather_all_tensors``: a ``barrier`` (a one-element all-reduce,
  then ``cudaDeviceSynchronize``: the host waits for the step's queue) and, the states being
  scalars, ``_simple_gather_all_tensors``: ``world`` ``zeros_like`` outputs, one
  ``all_gather`` into that list (``ProcessGroupNCCL::allgather`` gathers into a flat buffer,
  then ``copy_``s each of the ``world`` outputs out), then ``_sync_dist``'s ``stack`` and
  ``sum``. Every launch after the barrier meets an idle GPU: host bound, ``2 x world`` calls
  per state.

With ``clip_grad_norm`` the step also clips the gradients by their global norm as FSDP1 does
(:func:`clip_grad_norm_s`: a norm and a ``mul_`` per tensor shard, launched without a sync,
and a scalar all-reduce). The model's own eager modules (MPT's ``nn.Linear`` /
``nn.LayerNorm``) are :func:`.layers.torch_module_grads` (``modules="torch"``). Not modeled:
FSDP1's ``limit_all_gathers`` rate limiter and prefetch order (the composition's per-unit
overlap stands in for them), the Python time of FSDP1's hooks. The gradient-path passes run
on FSDP1's post-backward stream beside the next unit's backward; they are priced as if they
ran alone (their DRAM traffic and SMs taken from that backward).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from .. import _core
from ..efficiency import EfficiencyLike
from ..ops.elementwise import elementwise
from ..ops.host import HOST_CLASSES, calls_wall
from .config import TransformerConfig
from .program import Pass, Program

__all__ = ["ADAMW_PASSES", "FSDP_IMPLS", "TRAIN_METRIC_PASSES", "clip_grad_norm_s",
           "decoupled_adamw_s", "fsdp1_grad_pass_arrays", "fsdp1_grad_passes", "fsdp1_grad_s",
           "idle_calls_s", "layer_tensors", "passes_s", "passes_that_run", "rank_tensors",
           "metric_sync_s", "record_train_metrics", "root_tensors", "METRIC_STATES"]

#: FSDP implementations ``estimate(fsdp=)`` takes: FSDP2 (``fully_shard``, per-parameter
#: sharding: the composition's default), FSDP1 (:mod:`.composer`'s gradient path) and
#: Megatron-FSDP (its own buffers; :mod:`.fsdp_passes`).
FSDP_IMPLS = ("fsdp2", "fsdp1", "megatron")

#: DecoupledAdamW's kernels per parameter tensor, ``(reads, writes)`` of fp32 tensors of the
#: shard's size: ``exp_avg.mul_``, ``.add_(grad)``, ``exp_avg_sq.mul_``, ``.addcmul_(grad,
#: grad)`` (the gradient read once from DRAM), ``sqrt``, ``/ sqrt(bc2)``, ``.add_(eps)``,
#: ``param.addcdiv_(exp_avg, denom)``.
ADAMW_PASSES = ((1, 1), (2, 1), (1, 1), (2, 1), (1, 1), (1, 1), (1, 1), (3, 1))

#: Kernels of one cross-entropy training metric per logit element, ``(reads, writes)`` in
#: 2-byte units: autocast's cast of the bf16 logits to fp32 (reads 1, writes 2) and the fp32
#: ``log_softmax`` (reads 2, writes 2; a row of the vocabulary stays in L2 between its passes).
TRAIN_METRIC_PASSES = ((1, 2), (2, 2))

_KERNEL = HOST_CLASSES.index("kernel")

#: States of one Composer cross-entropy training metric that ``compute()`` syncs:
#: ``LanguageCrossEntropy``'s ``sum_loss`` and ``total_items`` (``add_state(...,
#: dist_reduce_fx='sum')``, 0-d tensors; ``LanguagePerplexity`` subclasses it).
METRIC_STATES = 2


def layer_tensors(cfg: TransformerConfig) -> np.ndarray:
    """Elements of one dense block's parameter tensors in module order (MPT's ``MPTBlock``):
    the first norm (weight, and bias for ``layernorm``), the fused QKV projection and the
    output projection (each with its bias when ``attention_bias``), the second norm, the
    up (or fused gate-up) and down projections (biases when ``mlp_bias``)."""
    h, d = cfg.hidden_size, cfg.head_dim
    qkv = (cfg.num_heads + 2 * cfg.num_kv_heads) * d
    up = (2 if cfg.mlp_gated else 1) * cfg.intermediate_size
    norm = [h, h] if cfg.norm == "layernorm" else [h]
    out: list[float] = list(norm)
    out += [h * qkv] + ([qkv] if cfg.attention_bias else [])
    out += [cfg.num_heads * d * h] + ([h] if cfg.attention_bias else [])
    out += norm
    out += [h * up] + ([up] if cfg.mlp_bias else [])
    out += [cfg.intermediate_size * h] + ([h] if cfg.mlp_bias else [])
    return np.array(out, dtype=float)


def root_tensors(cfg: TransformerConfig, seq_len: int) -> np.ndarray:
    """Elements of the root unit's tensors (the modules outside the blocks): the token
    embedding, the learned position table of ``seq_len`` rows when the model has no RoPE (MPT
    without ALiBi, ``max_seq_len`` = the run's sequence), the final norm and an untied head."""
    h = cfg.hidden_size
    out = [float(cfg.vocab_size * h)]
    if not cfg.rope:
        out.append(float(seq_len * h))
    out += [h, h] if cfg.norm == "layernorm" else [h]
    if not cfg.tie_embeddings:
        out.append(float(cfg.vocab_size * h))
    return np.array(out, dtype=float)


def rank_tensors(layer: np.ndarray, root: np.ndarray, layers: float, world: Any) -> np.ndarray:
    """Parameter tensors the busiest rank's optimizer steps: ``layers`` blocks of ``layer``
    (each its own flat parameter, cut alike) and the root unit, each flat parameter cut into
    ``world`` shards (``_core.flat_shard_tensors``: the rank whose shards overlap most tensors
    in all)."""
    numel = np.concatenate([layer, root]).astype(float)
    unit = np.concatenate([np.zeros(len(layer)), np.ones(len(root))])
    copies = np.array([float(layers), 1.0])
    w = np.asarray(world, dtype=float)
    vals, inv = np.unique(w.reshape(-1), return_inverse=True)
    per = np.array([_core.flat_shard_tensors(numel, unit, copies, v) for v in vals])
    out: np.ndarray = per[inv].reshape(w.shape)
    return out


def _fp32_pass(hw: Any, efficiency: EfficiencyLike) -> Callable[[int, int, int], float]:
    """Seconds of one fp32 ``roofline.elementwise`` kernel ``(numel, reads, writes)``."""
    def one(numel: int, reads: int, writes: int) -> float:
        return float(elementwise(numel, reads, writes, 0.0, "fp32", hw,
                                 efficiency=efficiency).time_s)
    return one


def _per_shard(tensors: Any, elements: Any, one: Callable[[float, int], float]) -> np.ndarray:
    """``one(n, per)`` for every broadcast pair of ``tensors`` (at least 1) and ``elements``
    on this rank, ``per`` the mean shard ``ceil(elements / n)`` (at least 1 element)."""
    n = np.maximum(np.asarray(tensors, dtype=float), 1.0)
    e = np.maximum(np.asarray(elements, dtype=float), 1.0)
    n, e = np.broadcast_arrays(n, e)
    out = np.zeros(n.shape)
    for idx in np.ndindex(n.shape):
        out[idx] = one(float(n[idx]), max(int(np.ceil(e[idx] / n[idx])), 1))
    return out


def idle_calls_s(times: Any, hw: Any, efficiency: EfficiencyLike = "default") -> float:
    """``roofline.ops.host.calls_wall`` of kernels of GPU ``times`` issued from an idle
    stream, one host call (class ``kernel``) for each after the first."""
    counts = np.zeros((len(times), len(HOST_CLASSES)))
    counts[1:, _KERNEL] = 1.0
    return float(calls_wall(times, counts, hw, efficiency=efficiency).wall_s)


def decoupled_adamw_s(tensors: Any, elements: Any, hw: Any,
                      efficiency: EfficiencyLike = "default") -> np.ndarray:
    """Time of Composer's ``DecoupledAdamW`` step over ``tensors`` parameter tensors holding
    ``elements`` fp32 elements on this rank (arrays), seconds.

    Each tensor's iteration starts on an idle GPU (the previous ``.item()`` drained the queue)
    and launches, one host call (class ``kernel``) each: the 8 kernels of
    :data:`ADAMW_PASSES` over ``elements / tensors`` elements (the mean shard), its
    ``state['step'] += 1`` (one element) and the next ``.item()``'s device-to-host copy (one
    element); ``roofline.ops.host.calls_wall`` runs that host issue against the stream, and
    the iterations add up: ``tensors × calls_wall``.
    """
    fp32_pass = _fp32_pass(hw, efficiency)

    def step(n: float, per: int) -> float:
        times = [0.0] + [fp32_pass(per, r, w) for r, w in ADAMW_PASSES]
        return n * idle_calls_s(times + [fp32_pass(1, 1, 1)] * 2, hw)

    return _per_shard(tensors, elements, step)


def clip_grad_norm_s(tensors: Any, elements: Any, hw: Any,
                     efficiency: EfficiencyLike = "default") -> np.ndarray:
    """Time of ``clip_grad_norm_`` by the global 2-norm over ``tensors`` gradient shards
    holding ``elements`` fp32 elements on this rank (arrays), seconds, the scalar all-reduce
    aside.

    FSDP1's ``clip_grad_norm_`` (torch 2.1; Composer's ``gradient_clipping`` algorithm with
    ``clipping_type: norm`` calls it on the root): one ``vector_norm`` per gradient (reads it),
    ``stack`` and the norm of the norms, ``** 2`` before and ``** 0.5`` after the all-reduce,
    ``max_norm / (norm + 1e-6)``'s add and division, ``clamp(max=1)``, then one ``mul_`` per
    gradient (reads and writes it; also when the factor is 1: no host sync). One host call
    (class ``kernel``) per kernel, from an idle stream (``roofline.ops.host.calls_wall``);
    each gradient is the mean shard ``elements / tensors``.
    """
    fp32_pass = _fp32_pass(hw, efficiency)

    def clip(n: float, per: int) -> float:
        k = int(n)
        norm, mul = fp32_pass(per, 1, 0), fp32_pass(per, 1, 1)
        return idle_calls_s([norm] * k + [fp32_pass(max(k, 1), 1, 1)] * 7 + [mul] * k, hw)

    return _per_shard(tensors, elements, clip)


def fsdp1_grad_pass_arrays(unsharded: Any, world: Any, reduce_bytes: Any, resharded: Any,
                           accumulate: Any) -> list[tuple[np.ndarray, Any, Any]]:
    """FSDP1's memory-bound passes of one unit per micro-batch over broadcast arrays, each
    ``(elements, reads, writes)`` in 2-byte units, ``elements`` 0 where the pass does not run
    (see the module docstring): over the ``unsharded`` elements the gradient's ``cat``
    (1, 1), its cast to fp32 when ``reduce_bytes`` is 4 (1, 2) and the pre-divide
    (``reduce_bytes / 2`` each way) when the factor (``_core.fsdp_predivide_factor``) exceeds
    1; over the shard (``unsharded / world``) the post-divide when ``world / factor > 1``, the
    cast of a bf16 shard to fp32 (1, 2), ``accumulate`` (the share of micro-batches that add
    to a saved shard: ``(m - 1) / m``) of the accumulation (reads 2 shards, writes one, fp32)
    and the low-precision cast of the fp32 parameter shard before each all-gather (2, 1):
    once, and again when ``resharded`` after the forward."""
    u, w, rb4, rs, acc = np.broadcast_arrays(*(np.asarray(x, dtype=float) for x in (
        unsharded, world, reduce_bytes, resharded, accumulate)))
    u = np.maximum(u, 0.0)
    w = np.maximum(w, 1.0)
    s = u / w
    vals, inv = np.unique(w.reshape(-1), return_inverse=True)
    f = np.array([_core.fsdp_predivide_factor(float(v)) for v in vals])[inv].reshape(w.shape)
    rb = rb4 / 2.0
    one = np.ones(u.shape)
    return [(u, 1.0, one),
            (np.where(rb4 >= 4, u, 0.0), 1.0, 2.0 * one),
            (np.where(f > 1, u, 0.0), rb, rb),
            (np.where(w / f > 1, s, 0.0), rb, rb),
            (np.where(rb4 < 4, s, 0.0), 1.0, 2.0 * one),
            (np.where(acc > 0, acc * s, 0.0), 4.0, 2.0 * one),
            (s, 2.0, one),
            (np.where(rs > 0, s, 0.0), 2.0, one)]


def fsdp1_grad_passes(unsharded: float, world: float, reduce_bytes: float,
                      resharded: bool, accumulate: float) -> list[Pass]:
    """:func:`fsdp1_grad_pass_arrays` of one unit (scalars), the passes that run, in order."""
    return passes_that_run(fsdp1_grad_pass_arrays(unsharded, world, reduce_bytes, resharded,
                                                  accumulate))


def passes_that_run(passes: list[tuple[Any, Any, Any]]) -> list[Pass]:
    """The passes of one unit (scalars or 0-d arrays) over more than zero elements, as
    ``(elements, reads, writes)`` floats, in order."""
    return [(float(e), float(r), float(w)) for e, r, w in passes if float(e) > 0]


def passes_s(passes: list[tuple[Any, Any, Any]], hw: Any,
             efficiency: EfficiencyLike = "default") -> np.ndarray:
    """Seconds of memory-bound passes ``(elements, reads, writes)`` (arrays broadcast; reads
    and writes in 2-byte units), each one bf16 ``roofline.elementwise`` kernel under
    ``efficiency`` (an fp32 tensor counts as two 2-byte elements); a pass over fewer than one
    element costs nothing; the passes add up."""
    total: np.ndarray = np.zeros(())
    for elements, reads, writes in passes:
        e = np.asarray(elements, dtype=float)
        n = np.maximum(np.ceil(e), 1).astype(np.int64)
        t = np.asarray(elementwise(n, reads, writes, 0.0, "bf16", hw,
                                   efficiency=efficiency).time_s, dtype=float)
        total = total + np.where(e >= 1, t, 0.0)
    return total


def fsdp1_grad_s(unsharded: Any, world: Any, reduce_bytes: Any, resharded: Any,
                 accumulate: Any, hw: Any, efficiency: EfficiencyLike = "default"
                 ) -> np.ndarray:
    """Time of :func:`fsdp1_grad_pass_arrays` of one unit per micro-batch (arrays broadcast),
    seconds (:func:`passes_s`)."""
    passes = fsdp1_grad_pass_arrays(unsharded, world, reduce_bytes, resharded, accumulate)
    out: np.ndarray = np.zeros(passes[0][0].shape) + passes_s(passes, hw, efficiency)
    return out


def record_train_metrics(ops: Program, g: int, tokens: int, vocab: int, metrics: int) -> None:
    """Record Composer's ``metrics`` cross-entropy training metrics over ``tokens x vocab``
    logits as one forward-only row of group ``g`` (the head): :data:`TRAIN_METRIC_PASSES`
    per metric (its ``nll_loss``, a few bytes per token, is left out)."""
    if metrics <= 0 or not vocab:
        return
    e = float(tokens) * vocab
    one = [(e, float(r), float(w)) for r, w in TRAIN_METRIC_PASSES]
    ops.passes(g, "train metrics (composer)", one * metrics, [])


def metric_sync_s(metrics: Any, world: Any, barrier_s: Any, gather_s: Any, hw: Any,
                  efficiency: EfficiencyLike = "default") -> np.ndarray:
    """Seconds Composer's per-batch ``compute()`` of ``metrics`` training metrics adds to a
    step over ``world`` ranks (arrays; 0 where ``metrics`` or ``world - 1`` is 0).

    Per metric, :data:`METRIC_STATES` syncs (torchmetrics ``gather_all_tensors``, 0-d states;
    torchmetrics ``src/torchmetrics/utilities/distributed.py``, Lightning-AI/torchmetrics @
    0d7799b), each ``barrier_s`` (the barrier's one-element all-reduce; the host then waits
    for the GPU) plus ``roofline.ops.host.calls_wall`` from an idle stream of: ``world``
    ``zeros_like`` fills, the ``all_gather`` (``gather_s``: 4 bytes from each rank), ``world``
    ``copy_``s out of PyTorch's flat buffer (``ProcessGroupNCCL::allgather``, same-size
    path), ``stack`` and ``sum`` — ``2 x world + 3`` host calls of class ``kernel``, the tiny
    kernels one-element ``roofline.elementwise`` passes::

        metrics x METRIC_STATES x (barrier_s + calls_wall([fill] x world + [gather_s]
                                                          + [copy] x world + [stack, sum]))

    The copies are C++ calls (no Python argument parsing), priced as the ``kernel`` class
    all the same."""
    m, w, bar, gat = np.broadcast_arrays(*(np.asarray(x, dtype=float)
                                           for x in (metrics, world, barrier_s, gather_s)))
    tiny = float(passes_s([(1.0, 1.0, 1.0)], hw, efficiency))
    out = np.zeros(m.shape)
    for idx in np.ndindex(m.shape):
        ranks = int(w[idx])
        if m[idx] <= 0 or ranks <= 1:
            continue
        times = [0.0] + [tiny] * ranks + [float(gat[idx])] + [tiny] * (ranks + 2)
        out[idx] = m[idx] * METRIC_STATES * (bar[idx] + idle_calls_s(times, hw))
    return out
