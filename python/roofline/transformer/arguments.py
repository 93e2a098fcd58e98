"""Checked arguments of :func:`roofline.transformer.estimate`: integers, the phase and the
parallel-training layout (errors name the function, the argument and its value)."""

from __future__ import annotations

import numbers
from typing import Any

import numpy as np

from .._checks import one_of
from .._errors import ArgumentTypeError, ArgumentValueError
from .composer import FSDP_IMPLS
from .config import TransformerConfig
from .layers import CROSS_ENTROPY
from .offload import host_link_bytes_per_s
from .recompute import RECOMPUTE_MODULES
from .torch_cp import check_cp
from .training import LAYER_RECOMPUTE, MODULES_RECOMPUTE, OPTIMIZERS, RECOMPUTE

__all__ = ["MAX_COUNT", "MAX_POSITIONS", "MAX_SEQ", "MAX_TOKENS", "PHASES", "batch_sizes",
           "check_layout", "check_offload", "check_sizes", "check_split", "integer", "phase_name",
           "positive_number", "recompute_mode", "recompute_modules", "step_lengths",
           "train_args"]

PHASES = ("decode", "prefill", "train")

#: Largest count a layout takes (sequences per step, ranks of one kind, GPUs of a job,
#: micro-batches): 16.7 M, far above any job, far below an overflow.
MAX_COUNT = 2**24

#: Longest sequence (prompt, training sequence, KV cache per sequence): 16.7 M tokens.
MAX_SEQ = 2**24

#: Most tokens one step processes per GPU group (``batch · seq_len`` or ``batch · q_len``).
MAX_TOKENS = 2**32

#: Most cached positions one decode step reads (``batch · kv_len``).
MAX_POSITIONS = 2**36


def integer(fn: str, name: str, value: Any, minimum: int = 1,
            maximum: int | None = MAX_COUNT) -> int:
    """``value`` as an int in [``minimum``, ``maximum``]; TypeError for a non-integer (bools
    included)."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (numbers.Integral)):
        raise ArgumentTypeError(fn, name, f"must be an integer, got {value!r}")
    if int(value) < minimum:
        raise ArgumentValueError(fn, name, f"must be an integer >= {minimum}, got {value!r}")
    if maximum is not None and int(value) > maximum:
        raise ArgumentValueError(fn, name, f"must be an integer <= {maximum} "
                                 f"(2**{maximum.bit_length() - 1}), got {value!r}")
    return int(value)


def batch_sizes(fn: str, name: str, values: Any) -> list[int]:
    """A non-empty sequence of integers in [1, :data:`MAX_COUNT`] (no floats, no bools: a
    batch of 1.5 or True is an error, never a silent 1); errors name ``name[i]``."""
    if isinstance(values, (str, bytes)) or isinstance(values, (bool, np.bool_)):
        raise ArgumentTypeError(fn, name, f"must be a sequence of integers, got {values!r}")
    items = list(np.atleast_1d(np.asarray(values, dtype=object))) if not isinstance(
        values, (list, tuple)) else list(values)
    if not items:
        raise ArgumentValueError(fn, name, f"must hold at least one integer, got {values!r}")
    return [integer(fn, f"{name}[{i}]", v) for i, v in enumerate(items)]


def positive_number(fn: str, name: str, value: Any, *, zero: bool = False) -> float:
    """``value`` as a finite float > 0 (>= 0 with ``zero``); errors name the argument."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise ArgumentTypeError(fn, name, f"must be a number, got {value!r}")
    v = float(value)
    if not np.isfinite(v) or v < 0 or (v == 0 and not zero):
        kind = "non-negative" if zero else "positive"
        raise ArgumentValueError(fn, name, f"must be a {kind} finite number, got {value!r}")
    return v


def optional_positive(fn: str, name: str, value: Any) -> float | None:
    """None, or ``value`` as a finite float > 0 (:func:`positive_number`)."""
    return None if value is None else positive_number(fn, name, value)


