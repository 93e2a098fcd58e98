"""One decode step, prefill or training step of a transformer, op by op, on one GPU."""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .. import float8 as _float8
from .._checks import one_of
from ..efficiency import EfficiencyLike
from ..hardware import Hardware, HardwareLike
from ..hardware import hardware as _hardware
from ..ops import elementwise, gemm, grouped_gemm
from ..ops.attention import attention
from ..ops.collectives import DEFAULT_LATENCY_S, all_gather, all_reduce, all_to_all, reduce_scatter
from ..ops.collectives import link_bytes_per_s as _link_bw
from ..ops.host import LAUNCH_MODES, WallTime, wall_time
from .config import TransformerConfig, config
from .report import COLUMNS, ModelEstimate
from .routing import expert_counts, rank_counts
from .training import (
    DEFAULT_NETWORK_BYTES_PER_S,
    OPTIMIZERS,
    RECOMPUTE,
    TrainStep,
    compose,
    micro_batch_terms,
)

__all__ = ["PHASES", "estimate"]

PHASES = ("decode", "prefill", "train")

#: Low-precision GEMM input format of each linear recipe (for batched expert / absorbed GEMMs).
_RECIPE_GEMM_DTYPE = {
    "tensorwise": "fp8", "rowwise": "fp8", "rowwise_with_gw_hp": "fp8",
    "blockwise": "fp8_block_1x128", "blockwise_1x128_128x128": "fp8_block_1x128",
    "mxfp4_cutlass": "mxfp4", "mxfp4": "mxfp4", "nvfp4": "nvfp4", "nvfp4_static": "nvfp4",
    "nvfp4_no_global_scale": "nvfp4",
}
#: Bytes of one stored weight element per GEMM format (block scales ignored).
_WEIGHT_BYTES = {"fp8": 1.0, "fp8_block_1x128": 1.0, "mxfp8": 1.0, "mxfp4": 0.5, "nvfp4": 0.5}


#: Formats a model's weights and activations may use, with their bytes per element.
_DTYPE_BYTES = {"bf16": 2.0, "fp16": 2.0, "fp32": 4.0}
_DTYPES = tuple(_DTYPE_BYTES)
#: KV-cache formats and their bytes per element.
_KV_BYTES = {"bf16": 2.0, "fp16": 2.0, "fp32": 4.0, "fp8": 1.0, "int8": 1.0}


def _recipe_dtype(recipe: str) -> str:
    return _RECIPE_GEMM_DTYPE.get(recipe, "mxfp8" if recipe.startswith("mxfp8") else "fp8")


@dataclass
class _Ops:
    """Op rows (name, group) and the kernel specs behind them, evaluated in a few array calls."""

    train: bool
    recipe: str | None
    rows: list[tuple[int, str, str, list[tuple[str, int]]]] = field(default_factory=list)
    gemms: list[tuple[float, float, float, float]] = field(default_factory=list)
    lowp: list[tuple[float, float, float, float]] = field(default_factory=list)
    f8: list[tuple[float, float, float]] = field(default_factory=list)
    elts: list[tuple[float, float, float]] = field(default_factory=list)
    attn: list[dict[str, Any]] = field(default_factory=list)
    comms: list[tuple[str, float, float]] = field(default_factory=list)
    grouped: list[tuple[tuple[int, ...], float, float]] = field(default_factory=list)
    saved: dict[int, float] = field(default_factory=dict)  # activation elements per group
    #: saved elements per (group, category): "rep" (hidden-size tensors replicated over tp,
    #: split by sequence parallelism), "attn_core" (attention output and softmax statistics,
    #: dropped by selective recomputation), "other"
    saved_by: dict[tuple[int, str], float] = field(default_factory=dict)
    #: link for expert-parallel all-to-alls when it differs from the default (bytes/s)
    ep_link: float | None = None

    def _row(self, group: int, name: str, kind: str, parts: list[tuple[str, int]]) -> None:
        self.rows.append((group, name, kind, parts))

    def _save(self, group: int, elements: float, cat: str = "other") -> None:
        self.saved[group] = self.saved.get(group, 0.0) + elements
        self.saved_by[group, cat] = self.saved_by.get((group, cat), 0.0) + elements

    def _push(self, kind: str, spec: Any) -> tuple[str, int]:
        store: list[Any] = getattr(self, kind)
        store.append(spec)
        return kind, len(store) - 1

    def linear(self, g: int, name: str, m: float, k: float, n: float, batch: float = 1,
               cat: str = "other") -> None:
        """x (m x k) @ w (k x n), ``batch`` independent weights (experts / heads)."""
        self._save(g, batch * m * k, cat)
        if self.recipe is not None:
            if batch == 1:
                part = self._push("f8", (m, k, n))
                self._row(g, name + (" (fwd+bwd)" if self.train else ""), "linear", [part])
                return
            fwd = self._push("lowp", (m, k, n, batch))
            self._row(g, name, "gemm", [fwd])
            if self.train:
                self._row(g, name + " bwd", "gemm", [self._push("lowp", (m, n, k, batch)),
                                                     self._push("lowp", (k, m, n, batch))])
            return
        self._row(g, name, "gemm", [self._push("gemms", (m, k, n, batch))])
        if self.train:  # dgrad (m x n @ n x k) and wgrad (k x m @ m x n)
            self._row(g, name + " bwd", "gemm", [self._push("gemms", (m, n, k, batch)),
                                                 self._push("gemms", (k, m, n, batch))])

    def grouped_linear(self, g: int, name: str, counts: tuple[int, ...], k: float,
                       n: float) -> None:
        """One grouped GEMM (``rl.grouped_gemm``): ``counts[i]`` rows times expert i's k x n."""
        self._save(g, sum(counts) * k)
        self._row(g, name, "gemm", [self._push("grouped", (counts, k, n))])
        if self.train:  # dgrad; wgrad modeled with the dgrad shape (same FLOPs, see Notes)
            self._row(g, name + " bwd", "gemm", [self._push("grouped", (counts, n, k)),
                                                 self._push("grouped", (counts, n, k))])

    def elementwise(self, g: int, name: str, numel: float, reads: int = 1,
                    writes: int = 1, cat: str = "other") -> None:
        """A memory-bound kernel over ``numel`` elements of ``reads`` inputs, ``writes`` outputs."""
        self._save(g, numel * reads, cat)
        self._row(g, name, "elementwise", [self._push("elts", (numel, reads, writes))])
        if self.train:  # reads grad-out + saved inputs, writes one grad per input
            self._row(g, name + " bwd", "elementwise",
                      [self._push("elts", (numel, reads + writes, reads))])

    def attention(self, g: int, name: str, **kw: Any) -> None:
        """One attention call (forward; plus its backward when training)."""
        b, q, kv = kw["batch"], kw["q_len"], kw["kv_len"]
        h, kvh = kw["heads"], kw.get("kv_heads", kw["heads"])
        d, dv = kw["head_dim"], kw.get("v_head_dim", kw["head_dim"])
        scale = kw.pop("scale", 1.0)  # context parallelism: this GPU's share of the work
        self._save(g, scale * b * (h * q * d + kvh * kv * (d + dv)))
        self._save(g, scale * b * (h * q * dv + 2 * h * q), "attn_core")
        self._row(g, name, "attention",
                  [self._push("attn", dict(kw, backward=False, scale=scale))])
        if self.train:
            self._row(g, name + " bwd", "attention",
                      [self._push("attn", dict(kw, backward=True, scale=scale))])

    def collective(self, g: int, name: str, op: str, nbytes: float, ranks: int,
                   bwd_op: str | None = None) -> None:
        """A collective (repeated in the backward pass when training, as ``bwd_op``)."""
        if ranks <= 1:
            return
        self._row(g, name, "collective", [self._push("comms", (op, nbytes, ranks))])
        if self.train:
            self._row(g, name + " bwd", "collective",
                      [self._push("comms", (bwd_op or op, nbytes, ranks))])


