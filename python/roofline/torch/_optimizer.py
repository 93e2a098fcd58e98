"""The optimizer update of a training step, as ``torch.optim`` launches it.

:func:`roofline.torch.estimate`'s ``optimizer=`` runs the optimizer's ``step()`` on the meta
parameters (every trainable parameter with a gradient of its own shape and dtype) under the
same dispatch mode as the module, after one unrecorded step that creates the optimizer's state
(as a training loop's first step does), so its ``_foreach_*`` kernels are priced by the
registry as a profiler trace of the same step is
(:mod:`roofline.ops.registry.foreach_entries`). Ops on CPU tensors launch no kernel (the
non-capturable optimizers keep their step counts on the CPU). torch's fused optimizers refuse
meta tensors, so ``"adamw_fused"`` / ``"adam_fused"`` price the one ``_fused_adam[w]_`` call
``step()`` makes, with the state in the parameters' dtype.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from ..ops.registry import Call
from ._ops import tensor_arg

__all__ = ["NAMES", "fused_call", "make_optimizer", "trainable"]

#: Optimizer names ``optimizer=`` takes -> (torch class, keyword arguments); ``fused`` ones are
#: priced as their one fused call.
NAMES: dict[str, tuple[Callable[..., torch.optim.Optimizer], dict[str, Any]]] = {
    "adamw_foreach": (torch.optim.AdamW, {"foreach": True}),
    "adam_foreach": (torch.optim.Adam, {"foreach": True}),
    "sgd_foreach": (torch.optim.SGD, {"foreach": True, "momentum": 0.9, "lr": 1e-3}),
    "adamw_fused": (torch.optim.AdamW, {"fused": True}),
    "adam_fused": (torch.optim.Adam, {"fused": True}),
}


def trainable(params: list[torch.Tensor]) -> list[torch.Tensor]:
    """The parameters an optimizer updates, each given a (meta) gradient: every parameter that
    requires grad, once (layers replayed by ``dedupe`` never ran their backward, and a real
    step has every gradient)."""
    out = [p for p in params if p.requires_grad]
    for p in out:
        if p.grad is None:
            p.grad = torch.empty_like(p)
    return out


def make_optimizer(fn: str, optimizer: Any, params: list[torch.Tensor]
                   ) -> torch.optim.Optimizer | None:
    """The optimizer ``optimizer`` names or builds over ``params`` (None for a fused name, which
    :func:`fused_call` prices). A callable receives the parameter list."""
    if isinstance(optimizer, str):
        cls, kw = NAMES[optimizer]
        if kw.get("fused"):
            return None
        return cls(params, **kw)
    made = optimizer(params)
    if not isinstance(made, torch.optim.Optimizer):
        raise TypeError(f"{fn}: optimizer must return a torch.optim.Optimizer when called with "
                        f"the parameter list, got {type(made).__name__}")
    return made


def fused_call(name: str, params: list[torch.Tensor]) -> Call:
    """The ``_fused_adam[w]_`` call of ``torch.optim.Adam[W](fused=True).step()``: parameters,
    gradients, both moments (in the parameters' dtype), no running maximum, fp32 step counts."""
    op = "aten::_fused_adamw_" if name.startswith("adamw") else "aten::_fused_adam_"
    p = tuple(tensor_arg(t) for t in params)
    steps = tuple(tensor_arg(torch.empty((), dtype=torch.float32, device="meta"))
                  for _ in params)
    return Call(op, (p, p, p, p, (), steps))
