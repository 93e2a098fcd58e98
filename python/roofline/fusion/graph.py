"""A small op graph over named tensors, estimated unfused or with fusion groups."""

from __future__ import annotations

import math
import numbers
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .. import _core
from .._dtypes import dtype as parse_dtype
from .._dtypes import label as dtype_label
from ..efficiency import EfficiencyLike
from ..estimate import Estimate
from ..ops.attention import attention
from ..ops.elementwise import elementwise as elementwise_estimate
from ..ops.gemm import gemm as gemm_estimate
from .report import Kernel, Plan

__all__ = ["Graph", "Op", "Tensor"]

_FN = "fusion.Graph"


@dataclass(frozen=True)
class Tensor:
    """A named tensor: shape (row-major, last two dims are the matrix) and element format."""

    name: str
    shape: tuple[int, ...]
    dtype: str

    @property
    def numel(self) -> int:
        """Number of elements."""
        return math.prod(self.shape)

    @property
    def nbytes(self) -> float:
        """Bytes the tensor occupies in DRAM (block scales not counted)."""
        return float(self.numel) * _core.bytes_per_element(parse_dtype(_FN, self.dtype))


@dataclass(frozen=True)
class Op:
    """One op of a :class:`Graph`; its name is the name of the tensor it produces."""

    name: str
    kind: str  # "gemm" or "elementwise"
    inputs: tuple[str, ...]
    params: dict[str, Any] = field(default_factory=dict)


def _check_name(fn: str, arg: str, value: Any) -> str:
    if not isinstance(value, str):
        raise TypeError(f"{fn}: {arg} must be a string, got {value!r}")
    if not value.strip():
        raise ValueError(f"{fn}: {arg} must be a non-empty name, got {value!r}")
    return value


def _check_shape(fn: str, value: Any) -> tuple[int, ...]:
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence):
        raise TypeError(f"{fn}: shape must be a tuple of positive integers, got {value!r}")
    if not value:
        raise ValueError(f"{fn}: shape must have at least one dimension, got {value!r}")
    out = []
    for d in value:
        if isinstance(d, (bool, np.bool_)) or not isinstance(d, (numbers.Integral, np.integer)):
            raise TypeError(f"{fn}: shape must be a tuple of positive integers, got {value!r}")
        if int(d) < 1:
            raise ValueError(f"{fn}: shape must be a tuple of positive integers, got {value!r}")
        out.append(int(d))
    return tuple(out)


