"""Price one traced op through the op registry (:mod:`roofline.ops.registry`).

This module only turns a Kineto event into a :class:`~roofline.ops.registry.Call`: the op's
name, its recorded inputs (``Input Dims`` and ``Input type``: tensors, tensor lists flattened
with their element type; ``Concrete Inputs``: scalars as strings) and the kernel that ran. A
memset, a device-to-device memcpy and an NCCL kernel carry their own size and become calls
``cuda::memset``, ``cuda::memcpy_dtod`` and ``nccl::<collective>``. The registry entry of the
name prices it; anything else (no shapes, unknown types, host transfers) is unpriced, with the
reason.
"""

from __future__ import annotations

import math
from typing import Any

from ..estimate import Estimate
from ..ops.registry import Call, Impl, Pricer, TensorArg, price

__all__ = ["ELEMENT", "LAUNCH_OPS", "has_shapes", "price_event", "price_op"]

#: Kineto ``Input type`` → (roofline dtype name or None, bytes per element).
ELEMENT: dict[str, tuple[str | None, int]] = {
    "c10::BFloat16": ("bf16", 2), "c10::Half": ("fp16", 2), "float": ("fp32", 4),
    "double": ("fp64", 8), "c10::Float8_e4m3fn": ("fp8", 1), "c10::Float8_e5m2": ("e5m2", 1),
    "c10::Float8_e4m3fnuz": ("fp8", 1), "c10::Float8_e5m2fnuz": ("e5m2", 1),
    "c10::Float8_e8m0fnu": (None, 1), "c10::Float4_e2m1fn_x2": (None, 1), "bool": (None, 1),
    "unsigned char": (None, 1), "signed char": ("int8", 1), "short int": (None, 2),
    "int": (None, 4), "long int": (None, 8), "c10::complex<float>": (None, 8),
    "c10::complex<double>": (None, 16),
}

Priced = tuple[Estimate[Any] | None, str]


def _known(t: Any) -> bool:
    """Whether ``t`` is an ``Input type`` string of a known element type."""
    return isinstance(t, str) and t in ELEMENT


def has_shapes(dims: Any, types: Any) -> bool:
    """Whether an op recorded the size of at least one tensor input (0-d tensors count)."""
    if not isinstance(dims, list):
        return False
    types = types if isinstance(types, list) else []
    for i, d in enumerate(dims):
        if isinstance(d, list) and (d or (i < len(types) and _known(types[i]))):
            return True
    return False


def _first_size(types: list[Any]) -> int:
    return next((ELEMENT[t][1] for t in types if _known(t)), 2)


def _stride(d: list[Any], st: Any) -> tuple[int, ...] | None:
    """A tensor's recorded strides (``Input Strides``) when they match its dims, else None."""
    if isinstance(st, list) and len(st) == len(d) and all(isinstance(x, int) for x in st):
        return tuple(int(x) for x in st)
    return None


#: Largest element count of one recorded tensor: 2**40 (1.1e12 elements, 2.2 TB in bf16) is
#: several times the memory of any accelerator (B300: 288 GB), and keeps the bytes an op
#: moves over a few such tensors (x 8 for int64 indices, x passes) within 2**53, the
#: largest count the kernel functions take.
_MAX_NUMEL = 2**40


def _sizes(d: list[Any], op: str) -> tuple[int, ...]:
    """A tensor's recorded sizes, checked: each a non-negative integer, their product at most
    :data:`_MAX_NUMEL` (a profiler records nothing else; a ValueError naming the op
    otherwise)."""
    if all(type(s) is int and 0 <= s <= _MAX_NUMEL for s in d):
        shape = tuple(d)
        if math.prod(shape) <= _MAX_NUMEL:
            return shape
    raise ValueError(
        f"trace.explain: {op or 'op'}: recorded Input Dims {str(d)[:80]} must be non-negative "
        f"integers with a product of at most 2**40 ({_MAX_NUMEL}: more than any accelerator "
        "holds) (a corrupt or hand-edited trace)")


def _input(d: Any, t: Any, types: list[Any], st: Any = None, op: str = "") -> Any:
    """One recorded input: a TensorArg, a tuple of them (a tensor list) or None; a
    ValueError naming ``op`` when its sizes are not sizes (:func:`_sizes`)."""
    if isinstance(d, list) and d and all(isinstance(x, list) for x in d):  # TensorList
        dt, size = ELEMENT.get(str(t).replace("GenericList", ""), (None, 0))
        size = size or _first_size(types)
        sts = st if isinstance(st, list) and len(st) == len(d) else [None] * len(d)
        return tuple(TensorArg(_sizes(sub, op), dt, size, _stride(sub, sst))
                     for sub, sst in zip(d, sts, strict=True))
    if _known(t) and isinstance(d, list):
        dt, size = ELEMENT[t]
        return TensorArg(_sizes(d, op), dt, size, _stride(d, st))
    return None


#: Regions of torch.optim's foreach Adam / AdamW step (the profiler's ``Optimizer.step#<class>
#: .step``): ``_multi_tensor_adam`` calls ``_foreach_addcmul_(exp_avg_sqs, grads, grads,
#: 1 - beta2)``, one list passed twice (only with a tensor ``beta2`` does it pass a scaled copy
#: first, and then ``value`` 1).
_ADAM_STEPS = ("Optimizer.step#Adam.step", "Optimizer.step#AdamW.step")


