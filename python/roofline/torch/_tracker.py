"""A :class:`torch.utils.module_tracker.ModuleTracker` that also sees keyword inputs.

torch's tracker leaves a module in the backward when all the gradients of its *positional*
tensor inputs are computed. A module called with keyword arguments only (every HF attention
layer: ``self_attn(hidden_states=..., ...)``) then never leaves: it stays among the entered
modules for the rest of the backward, and later kernels (the previous layer's MLP, even the
embedding's backward) are named after it. This one waits for the gradients of every tensor
input, positional or keyword, that requires one, and numbers the entries (:attr:`entered`),
so that of two modules entered at once at the same depth (a layer's ``k_proj`` and ``v_proj``,
whose shared input's gradient is not summed yet) the later one names the kernel, not the
first in a set's hash order.
"""

from __future__ import annotations

import itertools
from typing import Any

import torch
from torch.autograd.graph import register_multi_grad_hook
from torch.nn.modules.module import register_module_forward_hook, register_module_forward_pre_hook
from torch.utils._pytree import tree_flatten
from torch.utils.module_tracker import ModuleTracker


class Tracker(ModuleTracker):
    """ModuleTracker whose backward exit waits for keyword inputs' gradients too."""

    def __init__(self) -> None:
        super().__init__()
        #: each module name's latest entry, numbered in order
        self.entered: dict[str, int] = {}
        self._count = itertools.count()
        #: called once per module call (forward), before the module runs
        self.on_call: Any = None

    def _get_append_fn(self, name: str, is_bw: bool) -> Any:
        append = super()._get_append_fn(name, is_bw)  # type: ignore[no-untyped-call]

        def fn(*args: Any) -> None:
            self.entered[name] = next(self._count)
            append(*args)

        return fn

    def _fw_pre_hook(self, mod: Any, input: Any) -> None:
        # enter; the backward exit is registered after the call, with the keyword inputs
        if self.on_call is not None:
            self.on_call()
        self._get_append_fn(self._get_mod_name(mod), False)()  # type: ignore[no-untyped-call]

    def _fw_post_hook_kw(self, mod: Any, args: Any, kwargs: Any, output: Any) -> None:
        name = self._get_mod_name(mod)  # type: ignore[no-untyped-call]
        leaves, _ = tree_flatten((args, kwargs))
        seen: set[int] = set()
        tensors = []
        for a in leaves:
            if isinstance(a, torch.Tensor) and a.requires_grad and id(a) not in seen:
                seen.add(id(a))
                tensors.append(a)
        # registering hooks is no op to price: keep it out of the estimate's function mode
        # (which would otherwise see every tensor.register_hook call)
        with torch._C.DisableTorchFunction():
            if tensors:
                self._hooks.append(register_multi_grad_hook(tensors,
                                                            self._get_pop_fn(name, True)))  # type: ignore[no-untyped-call]
            self._fw_post_hook(mod, args, output)

    def __enter__(self) -> Tracker:
        self._fw_pre_handle = register_module_forward_pre_hook(self._fw_pre_hook)
        self._fw_post_handle = register_module_forward_hook(self._fw_post_hook_kw,
                                                            with_kwargs=True)
        return self