def _int(fn: str, name: str, value: Any, minimum: int = 1) -> int:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (numbers.Integral)):
        raise TypeError(f"{fn}: {name} must be an integer, got {value!r}")
    if int(value) < minimum:
        raise ValueError(f"{fn}: {name} must be an integer >= {minimum}, got {value!r}")
    return int(value)


def _phase(fn: str, phase: Any) -> str:
    """``decode`` / ``prefill`` / ``train`` (``training`` is ``train``); ValueError otherwise."""
    key = phase.strip().lower() if isinstance(phase, str) else phase
    key = "train" if key == "training" else key
    if key == "inference":
        raise ValueError(f"{fn}: phase 'inference' is ambiguous here: pass 'decode' (new tokens "
                         f"against a KV cache) or 'prefill' (a forward over the prompt)")
    if key not in PHASES:
        raise ValueError(f"{fn}: phase must be one of {PHASES} ('training' = 'train'), "
                         f"got {phase!r}")
    return str(key)


def estimate(
    model: TransformerConfig | str,
    phase: str = "decode",
    batch: int = 1,
    *,
    seq_len: int | None = None,
    kv_len: int | None = None,
    q_len: int = 1,
    hardware: HardwareLike = None,
    tp: int = 1,
    ep: int = 1,
    linear_recipe: str | None = None,
    dtype: str = "bf16",
    kv_dtype: str | None = None,
    kv_dtype_bytes: float | None = None,
    flash: bool = True,
    efficiency: EfficiencyLike = "default",
    link_bytes_per_s: float | None = None,
    latency_s: float = DEFAULT_LATENCY_S,
    launch: str = "eager",
    dp: int = 1,
    pp: int = 1,
    cp: int = 1,
    zero: int | str = 0,
    recompute: str = "none",
    micro_batch: int | None = None,
    grad_accum: int = 1,
    virtual_stages: int = 1,
    optimizer: str = "adam",
    overlap: bool = True,
    sequence_parallel: bool = False,
    optimizer_update: bool = False,
    routing_skew: float = 0.0,
    gpus_per_node: int | None = None,
    network_bytes_per_s: float | None = None,
) -> ModelEstimate:
    """Estimate one step of a transformer on one GPU, op by op, with memory per GPU.

    Parameters
    ----------
    model : TransformerConfig or str
        A configuration or a built-in name (``rl.transformer.list_configs()``).
    phase : {"decode", "prefill", "train"}
        ``decode``: ``q_len`` new tokens per sequence against ``kv_len`` keys (KV cache
        included). ``prefill``: a causal forward over ``seq_len`` tokens (logits of the last
        token only). ``train`` (or ``training``): forward and backward over ``seq_len`` tokens.
    batch : int
        Sequences processed by the GPUs of one tensor-parallel group (per GPU when ``tp=1``;
        with expert parallelism, attention is data parallel: ``batch`` per GPU).
    seq_len : int
        Prompt / training sequence length (prefill, train).
    kv_len : int
        Keys per sequence in decode (cached tokens plus the new ``q_len``).
    q_len : int
        New tokens per sequence in decode (1; more for speculative decoding).
    hardware : Hardware or str, optional
        Accelerator (default: detected / ``rl.set_default_hardware``).
    tp : int
        Tensor parallelism (Megatron): heads, MLP width and vocabulary split ``tp`` ways, an
        all-reduce after the attention and the MLP blocks.
    ep : int
        Expert parallelism: ``num_experts / ep`` routed experts per GPU, tokens dispatched and
        combined with two all-to-alls per MoE layer.
    linear_recipe : str, optional
        Run linear layers through ``rl.float8.linear(..., recipe=linear_recipe)`` (casts
        included) and batched expert / absorbed-MLA GEMMs in the recipe's low-precision
        format; default: bf16 ``rl.gemm``.
    dtype : {"bf16", "fp16", "fp32"}
        Format of weights, activations and the GEMMs without a ``linear_recipe``.
    kv_dtype : str, optional
        Format of the KV cache (e.g. ``"fp8"``); default: ``dtype``.
    kv_dtype_bytes : float, optional
        Bytes per cached K/V element, overriding ``kv_dtype`` (e.g. 0.5 for a 4-bit cache).
    flash : bool
        Fused attention kernels (default) or materialized scores.
    efficiency : str or Efficiency
        Efficiency model for every kernel.
    link_bytes_per_s, latency_s : float, optional
        Collective link bandwidth per direction (default: half the hardware's bidirectional
        interconnect) and latency per step.
    launch : {"eager", "compiled", "graph"}
        How the step's kernels are launched, for ``wall_s``: ``"eager"`` (default: plain
        PyTorch, e.g. Hugging Face models), ``"compiled"`` (``torch.compile``: one region
        for the forward, one for the backward) or ``"graph"`` (a CUDA graph per step, as
        serving engines run decode). ``time_s`` (GPU time) does not depend on it.
    dp, pp, cp : int
        Training only: data-parallel replicas, pipeline stages (1F1B) and context-parallel
        ranks (the sequence split ``cp`` ways; K and V all-gathered per layer, their
        gradients reduce-scattered; attention work split evenly, as with load-balanced
        causal chunks). The job uses ``dp·pp·tp·cp`` GPUs.
    zero : {0, 1, 2, 3, "fsdp"}
        Training: ZeRO stage sharding optimizer states (1), also gradients (2), also weights
        (3 = ``"fsdp"``: per-layer all-gather in forward and backward, reduce-scatter of
        gradients, every micro-batch) over the data-parallel ranks.
    recompute : {"none", "selective", "full"}
        Training: activation recomputation. ``selective`` recomputes the attention core
        (drops its output and softmax statistics), ``full`` keeps only each layer's input; both
        add their forward to the step.
    micro_batch : int, optional
        Training: sequences per micro-batch per replica (default and alias: ``batch``).
    grad_accum : int
        Training: micro-batches per step ``m`` (the pipeline's micro-batches).
    virtual_stages : int
        Training: interleaved model chunks per GPU ``v`` (bubble ``(p-1)/(v·m+p-1)``).
    optimizer : {"adam", "adam_8bit", "adam_bf16"}
        Training: optimizer state per parameter: 12 bytes (fp32 master, fp32 moments), 6
        (8-bit moments) or 4 (bf16 moments, no master copy).
    overlap : bool
        Training: overlap data-parallel / FSDP communication with compute.
    sequence_parallel : bool
        Training: Megatron sequence parallelism (norm / residual activations split by ``tp``).
    optimizer_update : bool
        Training: add the optimizer update (memory-bound pass over the optimizer shard) to the
        step time; off by default so single-GPU results stay as before.
    routing_skew : float
        MoE routing: Zipf exponent of tokens per expert (0 = uniform). The most loaded
        expert-parallel rank sets the time.
    gpus_per_node : int, optional
        GPUs per scale-up domain: groups spanning more ranks (ranks ordered tp, cp, dp, pp; ep
        spans the first ``ep``) communicate at ``network_bytes_per_s``. Default: one domain.
    network_bytes_per_s : float, optional
        Scale-out bandwidth per GPU and direction (default 50 GB/s: a 400 Gb/s NIC per GPU).

    Returns
    -------
    ModelEstimate
        ``.table()`` (per layer and op), ``.summary()``, ``.totals``, ``.memory``;
        ``.time_s`` (GPU time), ``.wall_s`` and ``.launch_bound`` (host launch overhead).

    Notes
    -----
    Layers of one kind (dense / MoE) have identical ops, so each kind is computed once and
    multiplied by its layer count; the per-layer table repeats the rows. Ops per layer:
    norm, QKV projection (MLA: fused q_a/kv_a, norms, q_b; decode absorbs ``W_UK`` /
    ``W_UV`` into batched per-head GEMMs and runs FlashMLA-style attention with
    ``kv_heads=1``, ``head_dim = kv_lora_rank + rope``, ``shared_kv``; prefill/train
    expand K and V with ``kv_b``), optional qk-norm, RoPE, attention (causal, bottom-right
    aligned), output projection, TP all-reduce, residual add; then norm, MLP (gate/up,
    activation, down) or MoE (router, top-k, dispatch all-to-all, routed experts, shared
    experts, combine all-to-all, weighted sum), TP all-reduce, residual add. The cache append
    is assumed fused into the QKV/RoPE kernels.

    MoE experts run as ``rl.grouped_gemm`` over per-expert token counts: the ``T·ep·k``
    assignments of an expert-parallel group (``T`` tokens per GPU, top-``k``) split over the
    ``E`` experts by a Zipf share ``i^-s / sum j^-s`` (``s = routing_skew``; 0 = uniform),
    rounded to integers (largest remainder, so small decode batches leave experts idle);
    expert ``i`` sits on rank ``i mod ep`` and the most loaded rank is modeled; experts with
    no token are skipped. The dispatch / combine all-to-alls carry that rank's
    ``max(received, T·k)`` rows. In training, the expert weight gradient is modeled with the
    input-gradient shape (same FLOPs; it reads the activation instead of the weight).
    Elementwise kernels run in bf16; their backward reads the output gradient and saved
    inputs and writes one gradient per input.

    Training with the parallel arguments (see :mod:`roofline.transformer.training`): the op
    table is one micro-batch on one GPU holding every layer; ``time_s`` is the step
    ``m·(fwd + bwd + recompute)/pp`` plus the bubble ``(p-1)/v`` of a micro-batch, pipeline
    sends, exposed data-parallel communication (overlapped with the last micro-batch's
    backward, except one layer's share) and the optimizer update when asked; ``.step`` holds
    the decomposition, ``tokens_per_s`` counts the whole job and ``mfu`` uses the table's
    FLOPs (recomputation excluded). With every parallel argument at its default the step is
    the table's sum, as before.

    Memory per GPU: weights sharded by ``tp`` (attention heads, MLP width, vocabulary) and
    ``ep`` (routed experts), at 2 bytes per parameter or the recipe's element size for
    linear weights (block scales ignored); the KV cache of ``batch`` sequences (MLA's latent
    is replicated across ``tp``); for training, bf16 gradients and fp32 Adam state
    (master weights, two moments: 12 bytes per parameter, no ZeRO sharding) and the saved
    activations (every op's inputs in bf16, no recomputation: an upper estimate).
    """
    fn = "transformer.estimate"
    cfg = config(model)
    launch = one_of(fn, "launch", launch, {m: m for m in LAUNCH_MODES})
    phase = _phase(fn, phase)
    batch = _int(fn, "batch", batch)
    tp = _int(fn, "tp", tp)
    ep = _int(fn, "ep", ep)
    q_len = _int(fn, "q_len", q_len)
    if phase == "decode":
        if kv_len is None:
            raise ValueError(f"{fn}: decode needs kv_len (cached tokens + q_len)")
        kv = _int(fn, "kv_len", kv_len)
        if kv < q_len:
            raise ValueError(f"{fn}: kv_len must be >= q_len ({q_len}), got {kv_len!r}")
        q = q_len
    else:
        if seq_len is None:
            raise ValueError(f"{fn}: {phase} needs seq_len")
        q = kv = _int(fn, "seq_len", seq_len)
    if cfg.num_heads % tp:
        raise ValueError(f"{fn}: tp must divide num_heads ({cfg.num_heads}), got tp={tp}")
    if cfg.is_moe and cfg.num_experts % ep:
        raise ValueError(f"{fn}: ep must divide num_experts ({cfg.num_experts}), got ep={ep}")
    if not cfg.is_moe and ep != 1:
        raise ValueError(f"{fn}: ep > 1 needs an MoE model, {cfg.name} is dense (ep={ep})")
    if linear_recipe is not None:
        _float8._recipe(fn, linear_recipe)
    if not isinstance(flash, bool):
        raise TypeError(f"{fn}: flash must be a bool, got {flash!r}")
    hw: Hardware = _hardware(hardware)
    comm_bw = link_bytes_per_s
    if comm_bw is None and (tp > 1 or ep > 1):
        comm_bw = _link_bw(hw)

    train = phase == "train"
    par = _train_args(fn, phase, batch, dp=dp, pp=pp, cp=cp, zero=zero, recompute=recompute,
                      micro_batch=micro_batch, grad_accum=grad_accum,
                      virtual_stages=virtual_stages, optimizer=optimizer, overlap=overlap,
                      sequence_parallel=sequence_parallel, optimizer_update=optimizer_update,
                      gpus_per_node=gpus_per_node, network_bytes_per_s=network_bytes_per_s)
    batch = par["micro_batch"]
    cp = par["cp"]
    if q % cp:
        raise ValueError(f"{fn}: cp must divide seq_len ({q}), got cp={cp}")
    if par["pp"] > cfg.num_layers:
        raise ValueError(f"{fn}: pp must be <= num_layers ({cfg.num_layers}), got pp={pp}")
    if not isinstance(routing_skew, (int, float)) or isinstance(routing_skew, bool) or not (
            0 <= routing_skew <= 10):
        raise ValueError(f"{fn}: routing_skew must be a number in [0, 10], got {routing_skew!r}")
    net_bw = DEFAULT_NETWORK_BYTES_PER_S if network_bytes_per_s is None else network_bytes_per_s
    if comm_bw is None and (cp > 1 or par["dp"] > 1 or par["pp"] > 1):
        comm_bw = _link_bw(hw)
    ops = _Ops(train=train, recipe=linear_recipe)
    if gpus_per_node is not None and ep > gpus_per_node:
        ops.ep_link = net_bw
    tokens = batch * q
    if dtype not in _DTYPES:
        raise ValueError(f"transformer.estimate: dtype must be one of {_DTYPES}, got {dtype!r}")
    act_bytes = _DTYPE_BYTES[dtype]
    if kv_dtype_bytes is None:
        kv_name = dtype if kv_dtype is None else kv_dtype
        if kv_name not in _KV_BYTES:
            raise ValueError(f"transformer.estimate: kv_dtype must be one of {tuple(_KV_BYTES)}, "
                             f"got {kv_dtype!r}")
        kv_dtype_bytes = _KV_BYTES[kv_name]
    elif not (isinstance(kv_dtype_bytes, (int, float)) and 0 < kv_dtype_bytes <= 8):
        raise ValueError(f"transformer.estimate: kv_dtype_bytes must be in (0, 8], "
                         f"got {kv_dtype_bytes!r}")
    kinds = cfg.layer_kinds()
    groups: list[tuple[str, list[int]]] = []
    for kind in ("dense", "moe"):
        layers = [i for i, k in enumerate(kinds) if k == kind]
        if layers:
            groups.append((kind, layers))
    # An 8-bit KV cache is modeled as fp8 attention: K and V are read in fp8 (the math then
    # runs at the fp8 peak, which matters only for compute-bound prefill).
    attn_kw: dict[str, Any] = dict(causal=True, flash=flash,
                                   dtype="fp8" if kv_dtype_bytes == 1.0 else dtype)
    if cp > 1:
        attn_kw["scale"] = 1.0 / cp
    local = tokens // cp  # tokens per GPU
    for gi, (kind, _) in enumerate(groups):
        _attention_block(ops, gi, cfg, batch, q, kv, tp, phase, attn_kw, act_bytes, cp)
        if kind == "dense":
            _dense_mlp(ops, gi, cfg, local, tp, act_bytes)
        else:
            _moe_mlp(ops, gi, cfg, local, tp, ep, act_bytes, linear_recipe is not None,
                     float(routing_skew))
    head = len(groups)
    groups.append(("head", []))
    _head(ops, head, cfg, batch, q, local, tp, phase)

    cols = _evaluate(ops, hw, efficiency, linear_recipe, comm_bw, latency_s, dtype)
    weight_bytes = (act_bytes if linear_recipe is None
                    else _WEIGHT_BYTES[_recipe_dtype(linear_recipe)])
    memory = _memory(cfg, hw, batch, kv, tp, ep, phase, weight_bytes, kv_dtype_bytes, ops,
                     groups, dtype_bytes=act_bytes)
    peak_class = ("fp32" if dtype == "fp32" else "bf16") if linear_recipe is None else (
        "fp4" if weight_bytes < 1 else "fp8")
    wall = _wall(ops, cols["time_s"], groups, hw, efficiency, launch, phase)
    peak = hw.peak_flops_per_s(peak_class) if getattr(
        hw, f"{peak_class}_flops_per_s") else float("nan")
    step = None
    if train:
        expert_split = ep if ep > 1 else tp
        expert_p = cfg.param_counts()["experts"] / expert_split
        base = micro_batch_terms(
            [(g, name, kind) for g, name, kind, _ in ops.rows], cols, groups, ops.saved_by,
            memory, expert_p, expert_p * weight_bytes, cfg.num_layers, cfg.hidden_size, local,
            act_bytes)
        step = _train_step(base, hw, par, tp=tp, ep=ep, seq_len=q,
                           link_bytes_per_s=comm_bw or 1.0, network_bytes_per_s=net_bw,
                           latency_s=latency_s, peak_flops_per_s=peak)
        memory = dict(memory, **step.memory)
    est = ModelEstimate(
        config=cfg, phase=phase, hardware=hw.name, batch=batch, q_len=q, kv_len=kv, tp=tp,
        ep=ep, tokens=tokens, groups=groups,
        rows=[(g, name, kind) for g, name, kind, _ in ops.rows], columns=cols, memory=memory,
        peak_flops_per_s=peak, linear_recipe=linear_recipe, launch=launch, wall=wall,
        step=step,
    )
    if train:  # the planner re-composes other layouts from these micro-batch terms
        est._cache["train_base"] = base
    return est