def _aliased(op: str, concrete: tuple[str, ...], region: str) -> tuple[int, ...]:
    """Inputs a traced call repeats (``Call.aliased``), where the calling code makes it
    certain: Adam's ``addcmul_(v, g, g, 1 - beta2)`` (see :data:`_ADAM_STEPS`)."""
    if op != "aten::_foreach_addcmul_" or region not in _ADAM_STEPS or len(concrete) < 4:
        return ()
    try:
        value = float(concrete[3])
    except ValueError:
        return ()
    return (2,) if value != 1.0 else ()


def call_of(op: str, dims: Any, types: Any, concrete: Any, kernel: str = "",
            strides: Any = None, region: str = "", launch: Any = None) -> Call:
    """The registry call of one traced op instance (``strides``: its ``Input Strides``;
    ``region``: the outermost region enclosing it, e.g. ``Optimizer.step#AdamW.step``;
    ``launch``: its first kernel's ``(name, grid, block)`` for the ops in
    :data:`LAUNCH_OPS`)."""
    types = types if isinstance(types, list) else []
    dims = dims if isinstance(dims, list) else []
    strides = strides if isinstance(strides, list) else []
    inputs = tuple(_input(d, types[i] if i < len(types) else "", types,
                          strides[i] if i < len(strides) else None, op)
                   for i, d in enumerate(dims))
    conc = tuple(str(c) for c in concrete) if isinstance(concrete, list) else ()
    runtime = "compiled" if op.startswith("triton_") else "eager"
    impl = Impl(runtime, None, kernel or op)
    if launch is not None:
        impl = Impl(runtime, None, launch[0], launch[1], launch[2])
    return Call(op, inputs, None, concrete=conc, impl=impl, aliased=_aliased(op, conc, region))


def _one(priced: tuple[Any, str]) -> Priced:
    costs, how = priced
    if costs is None:
        return None, how
    if not costs:
        return None, f"{how} (no kernel)"
    return costs[0][1], how


#: Ops whose recorded inputs leave their size open (``aten::index``: Kineto records no tensor
#: list of indices), priced from their kernel's launch configuration as well.
LAUNCH_OPS = frozenset({"aten::index"})


def price_op(op: str, dims: Any, types: Any, concrete: Any, hw: Any, eff: Any,
             pricer: Pricer | None = None, strides: Any = None, region: str = "",
             launch: Any = None) -> Priced:
    """The estimate of one op instance from its recorded inputs (and the region enclosing
    it; ``launch``: its first kernel's ``(name, grid, block)``, see :data:`LAUNCH_OPS`), and
    how it was priced (or why it was not)."""
    if not has_shapes(dims, types):
        return None, f"{op or 'kernel'}: no shapes recorded (profile with record_shapes=True)"
    return _one(price(call_of(op, dims, types, concrete, strides=strides, region=region,
                              launch=launch), pricer or Pricer(hw, eff)))


_NCCL = (("allreduce", "all_reduce"), ("all_reduce", "all_reduce"),
         ("reducescatter", "reduce_scatter"), ("reduce_scatter", "reduce_scatter"),
         ("allgather", "all_gather"), ("all_gather", "all_gather"),
         ("alltoall", "all_to_all"), ("all_to_all", "all_to_all"),
         ("sendrecv", "send_recv"), ("send", "send_recv"), ("recv", "send_recv"))
_NCCL_DTYPE = {"BFloat16": 2, "Half": 2, "Float": 4, "Double": 8, "Int": 4, "Long": 8,
               "Char": 1, "Byte": 1, "Float8_e4m3fn": 1, "Float8_e5m2": 1}


def _collective(name: str, chain_args: list[dict[str, Any]], pricer: Pricer) -> Priced:
    info = next((a for a in chain_args if "Collective name" in a), None)
    if info is None:
        return None, "NCCL kernel: no collective record (message size, group size) in the trace"
    coll = str(info.get("Collective name", "")).lower()
    fn = next((f for key, f in _NCCL if key in coll), None)
    ranks = info.get("Group size")
    size = _NCCL_DTYPE.get(str(info.get("dtype", "")))
    if fn is None or not isinstance(ranks, int) or size is None:
        return None, f"NCCL {coll or name}: collective / group size / dtype not recognised"
    n_in = int(info.get("In msg nelems", 0) or 0)
    n_out = int(info.get("Out msg nelems", 0) or 0)
    nbytes = size * (n_out if fn == "all_gather" else n_in)
    if nbytes <= 0 or ranks < 2:
        return None, f"NCCL {coll}: empty message or a single rank"
    call = Call(f"nccl::{fn}", args={"nbytes": nbytes, "ranks": ranks},
                impl=Impl(kernel=name))
    return _one(price(call, pricer))


def price_event(kind: str, name: str, args: dict[str, Any], chain_args: list[dict[str, Any]],
                hw: Any, eff: Any, pricer: Pricer | None = None) -> Priced | None:
    """Price a GPU event that carries its own size (memset, memcpy, NCCL), else ``None``."""
    pricer = pricer or Pricer(hw, eff)
    nbytes = args.get("bytes")
    if kind == "memset":
        if isinstance(nbytes, (int, float)) and nbytes > 0:
            return _one(price(Call("cuda::memset", args={"bytes": int(nbytes)},
                                   impl=Impl(kernel=name)), pricer))
        return None, "memset: no byte count in the trace"
    if kind == "memcpy":
        if "DtoD" not in name:
            return None, f"{name}: host transfers are not modeled"
        if isinstance(nbytes, (int, float)) and nbytes > 0:
            return _one(price(Call("cuda::memcpy_dtod", args={"bytes": int(nbytes)},
                                   impl=Impl(kernel=name)), pricer))
        return None, "memcpy: no byte count in the trace"
    if kind == "collective":
        return _collective(name, [args, *chain_args], pricer)
    return None