def check_sizes(fn: str, phase: str, batch: int, q: int, kv: int, heads: int,
                flash: bool) -> None:
    """Bound the step's sizes so that no op's size overflows: ``batch·q`` tokens at most
    :data:`MAX_TOKENS`, ``batch·kv`` cached positions at most :data:`MAX_POSITIONS`, and with
    materialized scores (``flash=False``) ``batch·heads·q·kv`` at most 2**53."""
    q_name = "q_len" if phase == "decode" else "seq_len"
    if batch * q > MAX_TOKENS:
        raise ValueError(f"{fn}: batch x {q_name} = {batch} x {q} = {batch * q} tokens per "
                         f"step, more than {MAX_TOKENS} (2**32); lower batch or {q_name}")
    if phase == "decode" and batch * kv > MAX_POSITIONS:
        raise ValueError(f"{fn}: batch x kv_len = {batch} x {kv} = {batch * kv} cached "
                         f"positions, more than {MAX_POSITIONS} (2**36); lower batch or kv_len")
    if not flash and batch * heads * q * kv > 2**53:
        raise ValueError(f"{fn}: flash=False materializes batch x heads x {q_name} x kv_len = "
                         f"{batch * heads * q * kv} scores, more than 2**53; use flash=True "
                         f"or lower batch / {q_name}")


def check_layout(fn: str, cfg: TransformerConfig, seq: int, cp: int, cp_comm: str, pp: int,
                 routing_skew: Any) -> None:
    """``cp`` splits the sequence ``seq`` as ``cp_comm`` needs
    (:func:`roofline.transformer.torch_cp.check_cp`), ``pp`` at most the model's layers,
    ``routing_skew`` a number in [0, 10]; an :class:`~roofline.ArgumentValueError` naming the
    argument otherwise."""
    check_cp(fn, cfg, seq, cp, cp_comm)
    layers = cfg.num_layers
    if pp > layers:
        raise ArgumentValueError(fn, "pp", f"must be <= num_layers ({layers}), got {pp}")
    if not isinstance(routing_skew, (int, float)) or isinstance(routing_skew, bool) or not (
            0 <= routing_skew <= 10):
        raise ArgumentValueError(fn, "routing_skew", f"must be a number in [0, 10], got "
                                 f"{routing_skew!r}")


def check_split(fn: str, tp: int, ep: int, heads: int, experts: int, name: str) -> None:
    """``tp`` dividing ``heads``, ``ep`` dividing ``experts`` (``experts = 0``: a dense
    model, ``ep`` must be 1); an :class:`~roofline.ArgumentValueError` naming the argument
    otherwise."""
    if heads % tp:
        raise ArgumentValueError(fn, "tp", f"must divide num_heads ({heads}), got {tp}")
    if experts and experts % ep:
        raise ArgumentValueError(fn, "ep", f"must divide num_experts ({experts}), got {ep}")
    if not experts and ep != 1:
        raise ArgumentValueError(fn, "ep", f"> 1 needs an MoE model, {name} is dense "
                                 f"(got {ep})")


def phase_name(fn: str, phase: Any) -> str:
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


def recompute_modules(fn: str, value: Any) -> tuple[str, ...]:
    """The modules of ``recompute="modules:<m>,..."`` (Megatron's ``recompute_modules``, each
    one of :data:`~.recompute.RECOMPUTE_MODULES`, in the order given, duplicates dropped);
    ``()`` for the other modes. Errors name the argument and value."""
    if not (isinstance(value, str) and value.strip().lower().startswith("modules")):
        return ()
    head, sep, tail = value.strip().lower().partition(":")
    names = tuple(dict.fromkeys(m.strip() for m in tail.split(",") if m.strip()))
    advice = (f"'modules:<m>,...' recomputes Megatron's recompute_modules, each one of "
              f"{tuple(RECOMPUTE_MODULES)} (e.g. 'modules:layernorm,moe_act')")
    if head.strip() != "modules" or not sep or not names:
        raise ArgumentValueError(fn, "recompute", f"got {value!r}: {advice}")
    bad = [m for m in names if m not in RECOMPUTE_MODULES]
    if bad:
        raise ArgumentValueError(fn, "recompute", f"got {value!r}: unknown module {bad[0]!r}; "
                                 f"{advice}")
    return names