class Graph:
    """A sequence (or DAG) of GEMMs and elementwise ops over named tensors.

    Build it with :meth:`input`, :meth:`gemm` and :meth:`elementwise` (ops are named after the
    tensor they produce and must be added after their inputs), then call :meth:`estimate`
    without groups (every op its own kernel) or with fusion groups.

    Examples
    --------
    >>> g = Graph("relu(A @ B)")
    >>> g.input("A", (4096, 4096)); g.input("B", (4096, 4096))
    'A'
    'B'
    >>> g.gemm("C", "A", "B"); g.elementwise("R", ["C"], op="relu", flops_per_element=1)
    'C'
    'R'
    >>> unfused = g.estimate(hardware="H100 SXM")
    >>> fused = g.estimate(groups=[["C", "R"]], hardware="H100 SXM")

    Notes
    -----
    Tensors that no op reads are the graph's outputs. A kernel reads each tensor it needs
    from DRAM once and writes each tensor it produces that is a graph output or is read by
    another kernel; tensors produced and consumed inside one fusion group stay on chip.
    """

    def __init__(self, name: str = "") -> None:
        if not isinstance(name, str):
            raise TypeError(f"{_FN}: name must be a string, got {name!r}")
        self.name = name
        self.tensors: dict[str, Tensor] = {}
        self.ops: dict[str, Op] = {}
        self._readers: dict[str, list[str]] = {}
        self._readers_of: int = 0  # len(self.ops) when _readers was built

    # ---------------------------------------------------------------- building

    def input(self, name: str, shape: Sequence[int], dtype: str = "bf16") -> str:
        """Declare an input tensor (read from DRAM); returns its name."""
        fn = f"{_FN}.input"
        _check_name(fn, "name", name)
        if name in self.tensors:
            raise ValueError(f"{fn}: tensor {name!r} already exists")
        dt = dtype_label(parse_dtype(fn, dtype))
        self.tensors[name] = Tensor(name, _check_shape(fn, shape), dt)
        return name

    def _get(self, fn: str, arg: str, name: Any) -> Tensor:
        _check_name(fn, arg, name)
        if name not in self.tensors:
            import difflib

            close = difflib.get_close_matches(name, list(self.tensors), n=3)
            hint = f"; did you mean {', '.join(repr(c) for c in close)}?" if close else ""
            from .._errors import UnknownNameError

            raise UnknownNameError(f"{fn}: unknown tensor {arg}={name!r}{hint}", close)
        return self.tensors[name]

    def _new(self, fn: str, out: Any) -> str:
        _check_name(fn, "out", out)
        if out in self.tensors:
            raise ValueError(f"{fn}: tensor {out!r} already exists")
        return str(out)

    def gemm(self, out: str, a: str, b: str, *, out_dtype: str | None = None) -> str:
        """Add ``out = a @ b`` (a: [..., m, k], b: [..., k, n]); returns ``out``.

        Leading dimensions (equal in both operands) make it a batched GEMM; a 2-D ``b`` with
        a 3-D ``a`` is one GEMM with the batch folded into m. ``out_dtype`` defaults to the
        format of ``a``.
        """
        fn = f"{_FN}.gemm"
        out = self._new(fn, out)
        ta, tb = self._get(fn, "a", a), self._get(fn, "b", b)
        if ta.dtype != tb.dtype:
            raise ValueError(
                f"{fn}: operands must share a dtype, got a={a!r} ({ta.dtype}) and b={b!r} "
                f"({tb.dtype})"
            )
        if len(ta.shape) < 2 or len(tb.shape) < 2:
            raise ValueError(
                f"{fn}: operands must be at least 2-D, got a{ta.shape} and b{tb.shape}"
            )
        if len(tb.shape) == 2:  # (..., m, k) @ (k, n): fold the leading dims into m
            batch = 1
            m = math.prod(ta.shape[:-1])
            lead: tuple[int, ...] = ta.shape[:-2]
        else:
            if ta.shape[:-2] != tb.shape[:-2]:
                raise ValueError(
                    f"{fn}: batch dimensions must match, got a{ta.shape} and b{tb.shape}"
                )
            lead = ta.shape[:-2]
            batch = math.prod(lead)
            m = ta.shape[-2]
        k, n = ta.shape[-1], tb.shape[-1]
        if tb.shape[-2] != k:
            raise ValueError(
                f"{fn}: inner dimensions differ, got a{ta.shape} @ b{tb.shape} ({k} != "
                f"{tb.shape[-2]})"
            )
        odt = ta.dtype if out_dtype is None else dtype_label(parse_dtype(fn, out_dtype,
                                                                         "out_dtype"))
        shape = (*lead, ta.shape[-2], n) if len(tb.shape) == 2 else (*lead, m, n)
        self.tensors[out] = Tensor(out, shape, odt)
        self.ops[out] = Op(out, "gemm", (a, b), {"m": m, "k": k, "n": n, "batch": batch,
                                                 "dtype": ta.dtype, "out_dtype": odt})
        return out

    def elementwise(
        self,
        out: str,
        inputs: Sequence[str],
        *,
        op: str = "elementwise",
        flops_per_element: float = 1.0,
        dtype: str | None = None,
    ) -> str:
        """Add ``out = op(*inputs)`` elementwise (inputs broadcast numpy-style); returns ``out``.

        ``flops_per_element`` is the arithmetic per output element; ``dtype`` the output
        format (default: the first input's).
        """
        fn = f"{_FN}.elementwise"
        out = self._new(fn, out)
        if isinstance(inputs, str) or not isinstance(inputs, Sequence) or not inputs:
            raise TypeError(f"{fn}: inputs must be a non-empty list of tensor names, got "
                            f"{inputs!r}")
        ts = [self._get(fn, "inputs", i) for i in inputs]
        try:
            shape = tuple(int(d) for d in np.broadcast_shapes(*(t.shape for t in ts)))
        except ValueError:
            shapes = ", ".join(f"{t.name}{t.shape}" for t in ts)
            raise ValueError(f"{fn}: inputs do not broadcast together: {shapes}") from None
        if isinstance(flops_per_element, (bool, np.bool_)) or not isinstance(
            flops_per_element, numbers.Real
        ):
            raise TypeError(f"{fn}: flops_per_element must be a number, got "
                            f"{flops_per_element!r}")
        if not math.isfinite(flops_per_element) or flops_per_element < 0:
            raise ValueError(f"{fn}: flops_per_element must be finite and >= 0, got "
                             f"{flops_per_element!r}")
        _check_name(fn, "op", op)
        odt = ts[0].dtype if dtype is None else dtype_label(parse_dtype(fn, dtype))
        self.tensors[out] = Tensor(out, shape, odt)
        self.ops[out] = Op(out, "elementwise", tuple(inputs),
                           {"op": op, "flops_per_element": float(flops_per_element)})
        return out

    # ---------------------------------------------------------------- structure

    def consumers(self, tensor: str) -> list[str]:
        """Ops that read ``tensor`` (from an index rebuilt when ops were added: linear time
        over a whole graph)."""
        if self._readers_of != len(self.ops):
            index: dict[str, list[str]] = {}
            for o in self.ops.values():
                for t in dict.fromkeys(o.inputs):
                    index.setdefault(t, []).append(o.name)
            self._readers, self._readers_of = index, len(self.ops)
        return list(self._readers.get(tensor, ()))

    def outputs(self) -> list[str]:
        """Tensors produced by an op and read by none: the graph's results."""
        return [name for name in self.ops if not self.consumers(name)]

    def _io(self, members: Sequence[str]) -> tuple[list[str], list[str]]:
        """External tensors a kernel of ``members`` reads and writes."""
        inside = set(members)
        reads: dict[str, None] = {}  # ordered set
        for name in members:
            for t in self.ops[name].inputs:
                if t not in inside:
                    reads.setdefault(t)
        writes = [
            name for name in members
            if not self.consumers(name) or any(c not in inside for c in self.consumers(name))
        ]
        return list(reads), writes

    def _bytes(self, names: Iterable[str]) -> float:
        return float(sum(self.tensors[n].nbytes for n in names))

    # ---------------------------------------------------------------- estimation

    def estimate(
        self,
        groups: Iterable[Iterable[str]] | None = (),
        hardware: Any = None,
        *,
        efficiency: EfficiencyLike = "default",
        name: str | None = None,
    ) -> Plan:
        """Estimate the graph as a sequence of kernels.

        Parameters
        ----------
        groups : iterable of iterables of op names, or None
            Fusion groups: each becomes one kernel. Ops in no group run as their own kernel.
            ``None`` or ``()`` estimates the graph unfused.
        hardware : Hardware or str, optional
            Accelerator (default: detected / ``rl.set_default_hardware``).
        efficiency : {"default", "peak", "torchao", ...} or Efficiency
            Efficiency model, the same for every kernel.
        name : str, optional
            Name of the plan (default: "unfused" without groups, else "fused").

        Returns
        -------
        Plan
            Per-kernel estimates (in graph order) and their sum.

        Raises
        ------
        TypeError
            ``groups`` is not a list of lists of op names (a group or a name of another type).
        KeyError
            An unknown op name in ``groups`` (``rl.UnknownNameError``, also a ValueError).
        ValueError
            An op in two groups or twice in one, an empty group, or a group whose pattern
            cannot be fused.

        Notes
        -----
        Every time comes from the package's op functions under one hardware and efficiency:

        - a single GEMM: ``rl.gemm(m, k, n, batch=..., out_dtype=...)``;
        - a single elementwise op: ``rl.elementwise`` over its output with one read per
          input of the output's size (a broadcast input such as a bias is counted at its own
          size, as a byte stream);
        - a group of elementwise ops: one ``rl.elementwise`` kernel over the group's
          external reads and writes, FLOPs summed;
        - one GEMM with elementwise prologue / epilogue ops: ``rl.gemm`` with the group's
          output format, plus the DRAM time (the memory term of ``rl.elementwise``) of any
          extra tensors the epilogue reads (bias, residual); epilogue arithmetic is counted
          in FLOPs but assumed hidden under the GEMM;
        - GEMM -> (elementwise) -> GEMM where the first result only feeds the second (scores
          then values): one flash-attention kernel, ``rl.attention(flash=True)``, which
          keeps the intermediate matrix on chip.

        Other groups raise ``ValueError``. Intermediates inside a group never touch DRAM;
        each external input is read once per kernel.
        """
        fn = f"{_FN}.estimate"
        from .._params.resolve import resolve

        hw, _, _ = resolve(hardware, efficiency)  # validate once, with the caller's names
        if groups is None:
            groups = ()
        if isinstance(groups, (str, bytes)) or not isinstance(groups, Iterable):
            raise TypeError(f"{fn}: groups must be a list of lists of op names, got {groups!r}")
        owner: dict[str, int] = {}
        glist: list[list[str]] = []
        for gi, group in enumerate(groups):
            if isinstance(group, (str, bytes)) or not isinstance(group, Iterable):
                raise TypeError(
                    f"{fn}: groups[{gi}] must be a list of op names, got {group!r}"
                )
            members = list(group)
            if not members:
                raise ValueError(f"{fn}: group {gi} is empty")
            for op in members:
                if not isinstance(op, str):
                    raise TypeError(
                        f"{fn}: groups[{gi}] must hold op names (strings), got {op!r}"
                    )
                if op not in self.ops:
                    import difflib

                    close = difflib.get_close_matches(str(op), list(self.ops), n=3)
                    hint = f"; did you mean {', '.join(repr(c) for c in close)}?" if close else ""
                    from .._errors import UnknownNameError

                    raise UnknownNameError(f"{fn}: unknown op {op!r} in groups{hint}", close)
                if owner.get(op) == gi:
                    raise ValueError(f"{fn}: op {op!r} appears twice in group {gi}")
                if op in owner:
                    raise ValueError(f"{fn}: op {op!r} is in two groups ({owner[op]} and {gi})")
                owner[op] = gi
            glist.append(members)
        kernels: list[Kernel] = []
        done: set[int] = set()
        for op in self.ops:  # graph order; a group runs where its first op is
            if op in owner:
                gi = owner[op]
                if gi in done:
                    continue
                done.add(gi)
                members = [o for o in self.ops if owner.get(o) == gi]
                kernels.append(self._kernel(members, hw, efficiency))
            else:
                kernels.append(self._kernel([op], hw, efficiency))
        label = name if name is not None else ("fused" if glist else "unfused")
        return Plan(label, tuple(kernels), hw.name, _eff_name(efficiency))

    def _kernel(self, members: list[str], hw: Any, efficiency: EfficiencyLike) -> Kernel:
        reads, writes = self._io(members)
        io_bytes = self._bytes(reads) + self._bytes(writes)
        kinds = [self.ops[o].kind for o in members]
        gemms = [o for o in members if self.ops[o].kind == "gemm"]
        ew_flops = sum(
            self.ops[o].params["flops_per_element"] * self.tensors[o].numel
            for o in members if self.ops[o].kind == "elementwise"
        )
        name = " + ".join(members)
        if not gemms:
            e = self._stream(reads, writes, ew_flops, hw, efficiency)
            return Kernel(name, tuple(members), e, 1)
        if len(gemms) == 1:
            p = self.ops[gemms[0]].params
            out_dt = p["out_dtype"]
            if gemms[0] not in writes:  # the epilogue decides the format written
                same = [w for w in writes if self.tensors[w].shape == self.tensors[gemms[0]].shape]
                out_dt = self.tensors[same[0]].dtype if same else out_dt
            base = gemm_estimate(p["m"], p["k"], p["n"], dtype=p["dtype"], hardware=hw,
                             batch=p["batch"], out_dtype=out_dt, efficiency=efficiency)
            if len(members) == 1:
                return Kernel(name, tuple(members), base, 1)
            extra = io_bytes - float(base.bytes)
            if extra <= 0:  # the epilogue reads nothing more than the GEMM's own operands
                e = _with(base, flops=float(base.flops) + ew_flops, bytes_=io_bytes, label=name)
                return Kernel(name, tuple(members), e, 1)
            stream = elementwise_estimate(int(math.ceil(extra)), reads=1, writes=0, dtype="int8",
                                      hardware=hw, efficiency=efficiency)
            x = float(stream.memory_s)
            e = Estimate(
                time_s=float(base.time_s) + x,
                compute_s=float(base.compute_s),
                memory_s=float(base.memory_s) + x,
                overhead_s=float(base.time_s) + x - max(float(base.compute_s),
                                                        float(base.memory_s) + x),
                flops=float(base.flops) + ew_flops,
                bytes=io_bytes,
                label=name,
                hardware=base.hardware,
            )
            return Kernel(name, tuple(members), e, 1)
        if len(gemms) == 2 and kinds.count("gemm") == 2:
            att = self._attention_shape(members, gemms, reads, writes)
            if att is not None:
                e = attention(**att, flash=True, hardware=hw, efficiency=efficiency)
                return Kernel(name, tuple(members), e, 1)
        raise ValueError(
            f"{_FN}.estimate: cannot fuse group {members!r}: supported groups are elementwise "
            "ops, one GEMM with elementwise prologue/epilogue, or GEMM -> elementwise -> GEMM "
            "(flash-attention style, the intermediate read only inside the group)"
        )

    def _stream(self, reads: list[str], writes: list[str], flops: float, hw: Any,
                efficiency: EfficiencyLike) -> Estimate[Any]:
        ext = [self.tensors[t] for t in reads + writes]
        numel = ext[-1].numel
        if all(t.numel == numel and t.dtype == ext[0].dtype for t in ext):
            return elementwise_estimate(numel, reads=len(reads), writes=len(writes),
                                    flops_per_element=flops / numel, dtype=ext[0].dtype,
                                    hardware=hw, efficiency=efficiency)
        # mixed sizes or formats: one byte stream of the same total traffic
        total = int(math.ceil(self._bytes(reads) + self._bytes(writes)))
        return elementwise_estimate(total, reads=1, writes=0, flops_per_element=flops / total,
                                dtype="int8", hardware=hw, efficiency=efficiency)

    def _attention_shape(self, members: list[str], gemms: list[str], reads: list[str],
                         writes: list[str]) -> dict[str, Any] | None:
        first, second = gemms
        if first in writes:
            return None
        # follow the first GEMM's result through elementwise ops to the second GEMM
        cur = first
        inside = set(members)
        while True:
            cons = [c for c in self.consumers(cur) if c in inside]
            if len(cons) != 1 or cur in writes:
                return None
            if cons[0] == second:
                break
            if self.ops[cons[0]].kind != "elementwise":
                return None
            cur = cons[0]
        p1, p2 = self.ops[first].params, self.ops[second].params
        if p1["batch"] != p2["batch"] or len(members) != 2 + len(
            [o for o in members if self.ops[o].kind == "elementwise"]
        ):
            return None
        a2, b2 = self.ops[second].inputs
        if cur == a2:  # S @ V: contraction over the scores' columns
            q_len, kv_len, dv = p1["m"], p1["n"], p2["n"]
        elif cur == b2:  # V^T @ S: contraction over the scores' rows
            q_len, kv_len, dv = p1["n"], p1["m"], p2["m"]
        else:
            return None
        return {"batch": p1["batch"], "heads": 1, "q_len": q_len, "kv_len": kv_len,
                "head_dim": p1["k"], "v_head_dim": dv, "dtype": p1["dtype"]}


def _with(e: Estimate[Any], *, flops: float, bytes_: float, label: str) -> Estimate[Any]:
    return Estimate(time_s=e.time_s, compute_s=e.compute_s, memory_s=e.memory_s,
                    overhead_s=e.overhead_s, flops=flops, bytes=bytes_, label=label,
                    hardware=e.hardware)


def _eff_name(efficiency: EfficiencyLike) -> str:
    if isinstance(efficiency, str):
        from ..efficiency import default_efficiency

        key = efficiency.strip().lower()
        if key == "default":
            d = default_efficiency()
            return d if isinstance(d, str) else "custom"
        return key
    return "custom"
