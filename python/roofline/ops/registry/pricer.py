"""The hardware, efficiency and per-run cache every entry prices with, and the few public-op
calls entries share (one GEMM, one memory-bound pass, one row op)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from ...estimate import Estimate
from ..elementwise import elementwise
from ..gemm import gemm
from ..rows import cross_entropy, layernorm, log_softmax_eager, rmsnorm, softmax
from ..sustained import at_settled_clock, settled_clock

__all__ = ["ROW_OPS", "Pricer"]

#: Row ops by name.
ROW_OPS: dict[str, Callable[..., Any]] = {"layernorm": layernorm, "rmsnorm": rmsnorm,
                                          "softmax": softmax, "cross_entropy": cross_entropy,
                                          "log_softmax": log_softmax_eager}


@dataclasses.dataclass
class Pricer:
    """Hardware and efficiency of one run, with a cache of the estimates it made."""

    hardware: Any
    efficiency: Any
    ranks: int | None = None
    cache: dict[Any, Any] = dataclasses.field(default_factory=dict)
    #: a training step (forward and backward): its GEMMs and attention run at the power
    #: limiter's settled clock (:mod:`roofline.ops.sustained`), not each kernel's clock alone
    sustained: bool = False
    #: ids of the estimates :meth:`settle` returned (GEMM and attention kernels, whose clock
    #: the power limiter sets); they live in :attr:`cache` as long as the pricer
    clocked: set[int] = dataclasses.field(default_factory=set)

    def settle(self, e: Estimate[Any]) -> Estimate[Any]:
        """``e`` (a GEMM or attention kernel) at the settled clock when :attr:`sustained`;
        its id is kept in :attr:`clocked` either way."""
        if self.sustained:
            if "clock" not in self.cache:
                self.cache["clock"] = settled_clock(self.hardware, self.efficiency)
            e = at_settled_clock(e, self.cache["clock"])
        self.clocked.add(id(e))
        return e

    def cached(self, key: Any, make: Callable[[], Estimate[Any]]) -> Estimate[Any]:
        """``make()`` once per key."""
        if key not in self.cache:
            self.cache[key] = make()
        out: Estimate[Any] = self.cache[key]
        return out

    def gemm(self, m: int, k: int, n: int, dt: str, batch: int = 1, out: str | None = None,
             scaling: str | None = None, a_transposed: bool = False) -> Estimate[Any]:
        """:func:`roofline.gemm` of one (batched) matrix product (``a_transposed``: A is a
        transposed view, whose rows are m elements), at the settled clock when
        :attr:`sustained`."""
        kw: dict[str, Any] = {"scaling": scaling} if scaling else {}
        if a_transposed:
            kw["a_transposed"] = True
        return self.cached(("gemm", m, k, n, dt, batch, out, scaling, a_transposed),
                           lambda: self.settle(gemm(m, k, n, dtype=dt, hardware=self.hardware,
                                               batch=batch, out_dtype=out,
                                               efficiency=self.efficiency, **kw)))

    def traffic(self, read_bytes: int, write_bytes: int, flops: float = 0.0,
                label: str = "", kernels: int = 1) -> Estimate[Any]:
        """One streaming kernel (or ``kernels`` back to back) that reads and writes these
        bytes (and does ``flops``)."""
        total = int(read_bytes) + int(write_bytes)

        def make() -> Estimate[Any]:
            e = elementwise(max(total, 1), reads=1, writes=0,
                            flops_per_element=float(flops) / max(total, 1), dtype="int8",
                            hardware=self.hardware, efficiency=self.efficiency,
                            kernels=max(int(kernels), 1))
            return dataclasses.replace(e, label=label)

        return self.cached(("traffic", total, float(flops), label, int(kernels)), make)

    def row(self, fn: str, rows: int, cols: int, dt: str, backend: str, **kw: Any
            ) -> Estimate[Any]:
        """A row op (``layernorm``, ``rmsnorm``, ``softmax``) over ``rows`` x ``cols``."""
        key = (fn, rows, cols, dt, backend, tuple(sorted(kw.items())))
        return self.cached(key, lambda: ROW_OPS[fn](
            rows, cols, dtype=dt, hardware=self.hardware, efficiency=self.efficiency,
            backend=backend, **kw))
