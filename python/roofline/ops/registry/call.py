"""One framework op as it ran: the normalized record every registry entry prices.

Two adapters build it: ``roofline.torch`` from a live aten dispatch (function, arguments,
outputs) and ``roofline.trace`` from a Kineto event (``Input Dims``, ``Input type``,
``Concrete Inputs``). An entry reads only this record, so both paths price an op alike.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Call", "Impl", "TensorArg", "flag", "int_list", "nbytes"]


@dataclass(frozen=True)
class TensorArg:
    """A tensor argument: its shape, roofline dtype name (None: no model), element size and
    strides in elements (None: not recorded)."""

    shape: tuple[int, ...]
    dtype_name: str | None
    itemsize: int
    stride: tuple[int, ...] | None = None

    @property
    def numel(self) -> int:
        return math.prod(self.shape)

    @property
    def nbytes(self) -> int:
        return self.numel * self.itemsize


@dataclass(frozen=True)
class Impl:
    """What ran: ``runtime`` ("eager" / "compiled"), the library ``backend`` (cudnn, flash, ...)
    and the kernel name, when known; a trace's ``grid`` and ``block`` (the kernel's launch
    configuration, as Kineto records it) where an entry reads them."""

    runtime: str = "eager"
    backend: str | None = None
    kernel: str | None = None
    grid: tuple[int, int, int] | None = None
    block: tuple[int, int, int] | None = None


@dataclass(frozen=True)
class Call:
    """One op as it ran.

    ``inputs`` holds one item per positional input: a :class:`TensorArg`, a tuple of them (a
    tensor list), or a scalar / None. ``outputs`` is None when the source did not record them
    (a profiler trace). ``args`` maps schema argument names to values where known (the live
    path); ``concrete`` holds a trace's recorded scalar inputs as strings, by position.
    ``tags`` are torch's op tags (``pointwise``, ``reduction``, ``view``) where known.
    ``aliased`` lists the positions of inputs that are the very tensors (or tensor list) of an
    earlier input (``addcmul_(v, g, g)``): a kernel loads them through the cache, not DRAM.
    """

    name: str
    inputs: tuple[Any, ...] = ()
    outputs: tuple[TensorArg, ...] | None = None
    args: dict[str, Any] = field(default_factory=dict)
    concrete: tuple[str, ...] = ()
    tags: frozenset[str] = frozenset()
    impl: Impl = Impl()
    aliased: tuple[int, ...] = ()

    @property
    def base(self) -> str:
        """The name without its namespace (``aten::mm`` -> ``mm``)."""
        return self.name.rsplit("::", 1)[-1]

    def tensors(self) -> list[TensorArg]:
        """Every tensor input, tensor lists flattened, in order."""
        out: list[TensorArg] = []

        def walk(x: Any) -> None:
            if isinstance(x, TensorArg):
                out.append(x)
            elif isinstance(x, tuple):
                for y in x:
                    walk(y)

        walk(self.inputs)
        return out

    def tensor(self, index: int) -> TensorArg | None:
        """The input at ``index`` when it is a tensor."""
        if 0 <= index < len(self.inputs) and isinstance(self.inputs[index], TensorArg):
            t: TensorArg = self.inputs[index]
            return t
        return None

    def arg(self, name: str, index: int | None = None, default: Any = None) -> Any:
        """A schema argument by name (live path), else the recorded scalar at ``index``."""
        if name in self.args:
            return self.args[name]
        if index is not None and 0 <= index < len(self.concrete) and self.concrete[index] != "":
            return self.concrete[index]
        return default

    def scalar(self, name: str, index: int, default: Any = None) -> Any:
        """A scalar argument: the non-tensor input at ``index`` (a call built by hand or by a
        runtime program), else :meth:`arg`."""
        v: Any = self.inputs[index] if 0 <= index < len(self.inputs) else None
        if v is None or isinstance(v, (TensorArg, tuple)):
            return self.arg(name, index, default)
        return v


def flag(v: Any, default: bool = False) -> bool:
    """A recorded boolean argument: ``True`` / ``False`` (any case), an integer (non-zero is
    true) or a bool; ``default`` when absent (None or empty), False when unreadable."""
    if v is None or v == "":
        return default
    if isinstance(v, (bool, int)):
        return bool(v)
    s = str(v).strip()
    if s.lower() in ("true", "false"):
        return s.lower() == "true"
    try:
        return int(s) != 0
    except ValueError:
        return False


#: A recorded integer list as a trace writes it (``"[0, -1]"``, ``"(2,)"``, ``"3"``): at most
#: 64 entries of at most 19 digits; anything else is not parsed (a hostile string could make
#: Python's own parser run out of memory).
_INT_LIST = re.compile(r"\s*[\[(]?\s*(-?\d{1,19}(\s*,\s*-?\d{1,19}){0,63})?\s*,?\s*[\])]?\s*")


def int_list(v: Any) -> list[int] | None:
    """A recorded integer-list argument (``dim``, ``normalized_shape``) as a list of ints: a
    string such as ``"[0, -1]"``, an int, or a list / tuple of ints (not bools); None when
    it is none of these."""
    if isinstance(v, str):
        if len(v) > 2000 or not _INT_LIST.fullmatch(v):
            return None
        return [int(x) for x in re.findall(r"-?\d+", v)]
    if isinstance(v, int) and not isinstance(v, bool):
        return [v]
    if isinstance(v, (list, tuple)) and all(
            isinstance(d, int) and not isinstance(d, bool) for d in v):
        return list(v)
    return None


def nbytes(ts: list[TensorArg] | tuple[TensorArg, ...] | None) -> int:
    """Total bytes of tensors."""
    return sum(t.nbytes for t in ts or ())
