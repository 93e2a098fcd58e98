"""Ready-made transforms: each returns a :class:`Comparison` of the plan before and after."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any

import numpy as np

from .._checks import positive_int
from .._errors import ArgumentTypeError, ArgumentValueError, table_renamed
from .._format import si
from ..efficiency import EfficiencyLike
from ..hardware import HardwareLike
from ..ops.attention import attention, attention_kernels
from ..ops.gemm import gemm
from .graph import Graph, _eff_name
from .report import Comparison, Kernel, Plan, compare

__all__ = [
    "ChainOrders",
    "batch_gemms",
    "epilogue_fusion",
    "flash_attention",
    "fuse_projections",
    "horizontal_fusion",
    "matmul_chain",
]


#: Most ops a transform builds into one graph (each is priced on its own).
MAX_GRAPH_OPS = 4096


def _int_list(fn: str, name: str, values: Any, minimum: int = 1) -> list[int]:
    if isinstance(values, (str, bytes)) or not isinstance(values, Sequence):
        raise ArgumentTypeError(fn, name, f"must be a list of positive integers, got {values!r}")
    if len(values) < minimum:
        raise ArgumentValueError(fn, name, f"needs at least {minimum} values, got {values!r}")
    if len(values) > MAX_GRAPH_OPS:
        raise ArgumentValueError(fn, name, f"holds {len(values)} values, at most "
                                 f"{MAX_GRAPH_OPS} are accepted")
    return [positive_int(fn, f"{name}[{i}]", v) for i, v in enumerate(values)]


def epilogue_fusion(
    m: int,
    k: int,
    n: int,
    *,
    op: str = "relu",
    flops_per_element: float = 1.0,
    extra_inputs: int = 0,
    dtype: str = "bf16",
    hardware: HardwareLike = None,
    efficiency: EfficiencyLike = "default",
) -> Comparison:
    """GEMM then an elementwise op, as two kernels or with the op in the GEMM's epilogue.

    Parameters
    ----------
    m, k, n : int
        ``C = A @ B`` with A m x k and B k x n.
    op : str
        Name of the elementwise op (``"relu"``, ``"gelu"``, ``"bias_add"``...), for labels.
    flops_per_element : float
        Its arithmetic per element.
    extra_inputs : int
        Other m x n tensors the op reads (1 for a residual add).
    dtype : str
        Format of every tensor.

    Notes
    -----
    Unfused: ``rl.gemm(m, k, n)`` writes C (``2mn`` bytes in bf16), then
    ``rl.elementwise(m·n, reads=1 + extra_inputs, writes=1)`` reads it back and writes the
    result. Fused: the GEMM's epilogue applies the op before the only write. With ``m = k = n
    = N`` in bf16 and no extra inputs, the bytes are ``10·N²`` against ``6·N²``.
    """
    fn = "fusion.epilogue_fusion"
    m, k, n = (positive_int(fn, a, v) for a, v in (("m", m), ("k", k), ("n", n)))
    if isinstance(extra_inputs, (bool, np.bool_)) or not isinstance(extra_inputs, int) or \
            not 0 <= extra_inputs <= MAX_GRAPH_OPS:
        raise ValueError(f"{fn}: extra_inputs must be an integer in [0, {MAX_GRAPH_OPS}], got "
                         f"{extra_inputs!r}")
    g = Graph(f"{op}(A @ B)")
    g.input("A", (m, k), dtype)
    g.input("B", (k, n), dtype)
    g.gemm("C", "A", "B")
    extra = [g.input(f"X{i}", (m, n), dtype) for i in range(extra_inputs)]
    g.elementwise("Y", ["C", *extra], op=op, flops_per_element=flops_per_element)
    unfused = g.estimate(hardware=hardware, efficiency=efficiency, name="GEMM, then " + op)
    fused = g.estimate([["C", "Y"]], hardware=hardware, efficiency=efficiency,
                       name=f"GEMM with {op} epilogue")
    return compare(unfused, fused, f"epilogue fusion: {op}(A @ B), {m}x{k}x{n} {dtype}")


def horizontal_fusion(
    m: int,
    k: int,
    ns: Sequence[int],
    *,
    dtype: str = "bf16",
    hardware: HardwareLike = None,
    efficiency: EfficiencyLike = "default",
) -> Comparison:
    """GEMMs that share their input ``x`` (m x k): one each, or one GEMM on concatenated weights.

    Notes
    -----
    Before: ``sum_i rl.gemm(m, k, n_i)`` (x read once per GEMM, one launch each). After:
    ``rl.gemm(m, k, sum_i n_i)``; the outputs are column slices of one result (views, no
    copy). The fused GEMM reads x once and may tile better (fewer partial waves), or worse
    when one output is tiny and the concatenated N pads a tile.
    """
    fn = "fusion.horizontal_fusion"
    m, k = positive_int(fn, "m", m), positive_int(fn, "k", k)
    widths = _int_list(fn, "ns", ns)
    g = Graph("separate")
    g.input("x", (m, k), dtype)
    for i, n in enumerate(widths):
        g.input(f"W{i}", (k, n), dtype)
        g.gemm(f"y{i}", "x", f"W{i}")
    before = g.estimate(hardware=hardware, efficiency=efficiency,
                        name=f"{len(widths)} GEMMs")
    f = Graph("fused")
    f.input("x", (m, k), dtype)
    f.input("W", (k, sum(widths)), dtype)
    f.gemm("y", "x", "W")
    after = f.estimate(hardware=hardware, efficiency=efficiency,
                       name=f"1 GEMM, N = {sum(widths)}")
    return compare(before, after,
                   f"horizontal fusion: x[{m}x{k}] @ W[{k}x({'+'.join(map(str, widths))})]")


#: Most GEMMs :func:`batch_gemms` takes (the baseline plan holds one kernel per GEMM).
MAX_BATCH_COUNT = 2**16


def batch_gemms(
    m: int,
    k: int,
    n: int,
    count: int,
    *,
    dtype: str = "bf16",
    hardware: HardwareLike = None,
    efficiency: EfficiencyLike = "default",
) -> Comparison:
    """``count`` independent GEMMs of one shape: one launch each, or one batched GEMM (bmm).

    Notes
    -----
    Before: ``count · rl.gemm(m, k, n)``; after: ``rl.gemm(m, k, n, batch=count)``. Same FLOPs
    and bytes; the batched kernel saves launches and fills the SMs with more tiles.
    """
    fn = "fusion.batch_gemms"
    m, k, n = (positive_int(fn, a, v) for a, v in (("m", m), ("k", k), ("n", n)))
    count = positive_int(fn, "count", count)
    if count > MAX_BATCH_COUNT:
        raise ValueError(f"{fn}: count must be <= {MAX_BATCH_COUNT} (one kernel each in the "
                         f"baseline plan), got {count}")
    # The baseline is count copies of one GEMM's kernel (what a graph of count independent
    # GEMMs plans, without building that graph: linear in count).
    one = Graph("one")
    one.input("x0", (m, k), dtype)
    one.input("W0", (k, n), dtype)
    one.gemm("y0", "x0", "W0")
    base = one.estimate(hardware=hardware, efficiency=efficiency)
    (kernel,) = base.kernels
    before = Plan(f"{count} GEMMs", tuple(
        Kernel(f"y{i}", (f"y{i}",), kernel.estimate, kernel.launches) for i in range(count)),
        base.hardware, base.efficiency)
    b = Graph("batched")
    b.input("x", (count, m, k), dtype)
    b.input("W", (count, k, n), dtype)
    b.gemm("y", "x", "W")
    after = b.estimate(hardware=hardware, efficiency=efficiency, name=f"1 bmm, batch {count}")
    return compare(before, after, f"batching: {count} x gemm {m}x{k}x{n} {dtype}")


def flash_attention(
    batch: int,
    heads: int,
    q_len: int,
    kv_len: int,
    head_dim: int,
    *,
    kv_heads: int | None = None,
    causal: bool = False,
    dtype: str = "bf16",
    hardware: HardwareLike = None,
    efficiency: EfficiencyLike = "default",
) -> Comparison:
    """Materialized attention (scores through DRAM) against one flash-attention kernel.

    Notes
    -----
    Both plans come from ``rl.attention`` (``flash=False`` and ``flash=True``) with the same
    arguments; the materialized plan lists its kernels from
    ``roofline.attention.attention_kernels`` (QK^T GEMM, softmax, PV GEMM), which write and
    re-read the ``batch·heads·q_len·kv_len`` score and probability matrices.
    """
    from .._params.resolve import resolve

    fn = "fusion.flash_attention"
    for name, value in (("batch", batch), ("heads", heads), ("q_len", q_len),
                        ("kv_len", kv_len), ("head_dim", head_dim)):
        positive_int(fn, name, value)  # one problem (one plan of kernels): scalar sizes
    if kv_heads is not None:
        positive_int(fn, "kv_heads", kv_heads)
    hw, _, _ = resolve(hardware, efficiency)
    args: dict[str, Any] = {"batch": batch, "heads": heads, "q_len": q_len, "kv_len": kv_len,
            "head_dim": head_dim, "kv_heads": kv_heads, "causal": causal, "dtype": dtype,
            "hardware": hw, "efficiency": efficiency}
    flash = attention(**args, flash=True)
    mat = attention(**args, flash=False)
    rows = attention_kernels(**args, flash=False)
    eff = _eff_name(efficiency)
    launches = int(sum(int(r.get("launches", 1)) for r in rows))
    before = Plan("materialized", (Kernel("attention materialized", tuple(
        str(r["kernel"]) for r in rows), mat, launches),), hw.name, eff)
    after = Plan("flash", (Kernel("attention flash", ("attention",), flash, 1),), hw.name, eff)
    return compare(before, after, f"flash vs materialized attention: b={batch} h={heads} "
                   f"q={q_len} kv={kv_len} d={head_dim}{' causal' if causal else ''}")


@dataclass(frozen=True)
class ChainOrders:
    """Every association of a matrix chain, cheapest first.

    Attributes
    ----------
    dims : tuple of int
        Matrix ``i`` is ``dims[i] x dims[i+1]``.
    orders : tuple of (str, Plan)
        Parenthesized expression and its plan (one GEMM per product), sorted by time.
    """

    dims: tuple[int, ...]
    orders: tuple[tuple[str, Plan], ...]

    @property
    def best(self) -> tuple[str, Plan]:
        """The cheapest association."""
        return self.orders[0]

    @property
    def worst(self) -> tuple[str, Plan]:
        """The most expensive association."""
        return self.orders[-1]

    def plan(self, expr: str) -> Plan:
        """The plan of one expression, e.g. ``"(M0 @ M1) @ M2"``."""
        return self._lookup(expr, "ChainOrders.plan", "expr")

    def _lookup(self, expr: Any, fn: str, argument: str) -> Plan:
        from .._errors import UnknownNameError

        for e, p in self.orders:
            if e == expr:
                return p
        known = [e for e, _ in self.orders]
        raise UnknownNameError(f"{fn}: unknown {argument} {expr!r} (known: "
                               f"{', '.join(known)})", (), argument=argument, function=fn)

    def compare(self, baseline: str | None = None) -> Comparison:
        """The best order against ``baseline`` (an expression; default: the worst order)."""
        expr, p = self.worst if baseline is None else (
            baseline, self._lookup(baseline, "ChainOrders.compare", "baseline"))
        return compare(p.renamed(expr), self.best[1].renamed(self.best[0]),
                       f"matmul chain {' x '.join(map(str, self.dims))}")

    def rows(self) -> list[dict[str, Any]]:
        """One dict per order: expr, time_s, flops, bytes, launches."""
        return [{"expr": e, "time_s": p.time_s, "flops": p.flops, "bytes": p.bytes,
                 "launches": p.launches} for e, p in self.orders]

    def table(self) -> Any:
        """Deprecated name of :meth:`to_pandas`."""
        table_renamed(self)
        return self.to_pandas()

    def to_pandas(self) -> Any:
        """A pandas DataFrame of :meth:`rows`."""
        import pandas as pd

        return pd.DataFrame(self.rows())

    def _repr_html_(self) -> str:
        from .._html import result_html

        expr, best = self.best
        return result_html(f"matmul chain {' x '.join(map(str, self.dims))}: "
                           f"{len(self.orders)} associations",
                           [("best", f"{expr}: {si(best.time_s, 's')}"),
                            ("worst", f"{self.worst[0]}: {si(self.worst[1].time_s, 's')}")],
                           self.to_pandas())


def matmul_chain(
    dims: Sequence[int],
    *,
    names: Sequence[str] | None = None,
    dtype: str = "bf16",
    hardware: HardwareLike = None,
    efficiency: EfficiencyLike = "default",
) -> ChainOrders:
    """Price every association of ``M0 @ M1 @ ... @ M(n-1)`` and sort them by time.

    Parameters
    ----------
    dims : list of int
        ``n + 1`` sizes: matrix ``i`` is ``dims[i] x dims[i + 1]`` (2 to 8 matrices).
    names : list of str, optional
        Names of the matrices in expressions (default ``M0``, ``M1``, ...).

    Notes
    -----
    Each product is one ``rl.gemm`` whose result goes through DRAM; an association's time is
    the sum of its GEMMs (the classic matrix-chain problem with the GEMM model as the cost
    instead of FLOPs, so small, launch- or memory-bound products are priced as such).
    """
    fn = "fusion.matmul_chain"
    d = _int_list(fn, "dims", dims, minimum=3)
    count = len(d) - 1
    if count > 8:
        raise ValueError(f"{fn}: dims describes {count} matrices; at most 8 are supported")
    if names is None:
        labels = [f"M{i}" for i in range(count)]
    else:
        if isinstance(names, (str, bytes)) or not isinstance(names, Sequence) \
                or len(names) != count:
            raise ValueError(f"{fn}: names must be {count} strings, got {names!r}")
        labels = [str(x) for x in names]
    from .._params.resolve import resolve

    hw, _, _ = resolve(hardware, efficiency)
    eff = _eff_name(efficiency)

    @cache
    def price(m: int, k: int, n: int) -> Kernel:
        e = gemm(m, k, n, dtype=dtype, hardware=hw, efficiency=efficiency)
        return Kernel(f"gemm {m}x{k}x{n}", (f"{m}x{k}x{n}",), e, 1)

    def trees(i: int, j: int) -> list[tuple[str, list[Kernel]]]:
        if i == j:
            return [(labels[i], [])]
        out = []
        for s in range(i, j):
            for (le, lk), (re, rk) in itertools.product(trees(i, s), trees(s + 1, j)):
                le = le if s == i else f"({le})"
                re = re if s + 1 == j else f"({re})"
                out.append((f"{le} @ {re}", [*lk, *rk, price(d[i], d[s + 1], d[j + 1])]))
        return out

    plans = [(e, Plan(e, tuple(ks), hw.name, eff)) for e, ks in trees(0, count - 1)]
    plans.sort(key=lambda ep: ep[1].time_s)
    return ChainOrders(tuple(d), tuple(plans))


def fuse_projections(
    m: int,
    k: int,
    ns: Sequence[int],
    follow_ups: Sequence[tuple[int, int]] = (),
    *,
    dtype: str = "bf16",
    hardware: HardwareLike = None,
    efficiency: EfficiencyLike = "default",
) -> Comparison:
    """Projections of one input plus second GEMMs on some of their outputs: one GEMM each,
    against one horizontally fused GEMM plus one batched GEMM for the second stage.

    Parameters
    ----------
    m, k : int
        Tokens and input width: ``x`` is m x k.
    ns : list of int
        Output widths of the projections ``y_i = x @ W_i`` (k x n_i).
    follow_ups : list of (int, int)
        ``(i, n2)``: a GEMM ``y_i @ V`` with V of shape n_i x n2. All must have the same
        shape (they become one bmm).

    Notes
    -----
    Before: ``sum_i rl.gemm(m, k, n_i) + sum_j rl.gemm(m, n_ij, n2)``. After:
    ``rl.gemm(m, k, sum n_i) + rl.gemm(m, n_i, n2, batch=len(follow_ups))``. The bmm reads its
    inputs as strided column slices of the fused output (no copy), as in sglang PR #17801.
    """
    fn = "fusion.fuse_projections"
    m, k = positive_int(fn, "m", m), positive_int(fn, "k", k)
    widths = _int_list(fn, "ns", ns)
    ups: list[tuple[int, int]] = []
    if isinstance(follow_ups, (str, bytes)) or not isinstance(follow_ups, Sequence):
        raise ArgumentTypeError(fn, "follow_ups", "must be a list of (index, n2) pairs, got "
                                f"{follow_ups!r}")
    for j, fu in enumerate(follow_ups):
        if not isinstance(fu, Sequence) or len(fu) != 2:
            raise TypeError(f"{fn}: follow_ups[{j}] must be a pair (index, n2), got {fu!r}")
        i = fu[0]
        if isinstance(i, bool) or not isinstance(i, (int, np.integer)) or not \
                0 <= int(i) < len(widths):
            raise ValueError(f"{fn}: follow_ups[{j}][0] must index ns (0 to "
                             f"{len(widths) - 1}), got {i!r}")
        ups.append((int(i), positive_int(fn, f"follow_ups[{j}][1]", fu[1])))
    shapes = {(widths[i], n2) for i, n2 in ups}
    if len(shapes) > 1:
        raise ValueError(f"{fn}: follow-up GEMMs must share one shape to be batched, got "
                         f"(k, n) = {sorted(shapes)}")
    g = Graph("separate")
    g.input("x", (m, k), dtype)
    for i, n in enumerate(widths):
        g.input(f"W{i}", (k, n), dtype)
        g.gemm(f"y{i}", "x", f"W{i}")
    for j, (i, n2) in enumerate(ups):
        g.input(f"V{j}", (widths[i], n2), dtype)
        g.gemm(f"z{j}", f"y{i}", f"V{j}")
    before = g.estimate(hardware=hardware, efficiency=efficiency,
                        name=f"{len(widths) + len(ups)} GEMMs")
    f = Graph("fused")
    f.input("x", (m, k), dtype)
    f.input("W", (k, sum(widths)), dtype)
    f.gemm("y", "x", "W")
    after = f.estimate(hardware=hardware, efficiency=efficiency)
    name, tail = "1 GEMM", ""
    if ups:
        k2, n2 = shapes.pop()
        tail = f", then {len(ups)} x {k2}->{n2}"
        f.input("ys", (len(ups), m, k2), dtype)  # strided slices of y, read by the bmm
        f.input("V", (len(ups), k2, n2), dtype)
        f.gemm("z", "ys", "V")
        after = f.estimate(hardware=hardware, efficiency=efficiency)
        name = "1 GEMM + 1 bmm"
    return compare(before, after.renamed(name),
                   f"projection fusion: m={m}, k={k}, n={'+'.join(map(str, widths))}{tail}")
