"""Inputs of a traced step: meta copies of tensors, the dtype and mode arguments."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

import torch

_MODE_ALIASES = {"train": "train", "training": "train", "inference": "inference",
                 "eval": "inference"}


def _meta(t: torch.Tensor, dtype: torch.dtype | None, grad: bool) -> torch.Tensor:
    dt = dtype if (dtype is not None and t.is_floating_point()) else t.dtype
    if t.is_contiguous() and type(t) in (torch.Tensor, torch.nn.Parameter):
        # what empty_like makes of a contiguous tensor, without its Python reference path
        out = torch.empty_strided(t.shape, t.stride(), dtype=dt, device="meta")
    else:
        out = torch.empty_like(t, device="meta", dtype=dt)
    return out.requires_grad_(grad and out.is_floating_point())


def _to_meta(obj: Any, dtype: torch.dtype | None) -> Any:
    if isinstance(obj, torch.Tensor):
        return _meta(obj, dtype, obj.requires_grad)
    if isinstance(obj, tuple):
        return tuple(_to_meta(o, dtype) for o in obj)
    if isinstance(obj, list):
        return [_to_meta(o, dtype) for o in obj]
    if isinstance(obj, Mapping):
        return {k: _to_meta(v, dtype) for k, v in obj.items()}
    return obj


def _torch_dtype(fn: str, dtype: Any) -> torch.dtype | None:
    if dtype is None or isinstance(dtype, torch.dtype):
        return dtype
    names = {"bf16": torch.bfloat16, "bfloat16": torch.bfloat16, "fp16": torch.float16,
             "float16": torch.float16, "half": torch.float16, "fp32": torch.float32,
             "float32": torch.float32, "float": torch.float32}
    if isinstance(dtype, str) and dtype.strip().lower() in names:
        return names[dtype.strip().lower()]
    from .._errors import UnknownNameError, close_matches

    if isinstance(dtype, str):
        raise UnknownNameError(
            f"{fn}: dtype must be a torch dtype or one of {sorted(names)}, got {dtype!r}",
            close_matches(dtype.strip().lower(), names),
        )
    raise ValueError(f"{fn}: dtype must be a torch dtype or one of {sorted(names)}, got {dtype!r}")


def _check_mode(fn: str, mode: Any) -> str:
    if not isinstance(mode, str) or mode.strip().lower() not in _MODE_ALIASES:
        raise ValueError(f"{fn}: mode must be 'train' or 'inference', got {mode!r}")
    return _MODE_ALIASES[mode.strip().lower()]


@contextmanager
def _training_flags(module: torch.nn.Module, train: bool) -> Iterator[None]:
    saved = [(m, m.training) for m in module.modules()]
    module.train(train)
    try:
        yield
    finally:
        for m, flag in saved:
            m.training = flag