_TRAIN_DEFAULTS = {"dp": 1, "pp": 1, "cp": 1, "zero": 0, "recompute": "none",
                   "micro_batch": None, "grad_accum": 1, "virtual_stages": 1,
                   "optimizer": "adam", "overlap": True, "sequence_parallel": False,
                   "optimizer_update": False}


def _train_args(fn: str, phase: str, batch: int, **kw: Any) -> dict[str, Any]:
    """Validated parallel-training arguments (errors name the argument and its value)."""
    if phase != "train":
        bad = [k for k, v in _TRAIN_DEFAULTS.items() if kw[k] != v]
        if bad:
            raise ValueError(f"{fn}: {bad[0]} applies to phase='train' only, got "
                             f"{bad[0]}={kw[bad[0]]!r} with phase={phase!r}")
    out: dict[str, Any] = {}
    for name in ("dp", "pp", "cp", "grad_accum", "virtual_stages"):
        out[name] = _int(fn, name, kw[name])
    mb = kw["micro_batch"]
    out["micro_batch"] = batch if mb is None else _int(fn, "micro_batch", mb)
    if mb is not None and batch != 1 and batch != out["micro_batch"]:
        raise ValueError(f"{fn}: micro_batch ({mb}) and batch ({batch}) disagree; pass one")
    z = kw["zero"]
    if z == "fsdp":
        z = 3
    if isinstance(z, bool) or z not in (0, 1, 2, 3):
        raise ValueError(f"{fn}: zero must be 0, 1, 2, 3 or 'fsdp', got {kw['zero']!r}")
    out["zero"] = int(z)
    out["recompute"] = one_of(fn, "recompute", kw["recompute"], RECOMPUTE)
    out["optimizer"] = kw["optimizer"]
    one_of(fn, "optimizer", kw["optimizer"], OPTIMIZERS)
    for name in ("overlap", "sequence_parallel", "optimizer_update"):
        if not isinstance(kw[name], bool):
            raise TypeError(f"{fn}: {name} must be a bool, got {kw[name]!r}")
        out[name] = kw[name]
    if out["virtual_stages"] > 1 and out["pp"] == 1:
        raise ValueError(f"{fn}: virtual_stages > 1 needs pp > 1, got "
                         f"virtual_stages={out['virtual_stages']}")
    gpn = kw["gpus_per_node"]
    out["gpus_per_node"] = None if gpn is None else _int(fn, "gpus_per_node", gpn)
    nb = kw["network_bytes_per_s"]
    if nb is not None and not (isinstance(nb, (int, float)) and not isinstance(nb, bool)
                               and nb > 0):
        raise ValueError(f"{fn}: network_bytes_per_s must be a positive number, got {nb!r}")
    out["dp"] = out["dp"]
    return out


