"""Turn one live aten op (its function, arguments and outputs) into a registry
:class:`~roofline.ops.registry.Call` and price it there.

:func:`costs` returns a list of ``(kind, Estimate)`` pairs (one per kernel the op stands for),
an empty list for ops that launch no kernel (views, ``empty``, ``detach``), or ``None`` when no
registry entry prices the op (the caller then estimates it from the bytes of its tensors and
lists it).
"""

from __future__ import annotations

from typing import Any

import torch

from ..estimate import Estimate
from ..ops.registry import Call, Impl, Pricer, TensorArg, price
from ..ops.registry.attention_entries import fused_attention

Costs = list[tuple[str, Estimate[Any]]]

#: The per-run pricer (hardware, efficiency, ranks, cache).
Context = Pricer

#: torch dtypes our op functions know, by their roofline name.
_DTYPES: dict[torch.dtype, str] = {
    torch.float64: "fp64",
    torch.float32: "fp32",
    torch.bfloat16: "bf16",
    torch.float16: "fp16",
    torch.float8_e4m3fn: "fp8",
    torch.float8_e5m2: "e5m2",
    torch.int8: "int8",
}
for _name in ("float8_e4m3fnuz", "float8_e5m2fnuz"):
    if hasattr(torch, _name):
        _DTYPES[getattr(torch, _name)] = "fp8" if "e4m3" in _name else "e5m2"

_COLLECTIVE_NAMESPACES = ("_c10d_functional", "c10d_functional", "c10d")


def dtype_name(dt: torch.dtype) -> str | None:
    """The roofline name of a torch dtype, or None when our models have no peak for it."""
    return _DTYPES.get(dt)


def nbytes(t: Any) -> int:
    """Bytes of a tensor (0 for anything else)."""
    if isinstance(t, torch.Tensor):
        return int(t.numel()) * int(t.element_size())
    return 0


def tensors(obj: Any) -> list[torch.Tensor]:
    """Every tensor in nested lists / tuples / dicts."""
    if isinstance(obj, torch.Tensor):
        return [obj]
    if isinstance(obj, (list, tuple)):
        return [t for o in obj for t in tensors(o)]
    if isinstance(obj, dict):
        return [t for o in obj.values() for t in tensors(o)]
    return []


def tensor_arg(t: torch.Tensor) -> TensorArg:
    """The registry's record of a tensor."""
    return TensorArg(tuple(int(s) for s in t.shape), dtype_name(t.dtype), int(t.element_size()),
                     tuple(int(s) for s in t.stride()))


def _arg(v: Any) -> Any:
    if isinstance(v, torch.Tensor):
        return tensor_arg(v)
    if isinstance(v, (list, tuple)) and any(isinstance(x, torch.Tensor) for x in v):
        return tuple(_arg(x) for x in v)
    return v


def _ranks(ctx: Pricer, p: dict[str, Any]) -> int | None:
    ranks = p.get("group_size") or ctx.ranks
    if ranks is None and "group_name" in p:
        try:
            from torch.distributed.distributed_c10d import _resolve_process_group  # type: ignore[attr-defined]

            ranks = _resolve_process_group(p["group_name"]).size()
        except Exception:
            return None
    return None if ranks is None else int(ranks)


def _same(a: Any, b: Any) -> bool:
    """Whether ``a`` and ``b`` are the very same tensor, or lists of the very same tensors."""
    if isinstance(a, torch.Tensor):
        return a is b
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)) and a and len(a) == len(b):
        return all(isinstance(x, torch.Tensor) and x is y for x, y in zip(a, b, strict=True))
    return False


def aliased(values: list[Any]) -> tuple[int, ...]:
    """Positions of ``values`` that repeat an earlier value's tensors (``addcmul_(v, g, g)``)."""
    return tuple(j for j, v in enumerate(values) if any(_same(u, v) for u in values[:j]))


def call_of(ctx: Pricer, func: Any, args: tuple[Any, ...], kwargs: dict[str, Any], out: Any
            ) -> Call:
    """The registry call of one aten op as it ran."""
    names = [a.name for a in func._schema.arguments]
    p = dict(zip(names, args, strict=False))
    p.update(kwargs)
    tags: set[str] = set()
    func_tags = getattr(func, "tags", ())
    if torch.Tag.pointwise in func_tags:
        tags.add("pointwise")
    if torch.Tag.reduction in func_tags:
        tags.add("reduction")
    returns = func._schema.returns
    if returns and all(r.alias_info is not None and not r.alias_info.is_write for r in returns):
        tags.add("view")
    namespace = getattr(func, "namespace", "aten")
    named = {k: _arg(v) for k, v in p.items()}
    if namespace in _COLLECTIVE_NAMESPACES:
        named["ranks"] = _ranks(ctx, p)
    return Call(f"{namespace}::{func.__name__.split('.')[0]}", tuple(named[k] for k in p),
                tuple(tensor_arg(t) for t in tensors(out)), named, (), frozenset(tags),
                Impl("eager"), aliased(list(p.values())))


