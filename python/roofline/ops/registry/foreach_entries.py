"""Entries of torch's ``_foreach_*`` ops: ATen's ``multi_tensor_apply`` kernels.

A ``_foreach_`` call streams every tensor of its tensor-list arguments once (the optimizer's
``_foreach_mul_(params, s)`` reads and writes the parameters) through kernels of at most 320
CTAs of 65536-element chunks (``_core.multi_tensor_apply_launches``): a large model's list
takes tens of launches per call, each a streaming kernel with its own latency (an H200 step
over 1.49 G bf16 parameters: 71 launches per call, 568 for torch's foreach AdamW).

Rate: a launch's 320 CTAs (512 threads, 4 per SM) each walk a 65536-element chunk in 32 steps
of 2048 elements; a step's loads wait for the previous step's stores (the functor's pointers
may alias), so each step is one loaded DRAM round trip (:data:`.memory_entries.CAT_STEP_S`,
the round trip of aten's batched copy): a launch takes at least 32 round trips however few
bytes it moves (``_core.multi_tensor_apply_floor_s``). A one-list pass (``mul_``, ``add_``,
``sqrt``) over 320 x 65536 bf16 elements: 83.9 MB, 19.9 us at the achievable HBM rate but
32 x 0.8 = 25.6 us of round trips (the H200 trace: 27.9-30.7 us per launch); a three-list
pass (``addcdiv_``, 168 MB) is bandwidth-bound.

Bytes: every tensor-list argument is read once, and one list is written: the first
(in-place ops, ``..._``) or the result (out-of-place ops). A list passed twice
(``addcmul_(v, g, g)``, ``Call.aliased``) is read from DRAM once: the functor loads both
pointers, the second load of each chunk hits the cache (the launch count keeps the kernel's
depth of three lists). The live path sees the same tensor objects; a profiler trace records
shapes, not addresses, so :mod:`roofline.trace` marks the one call whose source makes it
certain (torch's foreach Adam / AdamW step). ``_foreach_zero_`` only writes,
``_foreach_norm`` only reads.

torch's fused Adam / AdamW (``_fused_adam_`` / ``_fused_adamw_``, ``fused=True``) is one
``multi_tensor_apply`` pass of depth 4 (5 with ``amsgrad``): it reads the parameters,
gradients and both moments (and the running maximum) and writes the parameters and moments
back (ATen's ``FusedAdamKernel.cu``); the state steps are one fp32 scalar per tensor.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from ... import _core
from ...efficiency import EfficiencyLike, is_shape_aware
from .call import Call, TensorArg
from .memory_entries import CAT_STEP_S
from .pricer import Pricer
from .table import Entry, Priced, add

__all__ = ["foreach_lists", "foreach_price", "fused_adam_price", "round_trip_floor"]


def round_trip_floor(e: Any, launches: int, chunk_elements: float, hardware: Any,
                     efficiency: EfficiencyLike = "default") -> Any:
    """``e`` (a scalar streaming estimate of ``launches`` multi_tensor_apply kernels) with its
    ``memory_s`` raised to the kernels' DRAM round trips (``_core.multi_tensor_apply_floor_s``
    at :data:`CAT_STEP_S` per step), its ``time_s`` by as much; the shape-aware model only."""
    if not is_shape_aware(efficiency):
        return e
    sms = float(getattr(hardware, "sms", None) or 0)
    floor = _core.multi_tensor_apply_floor_s(float(launches), float(chunk_elements), sms,
                                             CAT_STEP_S)
    if floor <= float(e.memory_s):
        return e
    return dataclasses.replace(e, memory_s=floor, time_s=float(e.time_s) + floor
                               - float(e.memory_s))

#: ``_foreach_`` ops priced here (in-place and out-of-place forms).
_OPS = ("add", "sub", "mul", "div", "lerp", "addcmul", "addcdiv", "sqrt", "neg", "exp", "abs",
        "reciprocal", "sign", "clamp_min", "clamp_max", "maximum", "minimum", "pow", "copy",
        "zero", "norm", "sigmoid", "log")


def foreach_lists(call: Call, distinct: bool = False) -> list[tuple[TensorArg, ...]]:
    """The tensor-list arguments of ``call`` (lists of scalars are not tensor lists);
    ``distinct``: without the inputs the call records as repeating an earlier one
    (``Call.aliased``)."""
    return [x for i, x in enumerate(call.inputs) if isinstance(x, tuple) and x
            and all(isinstance(t, TensorArg) for t in x)
            and not (distinct and i in call.aliased)]


def foreach_price(call: Call, p: Pricer) -> Priced:
    """Every tensor list read, one written, over ``multi_tensor_apply`` launches."""
    lists = foreach_lists(call)
    if not lists:
        return None, f"{call.name}: no tensor list recorded"
    base = call.base
    written = sum(t.nbytes for t in lists[0])
    read = sum(t.nbytes for lst in foreach_lists(call, distinct=True) for t in lst)
    inplace = base.endswith("_")
    depth = len(lists) + (0 if inplace else 1)
    if base == "_foreach_zero_":
        read, depth = 0, 1
    elif base == "_foreach_norm":
        written, depth = 0, 1
    numel = np.array([float(t.numel) for t in lists[0]])
    launches = int(_core.multi_tensor_apply_launches(numel, depth))
    if launches == 0:
        return [], f"{call.name}: empty tensors, launches nothing"
    chunk = max(t.numel for t in lists[0])
    e = p.traffic(read, written, 0.0, base, kernels=launches)
    e = p.cached(("foreach", read, written, launches, min(chunk, 65536)), lambda: round_trip_floor(
        e, launches, chunk, p.hardware, p.efficiency))
    return [("elementwise", e)], (
        f"{call.name}: {read} B read, {written} B written over {launches} multi_tensor_apply "
        f"launches (rl.elementwise, kernels={launches}; at least 32 DRAM round trips per launch)")


def fused_adam_price(call: Call, p: Pricer) -> Priced:
    """``_fused_adam[w]_(params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, state_steps,
    ...)``: one pass over the first four lists (five when the maximum list is not empty)."""
    lists = [x if isinstance(x, tuple) else () for x in call.inputs[:5]]
    if len(lists) < 4 or not lists[0] or any(
            len(lst) != len(lists[0]) or not all(isinstance(t, TensorArg) for t in lst)
            for lst in lists[:4]):
        return None, f"{call.name}: expected four tensor lists of one length"
    amsgrad = len(lists) == 5 and len(lists[4]) == len(lists[0])
    used = lists[:5] if amsgrad else lists[:4]
    read = sum(t.nbytes for lst in used for t in lst)
    written = read - sum(t.nbytes for t in lists[1])  # every list but the gradients
    numel = np.array([float(t.numel) for t in lists[0]])
    depth = len(used)
    launches = int(_core.multi_tensor_apply_launches(numel, depth))
    if launches == 0:
        return [], f"{call.name}: empty tensors, launches nothing"
    chunk = max(t.numel for t in lists[0])
    e = p.traffic(read, written, 0.0, call.base, kernels=launches)
    e = p.cached(("foreach", read, written, launches, min(chunk, 65536)), lambda: round_trip_floor(
        e, launches, chunk, p.hardware, p.efficiency))
    return [("elementwise", e)], (
        f"{call.name}: {read} B read, {written} B written over {launches} multi_tensor_apply "
        f"launches of depth {depth} (rl.elementwise, kernels={launches}; at least 32 DRAM round "
        "trips per launch)")


for _name in ("aten::_fused_adam_", "aten::_fused_adamw_"):
    add(_name, entry=lambda n: Entry(n, "memory", "elementwise", fused_adam_price))

for _op in _OPS:
    for _name in (f"aten::_foreach_{_op}", f"aten::_foreach_{_op}_"):
        if _name in ("aten::_foreach_zero", "aten::_foreach_norm_"):
            continue
        add(_name, entry=lambda n: Entry(n, "memory", "elementwise", foreach_price))
