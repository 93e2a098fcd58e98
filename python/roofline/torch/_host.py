"""What the host runs for an eagerly executed module, counted by class, and its wall time.

Eager PyTorch spends CPU time on every op called from Python, whether or not it launches a
kernel, and HF modules add Python time of their own. The trace counts, between two kernel
launches, the calls the host makes by class (``CLASSES``, the core's ``HostOp``):

- ``view``: a top-level torch call that dispatches aten ops but launches no kernel (``view``,
  ``transpose``, ``unsqueeze``, ``slice``, ``reshape`` of a contiguous tensor);
- ``kernel``: one that launches elementwise, reduction or copy kernels (``mul``, ``cat``,
  ``to``, ``mean``, ``embedding``);
- ``gemm``: one whose kernels include a GEMM (``F.linear``, ``matmul``): cuBLAS(Lt) heuristics,
  descriptors and workspace make it the dearest dispatch;
- ``attention``: ``scaled_dot_product_attention`` (its backend selection);
- ``module``: one ``nn.Module`` call (hooks, ``__call__``, the forward's own Python code);
- ``backward``: one backward kernel (the autograd engine evaluating its node, in C++).

Property reads (``x.shape``) dispatch nothing and cost nothing here. The counts go with the
kernel they precede (:attr:`OpRecord.host`), so that dedupe's replayed layers carry theirs;
:func:`program_wall` prices them with the fitted terms (``op_*_launches``,
``module_call_launches`` in units of ``eager_launch_s``, plus ``step_call_launches`` once per
step) through the core's ``program_wall_time``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ..ops.host import HOST_CLASSES, WallTime, eager_program_wall

#: Host call classes, in the core's HostOp order.
CLASSES = HOST_CLASSES
_INDEX = {c: i for i, c in enumerate(CLASSES)}

#: A count vector with nothing in it.
NONE: tuple[float, ...] = (0.0,) * len(CLASSES)


def add(counts: Sequence[float], cls: str, n: float = 1.0) -> tuple[float, ...]:
    """``counts`` with ``n`` more calls of class ``cls``."""
    out = list(counts) if counts else list(NONE)
    out[_INDEX[cls]] += n
    return tuple(out)


def plus(a: Sequence[float], b: Sequence[float]) -> tuple[float, ...]:
    """The sum of two count vectors (an empty one is zero)."""
    if not a:
        return tuple(b) if b else NONE
    if not b:
        return tuple(a)
    return tuple(x + y for x, y in zip(a, b, strict=True))


def classify(kinds: Sequence[str], dispatched: bool) -> str | None:
    """The class of one top-level torch call from the kinds of the kernels it launched and
    whether it dispatched any aten op (None: a property read or pure Python, no host cost)."""
    if "gemm" in kinds:
        return "gemm"
    if "attention" in kinds:
        return "attention"
    if kinds:
        return "kernel"
    return "view" if dispatched else None


def program_wall(records: Sequence[Any], tail: Sequence[float], hw: Any,
                 efficiency: Any) -> WallTime:
    """Per-step wall time of the recorded kernels launched eagerly, in a loop of steps, with
    the host calls each record carries (``record.host``) and those after the last kernel
    (``tail``); see :func:`roofline.ops.host.eager_program_wall`."""
    times = np.array([float(r.estimate.time_s) for r in records], dtype=np.float64)
    counts = np.zeros((len(records), len(CLASSES)))
    for i, r in enumerate(records):
        if r.host:
            counts[i] = r.host
    end = np.asarray(tail if tail else NONE, dtype=np.float64)
    return eager_program_wall(times, counts, end, hw, efficiency=efficiency)