def _train_step(base: dict[str, float], hw: Hardware, par: dict[str, Any], *, tp: int, ep: int,
                seq_len: int, link_bytes_per_s: float, network_bytes_per_s: float,
                latency_s: float, peak_flops_per_s: float) -> TrainStep:
    r = compose(base, hw, dp=par["dp"], pp=par["pp"], tp=tp, ep=ep, cp=par["cp"],
                zero=par["zero"], recompute=par["recompute"], micro_batch=par["micro_batch"],
                grad_accum=par["grad_accum"], virtual_stages=par["virtual_stages"],
                seq_len=seq_len, optimizer=par["optimizer"], overlap=par["overlap"],
                sequence_parallel=par["sequence_parallel"],
                optimizer_update=par["optimizer_update"], gpus_per_node=par["gpus_per_node"],
                link_bytes_per_s=link_bytes_per_s, network_bytes_per_s=network_bytes_per_s,
                latency_s=latency_s, peak_flops_per_s=peak_flops_per_s)
    v = {k: float(np.asarray(x).reshape(-1)[0]) for k, x in r.items()}
    mem_keys = ("weights_bytes", "gradients_bytes", "optimizer_bytes", "activations_bytes",
                "total_bytes")
    layout = {k: par[k] for k in ("dp", "pp", "cp", "zero", "grad_accum", "virtual_stages",
                                  "micro_batch", "optimizer")}
    layout.update(tp=tp, ep=ep, recompute=next(k for k, c in RECOMPUTE.items()
                                               if c == par["recompute"]))
    return TrainStep(
        time_s=v["time_s"], compute_s=v["compute_s"], bubble_s=v["bubble_s"],
        bubble_fraction=v["bubble_fraction"], recompute_s=v["recompute_s"], p2p_s=v["p2p_s"],
        exposed_comm_s=v["exposed_comm_s"], comm_s=v["comm_s"], optimizer_s=v["optimizer_s"],
        tokens=v["tokens"], gpus=int(v["gpus"]), mfu=v["mfu"], hfu=v["hfu"],
        memory={k: v[k] for k in mem_keys}, layout=layout)