def recompute_mode(fn: str, value: Any, layers: int | None = None) -> tuple[int, int]:
    """``recompute`` as (code, every): ``"none"``, ``"selective"``, ``"full"`` (every 1),
    ``"layer:k"`` (:data:`~.training.LAYER_RECOMPUTE`, every ``k``-th block fully recomputed;
    ``k`` an integer >= 1, at most ``layers`` when given) or ``"modules:<m>,..."``
    (:data:`~.training.MODULES_RECOMPUTE`, see :func:`recompute_modules`). Errors name the
    argument and value.
    """
    if recompute_modules(fn, value):
        return MODULES_RECOMPUTE, 1
    if isinstance(value, str) and value.strip().lower().startswith("layer"):
        head, sep, tail = value.strip().lower().partition(":")
        advice = ("'layer:k' recomputes every k-th transformer block (k an integer >= 1, "
                  "e.g. 'layer:2', torchtitan's selective_ac_option='2')")
        if head.strip() != "layer" or not sep or not tail.strip().isdigit():
            raise ArgumentValueError(fn, "recompute", f"got {value!r}: {advice}")
        every = int(tail.strip())
        if every < 1:
            raise ArgumentValueError(fn, "recompute", f"got {value!r}: k must be >= 1; "
                                     f"{advice}")
        if every > MAX_COUNT or (layers is not None and every > layers):
            limit = MAX_COUNT if layers is None else layers
            raise ArgumentValueError(fn, "recompute", f"got {value!r}: k must be <= {limit} "
                                     f"(the model's layers), else no block is recomputed: "
                                     f"pass 'none'")
        return LAYER_RECOMPUTE, every
    return int(one_of(fn, "recompute", value, {**RECOMPUTE, "layer:k": -1})), 1


#: Defaults of the training-only arguments (any other value outside training is an error).
TRAIN_DEFAULTS = {"dp": 1, "pp": 1, "cp": 1, "zero": 0, "recompute": "none",
                  "micro_batch": None, "grad_accum": 1, "virtual_stages": 1,
                  "optimizer": "adam", "overlap": True, "sequence_parallel": None,
                  "optimizer_update": True, "reduce_dtype": None,
                  "reshard_after_forward": None, "cp_comm": "ring", "tp_comm_overlap": False,
                  "overlap_param_gather": None, "fsdp": "fsdp2", "train_metrics": 0,
                  "clip_grad_norm": False, "offload_layers": 0, "host_bytes_per_s": None,
                  "pipeline_head": "spread", "cross_entropy": "fused",
                  "check_for_nan_in_grad": False, "fp8_param_gather": True}

#: Where a pipeline keeps the embedding and the LM head (``pipeline_head``): ``spread``, 1/pp of
#: their work per stage (layouts that balance the first and last stages); ``last``, Megatron-Core
#: before uneven pipeline splits: L/pp layers on every stage, the output layer and loss on the last.
PIPELINE_HEADS = ("spread", "last")
#: Gradient reduction formats (``reduce_dtype``) -> bytes per element.
REDUCE_BYTES = {"bf16": 2.0, "fp32": 4.0}
#: Context-parallel attention exchanges (``cp_comm``).
CP_COMMS = ("ring", "all_gather", "all_to_all")