def costs(ctx: Pricer, func: Any, args: tuple[Any, ...], kwargs: dict[str, Any], out: Any
          ) -> Costs | None:
    """Estimates of the kernels one aten op launches (see the module docstring)."""
    found, _ = price(call_of(ctx, func, args, kwargs, out), ctx)
    return found


#: The kernels one aten op launches: its name, ``(kind, estimate, modeled)`` per kernel, the
#: shapes of its positional tensor inputs and the dtype of the first.
Kernels = tuple[str, list[tuple[str, Estimate[Any], bool]], str, str]

_SCALARS = (int, bool, str, type(None), torch.dtype, torch.device, torch.layout,
            torch.memory_format)


class _Uncacheable(Exception):
    """An argument :func:`_key` cannot stand for exactly."""


def _key(v: Any) -> Any:
    """A hashable key equal for two arguments only when :func:`call_of` and :func:`shapes`
    make the same of them (tensors by shape, strides and dtype; scalars by type and value,
    floats bit for bit)."""
    if isinstance(v, torch.Tensor):
        return (v.dtype, tuple(v.shape), v.stride())
    if isinstance(v, float):
        return (float, v.hex())
    if isinstance(v, _SCALARS):
        return (type(v), v)
    if isinstance(v, (list, tuple)):
        return (type(v), tuple(_key(x) for x in v))
    if isinstance(v, dict):
        return (dict, tuple((k, _key(x)) for k, x in v.items()))
    raise _Uncacheable


def shapes(args: Any) -> str:
    """The shapes of the tensors in ``args`` (``"8x256 256"``; ``scalar`` for 0-d)."""
    return " ".join("x".join(str(int(s)) for s in t.shape) or "scalar" for t in tensors(args))


def kernels(ctx: Pricer, func: Any, args: tuple[Any, ...], kwargs: dict[str, Any], out: Any
            ) -> Kernels:
    """The kernels one aten op launches (see :data:`Kernels`), made once per run for each
    distinct op and argument metadata (the cache is the pricer's): a priced op as
    :func:`costs` prices it, an op no entry prices as one streaming kernel over the bytes of
    its tensors, ops that launch nothing as none. Collectives are not cached (their group
    size may be looked up)."""
    key = None
    if getattr(func, "namespace", "aten") not in _COLLECTIVE_NAMESPACES:
        try:
            key = ("aten-op", func, _key(args), _key(kwargs), _key(out),
                   aliased([*args, *kwargs.values()]))
        except _Uncacheable:
            key = None
    if key is not None:
        hit: Kernels | None = ctx.cache.get(key)
        if hit is not None:
            return hit
    name = func.__name__.split(".")[0]
    ins = tensors(args)
    dt = str(ins[0].dtype).removeprefix("torch.") if ins else ""
    found = costs(ctx, func, args, kwargs, out)
    if found is None:
        read = sum(nbytes(t) for t in ins + tensors(kwargs))
        written = sum(nbytes(t) for t in tensors(out))
        launched = ([("unmodeled", ctx.traffic(read, written, 0.0, name), False)]
                    if read + written else [])
    else:
        launched = [(kind, e, True) for kind, e in found]
    result: Kernels = (name, launched, shapes(args) if launched else "", dt)
    if key is not None:
        ctx.cache[key] = result
    return result


def attention_cost(ctx: Pricer, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
                   causal: bool, backward: bool, masked: bool = False,
                   dropout_p: float = 0.0) -> Costs | None:
    """One fused attention kernel (forward or backward) from (batch, heads, seq, dim) Q, K, V:
    the kernel SDPA runs, whichever backend it picks (``masked``: an ``attn_mask`` given;
    ``dropout_p``: SDPA's dropout on the attention weights)."""
    found, _ = fused_attention(ctx, tensor_arg(q), tensor_arg(k), tensor_arg(v), causal,
                               backward, masked=masked, dropout_p=dropout_p)
    return found


def rms_norm_cost(ctx: Pricer, x: torch.Tensor, cols: int, backward: bool) -> Costs:
    """One fused RMSNorm kernel (forward or backward) over rows of ``cols`` elements."""
    xa = tensor_arg(x)
    if backward:
        call = Call("aten::_fused_rms_norm_backward", (None, xa), (xa,),
                    {"input": xa, "normalized_shape": [cols]})
    else:
        call = Call("aten::rms_norm", (xa,), (xa,), {"input": xa, "normalized_shape": [cols]})
    found, _ = price(call, ctx)
    return found or []
