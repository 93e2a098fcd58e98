"""Checked arguments of :func:`roofline.transformer.estimate`: integers, the phase and the
parallel-training layout (errors name the function, the argument and its value)."""

from __future__ import annotations

import numbers
from typing import Any

import numpy as np

from .._checks import one_of
from .._errors import ArgumentTypeError, ArgumentValueError
from .training import OPTIMIZERS, RECOMPUTE

__all__ = ["PHASES", "integer", "phase_name", "train_args"]

PHASES = ("decode", "prefill", "train")


def integer(fn: str, name: str, value: Any, minimum: int = 1) -> int:
    """``value`` as an int >= ``minimum``; TypeError for a non-integer (bools included)."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (numbers.Integral)):
        raise ArgumentTypeError(fn, name, f"must be an integer, got {value!r}")
    if int(value) < minimum:
        raise ArgumentValueError(fn, name, f"must be an integer >= {minimum}, got {value!r}")
    return int(value)


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


#: Defaults of the training-only arguments (any other value outside training is an error).
TRAIN_DEFAULTS = {"dp": 1, "pp": 1, "cp": 1, "zero": 0, "recompute": "none",
                  "micro_batch": None, "grad_accum": 1, "virtual_stages": 1,
                  "optimizer": "adam", "overlap": True, "sequence_parallel": False,
                  "optimizer_update": False}


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
    out["recompute"] = one_of(fn, "recompute", kw["recompute"], RECOMPUTE)
    out["optimizer"] = kw["optimizer"]
    one_of(fn, "optimizer", kw["optimizer"], OPTIMIZERS)
    for name in ("overlap", "sequence_parallel", "optimizer_update"):
        if not isinstance(kw[name], bool):
            raise ArgumentTypeError(fn, name, f"must be a bool, got {kw[name]!r}")
        out[name] = kw[name]
    if out["virtual_stages"] > 1 and out["pp"] == 1:
        raise ValueError(f"{fn}: virtual_stages > 1 needs pp > 1, got "
                         f"virtual_stages={out['virtual_stages']}")
    gpn = kw["gpus_per_node"]
    out["gpus_per_node"] = None if gpn is None else integer(fn, "gpus_per_node", gpn)
    nb = kw["network_bytes_per_s"]
    if nb is not None and not (isinstance(nb, (int, float)) and not isinstance(nb, bool)
                               and nb > 0):
        raise ValueError(f"{fn}: network_bytes_per_s must be a positive number, got {nb!r}")
    return out