def train_args(fn: str, phase: str, batch: int, **kw: Any) -> dict[str, Any]:
    """Validated parallel-training arguments (errors name the argument and its value)."""
    if phase != "train":
        bad = [k for k, v in TRAIN_DEFAULTS.items() if kw[k] != v]
        if bad:
            raise ValueError(f"{fn}: {bad[0]} applies to phase='train' only, got "
                             f"{bad[0]}={kw[bad[0]]!r} with phase={phase!r}")
    out: dict[str, Any] = {}
    for name in ("dp", "pp", "cp", "grad_accum", "virtual_stages"):
        out[name] = integer(fn, name, kw[name])
    ranks = out["dp"] * out["pp"] * out["cp"] * kw.get("tp", 1)
    if ranks > MAX_COUNT:
        raise ValueError(f"{fn}: dp x pp x cp x tp = {ranks} GPUs, more than {MAX_COUNT} "
                         f"(2**24); got dp={out['dp']}, pp={out['pp']}, cp={out['cp']}, "
                         f"tp={kw.get('tp', 1)}")
    mb = kw["micro_batch"]
    out["micro_batch"] = batch if mb is None else integer(fn, "micro_batch", mb)
    if mb is not None and batch != 1 and batch != out["micro_batch"]:
        raise ValueError(f"{fn}: micro_batch ({mb}) and batch ({batch}) disagree; pass one")
    z = kw["zero"]
    if z == "fsdp":
        z = 3
    if isinstance(z, bool) or z not in (0, 1, 2, 3):
        raise ValueError(f"{fn}: zero must be 0, 1, 2, 3 or 'fsdp', got {kw['zero']!r}")
    out["zero"] = int(z)
    out["recompute"], out["recompute_every"] = recompute_mode(fn, kw["recompute"])
    out["recompute_modules"] = recompute_modules(fn, kw["recompute"])
    out["optimizer"] = kw["optimizer"]
    one_of(fn, "optimizer", kw["optimizer"], OPTIMIZERS)
    if kw["sequence_parallel"] is None:  # Megatron's default with tensor parallelism
        kw = dict(kw, sequence_parallel=kw.get("tp", 1) > 1)
    kw.setdefault("clip_grad_norm", False)
    kw.setdefault("check_for_nan_in_grad", False)
    kw.setdefault("fp8_param_gather", True)
    for name in ("overlap", "sequence_parallel", "optimizer_update", "tp_comm_overlap",
                 "clip_grad_norm", "check_for_nan_in_grad", "fp8_param_gather"):
        if not isinstance(kw[name], bool):
            raise ArgumentTypeError(fn, name, f"must be a bool, got {kw[name]!r}")
        out[name] = kw[name]
    ce = kw.get("cross_entropy", "fused")
    if not isinstance(ce, str) or ce not in CROSS_ENTROPY:
        raise ArgumentValueError(fn, "cross_entropy", f"must be one of {CROSS_ENTROPY}, got "
                                 f"{ce!r}")
    if ce != "fused" and kw.get("runtime", "megatron") != "megatron":
        raise ArgumentValueError(fn, "cross_entropy", f"{ce!r} prices Megatron-Core's loss: "
                                 f"runtime='megatron' only, got runtime={kw['runtime']!r}")
    out["cross_entropy"] = ce
    opg = kw["overlap_param_gather"]
    if opg is not None and not isinstance(opg, bool):
        raise ArgumentTypeError(fn, "overlap_param_gather", f"must be a bool or None, got "
                                f"{opg!r}")
    out["overlap_param_gather"] = out["overlap"] if opg is None else opg
    if out["virtual_stages"] > 1 and out["pp"] == 1:
        raise ValueError(f"{fn}: virtual_stages > 1 needs pp > 1, got "
                         f"virtual_stages={out['virtual_stages']}")
    rd = kw["reduce_dtype"]
    if rd is not None and (not isinstance(rd, str) or rd not in REDUCE_BYTES):
        raise ArgumentValueError(fn, "reduce_dtype", f"must be one of {tuple(REDUCE_BYTES)} or "
                                 f"None, got {rd!r}")
    if rd is not None and out["zero"] < 3:
        raise ArgumentValueError(fn, "reduce_dtype", f"applies to zero=3 (FSDP) only, got "
                                 f"reduce_dtype={rd!r} with zero={out['zero']}")
    out["reduce_bytes"] = None if rd is None else REDUCE_BYTES[rd]
    raf = kw["reshard_after_forward"]
    if raf is not None and not isinstance(raf, bool):
        raise ArgumentTypeError(fn, "reshard_after_forward", f"must be a bool or None, got "
                                f"{raf!r}")
    if raf is not None and out["zero"] < 3:
        raise ArgumentValueError(fn, "reshard_after_forward", f"applies to zero=3 (FSDP) only, "
                                 f"got reshard_after_forward={raf!r} with zero={out['zero']}")
    out["reshard_after_forward"] = raf
    fsdp = kw.get("fsdp", "fsdp2")
    if not isinstance(fsdp, str) or fsdp not in FSDP_IMPLS:
        raise ArgumentValueError(fn, "fsdp", f"must be one of {FSDP_IMPLS}, got {fsdp!r}")
    if fsdp != "fsdp2" and out["zero"] < 3:
        raise ArgumentValueError(fn, "fsdp", f"{fsdp!r} applies to zero=3 (FSDP) only, got "
                                 f"fsdp={fsdp!r} with zero={out['zero']}")
    out["fsdp"] = fsdp
    if out["check_for_nan_in_grad"] and out["zero"] >= 3:
        raise ArgumentValueError(fn, "check_for_nan_in_grad", "is Megatron-Core DDP's check "
                                 "(zero 0-2), got check_for_nan_in_grad=True with zero=3")
    metrics = kw.get("train_metrics", 0)
    if isinstance(metrics, bool) or not isinstance(metrics, int) or not 0 <= metrics <= 16:
        raise ArgumentValueError(fn, "train_metrics", f"must be an integer in [0, 16], got "
                                 f"{metrics!r}")
    out["train_metrics"] = metrics
    if kw["cp_comm"] not in CP_COMMS:
        raise ArgumentValueError(fn, "cp_comm", f"must be one of {CP_COMMS}, got "
                                 f"{kw['cp_comm']!r}")
    out["cp_comm"] = kw["cp_comm"]
    head = kw.get("pipeline_head", "spread")
    if not isinstance(head, str) or head not in PIPELINE_HEADS:
        raise ArgumentValueError(fn, "pipeline_head", f"must be one of {PIPELINE_HEADS}, got "
                                 f"{head!r}")
    out["pipeline_head"] = head
    gpn = kw["gpus_per_node"]
    out["gpus_per_node"] = None if gpn is None else integer(fn, "gpus_per_node", gpn)
    nb = kw["network_bytes_per_s"]
    if nb is not None:
        positive_number(fn, "network_bytes_per_s", nb)
    return out