#: Kernels of one float8 linear per (recipe, training): the list depends on neither shape nor
#: hardware.
_F8_KERNELS: dict[tuple[str, bool], int] = {}


def _f8_kernels(ops: _Ops, hw: Hardware, efficiency: EfficiencyLike) -> int:
    """Kernels one float8 linear of this step launches (casts and GEMMs)."""
    if not ops.f8 or ops.recipe is None:
        return 0
    key = (ops.recipe, ops.train)
    if key not in _F8_KERNELS:
        m, k, n = ops.f8[0]
        r = _float8.linear(m, k, n, recipe=ops.recipe, hardware=hw,
                           mode="training" if ops.train else "inference", efficiency=efficiency)
        _F8_KERNELS[key] = max(1, len(r.kernels()))
    return _F8_KERNELS[key]


def _wall(ops: _Ops, row_time_s: np.ndarray, groups: list[tuple[str, list[int]]],
          hw: Hardware, efficiency: EfficiencyLike, launch: str, phase: str) -> WallTime:
    """Wall time of the step's kernels: each row's time split evenly over its kernels, rows
    of a layer kind repeated per layer (kinds in order, then the head), one compiled region
    per pass (forward; backward when training)."""
    f8 = _f8_kernels(ops, hw, efficiency)
    per_row = np.array([sum(f8 if kind == "f8" else 1 for kind, _ in parts)
                        for _, _, _, parts in ops.rows], dtype=np.int64)
    times: list[np.ndarray] = []
    for g, (kind, layers) in enumerate(groups):
        idx = [i for i, row in enumerate(ops.rows) if row[0] == g]
        counts = per_row[idx]
        one = np.repeat(row_time_s[idx] / np.maximum(counts, 1), counts)
        times.append(np.tile(one, len(layers) if kind != "head" else 1))
    seq = np.concatenate(times) if times else np.zeros(1)
    if seq.size == 0:
        seq = np.zeros(1)
    regions = min(2 if phase == "train" else 1, seq.size) if launch == "compiled" else 1
    return wall_time(seq, launch, hw, efficiency=efficiency, regions=regions)


def _attention_block(ops: _Ops, g: int, cfg: TransformerConfig, batch: int, q: int, kv: int,
                     tp: int, phase: str, attn_kw: dict[str, Any], act_bytes: float,
                     cp: int = 1) -> None:
    t = batch * q // cp
    if cp > 1:  # all-gather K and V of the sequence (reduce-scatter their gradients)
        kv_width = (cfg.num_heads // tp * (cfg.qk_nope_head_dim + cfg.qk_rope_head_dim
                                           + cfg.v_head_dim) if cfg.is_mla
                    else 2 * max(cfg.num_kv_heads // tp, 1) * cfg.head_dim)
        ops.collective(g, "cp all_gather kv", "all_gather", batch * q * kv_width * act_bytes,
                       cp, bwd_op="reduce_scatter")
    hid = cfg.hidden_size
    heads = cfg.num_heads // tp
    ops.elementwise(g, "attn_norm", t * hid, cat="rep")
    if cfg.is_mla:
        nope, rope, lat = cfg.qk_nope_head_dim, cfg.qk_rope_head_dim, cfg.kv_lora_rank
        qk, vd = nope + rope, cfg.v_head_dim
        if cfg.q_lora_rank:
            ops.linear(g, "q_a+kv_a_proj", t, hid, cfg.q_lora_rank + lat + rope)
            ops.elementwise(g, "q_a_norm", t * cfg.q_lora_rank)
            ops.elementwise(g, "kv_a_norm", t * lat)
            ops.linear(g, "q_b_proj", t, cfg.q_lora_rank, heads * qk)
        else:
            ops.linear(g, "q_proj+kv_a_proj", t, hid, heads * qk + lat + rope)
            ops.elementwise(g, "kv_a_norm", t * lat)
        if phase == "decode":  # absorbed (FlashMLA): attention over the latent cache
            ops.linear(g, "q_absorb (W_UK)", t, nope, lat, batch=heads)
            ops.elementwise(g, "rope", t * (heads + 1) * rope)
            ops.attention(g, "attention (MLA absorbed)", batch=batch, heads=heads, kv_heads=1,
                          q_len=q, kv_len=kv, head_dim=lat + rope, v_head_dim=lat,
                          shared_kv=True, **attn_kw)
            ops.linear(g, "v_up (W_UV)", t, lat, vd, batch=heads)
        else:
            ops.linear(g, "kv_b_proj", t, lat, heads * (nope + vd))
            ops.elementwise(g, "rope", t * (heads + 1) * rope)
            ops.attention(g, "attention (MLA)", batch=batch, heads=heads, kv_heads=heads,
                          q_len=q, kv_len=kv, head_dim=qk, v_head_dim=vd, **attn_kw)
        ops.linear(g, "o_proj", t, heads * vd, hid)
    else:
        d = cfg.head_dim
        kvh = cfg.num_kv_heads // tp if cfg.num_kv_heads >= tp else 1  # replicated below tp
        ops.linear(g, "qkv_proj", t, hid, (heads + 2 * kvh) * d)
        if cfg.qk_norm:
            ops.elementwise(g, "qk_norm", t * (heads + kvh) * d)
        if cfg.rope:
            ops.elementwise(g, "rope", t * (heads + kvh) * d)
        ops.attention(g, "attention", batch=batch, heads=heads, kv_heads=kvh, q_len=q,
                      kv_len=kv, head_dim=d, **attn_kw)
        ops.linear(g, "o_proj", t, heads * d, hid)
    ops.collective(g, "attn all_reduce", "all_reduce", t * hid * act_bytes, tp)
    ops.elementwise(g, "attn_residual", t * hid, reads=2, cat="rep")


def _dense_mlp(ops: _Ops, g: int, cfg: TransformerConfig, t: int, tp: int,
               act_bytes: float) -> None:
    hid = cfg.hidden_size
    inter = math.ceil(cfg.intermediate_size / tp)
    ops.elementwise(g, "mlp_norm", t * hid, cat="rep")
    if cfg.mlp_gated:
        ops.linear(g, "gate_up_proj", t, hid, 2 * inter)
        ops.elementwise(g, "act (silu*up)", t * inter, reads=2)
    else:
        ops.linear(g, "up_proj", t, hid, inter)
        ops.elementwise(g, "act", t * inter)
    ops.linear(g, "down_proj", t, inter, hid)
    ops.collective(g, "mlp all_reduce", "all_reduce", t * hid * act_bytes, tp)
    ops.elementwise(g, "mlp_residual", t * hid, reads=2, cat="rep")


def _moe_mlp(ops: _Ops, g: int, cfg: TransformerConfig, t: int, tp: int, ep: int,
             act_bytes: float, lowp: bool, skew: float = 0.0) -> None:
    hid, e, k = cfg.hidden_size, cfg.num_experts, cfg.experts_per_token
    mats = 2 if cfg.mlp_gated else 1
    width = cfg.moe_intermediate_size if ep > 1 else math.ceil(cfg.moe_intermediate_size / tp)
    ops.elementwise(g, "mlp_norm", t * hid, cat="rep")
    ops.linear(g, "router", t, hid, e, cat="rep")
    ops.elementwise(g, "topk", t * e, reads=1, writes=1)
    # The ep ranks route t tokens each; this GPU is the most loaded rank.
    local = rank_counts(expert_counts(t * ep, e, k, skew), ep)
    received = int(local.sum())
    dispatch_bytes = 1.0 if lowp else act_bytes  # fp8 dispatch with a low-precision recipe
    exchanged = max(received, t * k) * hid  # the busiest rank's send or receive buffer
    ops.collective(g, "dispatch all_to_all", "all_to_all", exchanged * dispatch_bytes, ep)
    used = tuple(int(c) for c in local if c > 0) or (1,)
    ops.grouped_linear(g, "experts gate_up", used, hid, mats * width)
    ops.elementwise(g, "experts act", sum(used) * width, reads=mats)
    ops.grouped_linear(g, "experts down", used, width, hid)
    ops.collective(g, "combine all_to_all", "all_to_all", exchanged * act_bytes, ep)
    if cfg.num_shared_experts:
        sw = math.ceil(cfg.num_shared_experts * cfg.moe_intermediate_size / tp)
        ops.linear(g, "shared gate_up", t, hid, mats * sw)
        ops.elementwise(g, "shared act", t * sw, reads=mats)
        ops.linear(g, "shared down", t, sw, hid)
    ops.elementwise(g, "moe weighted sum", t * hid, reads=k + (1 if cfg.num_shared_experts else 0))
    if ep == 1:
        ops.collective(g, "mlp all_reduce", "all_reduce", t * hid * act_bytes, tp)
    ops.elementwise(g, "mlp_residual", t * hid, reads=2, cat="rep")


def _head(ops: _Ops, g: int, cfg: TransformerConfig, batch: int, q: int, t: int, tp: int,
          phase: str) -> None:
    hid = cfg.hidden_size
    if cfg.vocab_size:
        ops.elementwise(g, "embedding", t * hid, reads=1, writes=1)
    ops.elementwise(g, "final_norm", t * hid)
    if cfg.vocab_size:
        rows = batch if phase == "prefill" else t  # prefill: logits of the last token
        vocab = math.ceil(cfg.vocab_size / tp)
        ops.linear(g, "lm_head", rows, hid, vocab)
        if phase == "train":
            ops.elementwise(g, "cross_entropy", rows * vocab, reads=1, writes=1)


def _evaluate(ops: _Ops, hw: Hardware, efficiency: EfficiencyLike, recipe: str | None,
              comm_bw: float | None, latency_s: float, dtype: str = "bf16"
              ) -> dict[str, np.ndarray]:
    parts: dict[str, np.ndarray] = {}  # kind -> (n_specs, 6) columns

    def stack(e: Any) -> np.ndarray:
        return np.stack([np.atleast_1d(np.asarray(getattr(e, c), dtype=np.float64))
                         for c in COLUMNS], axis=1)

    if ops.gemms:
        m, k, n, b = (np.array(c) for c in zip(*ops.gemms, strict=True))
        parts["gemms"] = stack(gemm(m, k, n, dtype, hw, batch=b, efficiency=efficiency))
    if ops.lowp and recipe is not None:
        m, k, n, b = (np.array(c) for c in zip(*ops.lowp, strict=True))
        parts["lowp"] = stack(gemm(m, k, n, _recipe_dtype(recipe), hw, batch=b,
                                   efficiency=efficiency))
    if ops.f8 and recipe is not None:
        m, k, n = (np.array(c) for c in zip(*ops.f8, strict=True))
        mode = "training" if ops.train else "inference"
        r = _float8.linear(m, k, n, recipe=recipe, hardware=hw, mode=mode,
                           efficiency=efficiency)
        mult = 3.0 if ops.train else 1.0
        g = gemm(m, k, n, _recipe_dtype(recipe), hw, efficiency=efficiency)
        time = np.atleast_1d(np.asarray(r.fp8_s, dtype=np.float64))
        comp = mult * np.atleast_1d(np.asarray(g.compute_s))
        mem = mult * np.atleast_1d(np.asarray(g.memory_s))
        parts["f8"] = np.stack(
            [time, comp, mem, np.maximum(time - np.maximum(comp, mem), 0.0),
             mult * np.atleast_1d(np.asarray(g.flops)), mult * np.atleast_1d(np.asarray(g.bytes))],
            axis=1)
    if ops.elts:
        num, rd, wr = (np.array(c) for c in zip(*ops.elts, strict=True))
        parts["elts"] = stack(elementwise(num, rd, wr, 0.0, dtype, hw, efficiency=efficiency))
    if ops.attn:
        parts["attn"] = np.concatenate(
            [kw["scale"] * stack(attention(**{a: v for a, v in kw.items() if a != "scale"},
                                           hardware=hw, efficiency=efficiency))
             for kw in ops.attn])
    if ops.grouped:
        gdtype = dtype if recipe is None else _recipe_dtype(recipe)
        parts["grouped"] = np.concatenate([
            stack(grouped_gemm(None, k, n, dtype=gdtype, hardware=hw,
                               counts=np.asarray(counts, dtype=np.int64),
                               efficiency=efficiency))
            for counts, k, n in ops.grouped])
    if ops.comms:
        fns: dict[str, Any] = {"all_reduce": all_reduce, "all_to_all": all_to_all,
                               "all_gather": all_gather, "reduce_scatter": reduce_scatter}
        parts["comms"] = np.concatenate(
            [stack(fns[op](math.ceil(nb), r, hardware=hw,
                           link_bytes_per_s=(ops.ep_link or comm_bw) if op == "all_to_all"
                           else comm_bw, latency_s=latency_s)) for op, nb, r in ops.comms])
    out = np.zeros((len(ops.rows), len(COLUMNS)))
    for i, (_, _, _, row_parts) in enumerate(ops.rows):
        for kind, idx in row_parts:
            out[i] += parts[kind][idx]
    return {c: out[:, j] for j, c in enumerate(COLUMNS)}


def _memory(cfg: TransformerConfig, hw: Hardware, batch: int, kv: int, tp: int, ep: int,
            phase: str, weight_bytes: float, kv_bytes: float, ops: _Ops,
            groups: list[tuple[str, list[int]]], dtype_bytes: float = 2.0) -> dict[str, float]:
    c = cfg.param_counts()
    heads_frac = (cfg.num_heads // tp) / cfg.num_heads
    if cfg.is_mla:
        hid, lat, rope = cfg.hidden_size, cfg.kv_lora_rank, cfg.qk_rope_head_dim
        replicated = hid * (cfg.q_lora_rank + lat + rope) if cfg.q_lora_rank else hid * (lat + rope)
        attn = replicated + (cfg.attention_params() - replicated) * heads_frac
        kv_token = cfg.kv_cache_bytes_per_token(kv_bytes)
    else:
        d, hid = cfg.head_dim, cfg.hidden_size
        kvh = cfg.num_kv_heads // tp if cfg.num_kv_heads >= tp else 1
        h = cfg.num_heads // tp
        attn = hid * (h + 2 * kvh) * d + h * d * hid
        kv_token = 2.0 * kvh * d * kv_bytes
    expert_split = ep if ep > 1 else tp
    linear = (cfg.num_layers * attn + c["mlp"] / tp + c["experts"] / expert_split
              + c["shared_experts"] / tp)
    other = c["router"] + c["norms"] + (c["embedding"] + c["lm_head"]) / tp
    params = linear + other
    mem: dict[str, float] = {
        "params_per_gpu": params,
        "weights_bytes": linear * weight_bytes + other * dtype_bytes,
        "kv_cache_bytes": 0.0 if phase == "train" else cfg.num_layers * batch * kv * kv_token,
        "gradients_bytes": 0.0,
        "optimizer_bytes": 0.0,
        "activations_bytes": 0.0,
    }
    if phase == "train":
        mem["gradients_bytes"] = dtype_bytes * params
        mem["optimizer_bytes"] = 12.0 * params
        mem["activations_bytes"] = dtype_bytes * sum(
            ops.saved.get(gi, 0.0) * max(1, len(layers)) for gi, (_, layers) in enumerate(groups))
    mem["total_bytes"] = sum(v for k, v in mem.items() if k.endswith("_bytes"))
    mem["capacity_bytes"] = hw.mem_capacity_bytes or float("nan")
    return mem