def check_offload(fn: str, offload_layers: Any, host_bytes_per_s: Any, layers: int,
                  pp: int, recompute: str, hw: Any) -> tuple[int, float]:
    """``offload_layers`` an integer in ``[0, layers)`` and, when positive, ``pp == 1`` and no
    recomputation (Megatron-Core's rules); ``host_bytes_per_s`` None (``hw``'s host link,
    :func:`.offload.host_link_bytes_per_s`) or a positive number. Returns them checked; an
    :class:`~roofline.ArgumentValueError` naming the argument otherwise."""
    k = integer(fn, "offload_layers", offload_layers, minimum=0)
    rate = optional_positive(fn, "host_bytes_per_s", host_bytes_per_s)
    if k >= layers:
        raise ArgumentValueError(fn, "offload_layers", f"must be < num_layers ({layers}): one "
                                 f"layer's activations stay on the GPU, got {offload_layers!r}")
    if k and pp > 1:
        raise ArgumentValueError(fn, "offload_layers", f"needs pp=1 (Megatron-Core offloads no "
                                 f"pipelined layers), got offload_layers={k} with pp={pp}")
    if k and recompute != "none":
        raise ArgumentValueError(fn, "offload_layers", f"needs recompute='none' (Megatron-Core "
                                 f"refuses both), got recompute={recompute!r}")
    return k, host_link_bytes_per_s(hw) if rate is None else rate


def step_lengths(fn: str, phase: str, seq_len: Any, kv_len: Any, q_len: Any) -> tuple[int, int]:
    """``(q, kv)`` of a step: decode's ``q_len`` new tokens against ``kv_len >= q_len`` keys
    (needed), else ``seq_len`` both (needed); each an integer in [1, :data:`MAX_SEQ`]."""
    q = integer(fn, "q_len", q_len, maximum=MAX_SEQ)
    if phase == "decode":
        if kv_len is None:
            raise ArgumentValueError(fn, "kv_len", "is needed for phase 'decode' (cached tokens + "
                                     "q_len)")
        kv = integer(fn, "kv_len", kv_len, maximum=MAX_SEQ)
        if kv < q:
            raise ArgumentValueError(fn, "kv_len", f"must be >= q_len ({q}), got {kv_len!r}")
        return q, kv
    if seq_len is None:
        raise ArgumentValueError(fn, "seq_len", f"is needed for phase {phase!r}")
    q = integer(fn, "seq_len", seq_len, maximum=MAX_SEQ)
    return q, q
