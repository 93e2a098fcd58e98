"""Estimate a PyTorch module's step by running it on meta tensors under a dispatch mode."""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Callable, Mapping
from contextlib import nullcontext
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from .._checks import one_of
from .._errors import table_renamed
from .._format import si
from ..estimate import Estimate
from ..hardware import HardwareLike
from ..hardware import hardware as lookup_hardware
from ..ops.host import LAUNCH_MODES, StepWall, WallTime, wall_time
from ..ops.registry import price
from . import _dedupe, _host, _inductor, _ops, _optimizer
from ._fusions import Fusions, patched_sdpa
from ._inputs import _check_mode, _meta, _to_meta, _torch_dtype, _training_flags
from ._tracker import Tracker

MODES = ("train", "inference")

#: Columns of :meth:`TorchEstimate.table`.
COLUMNS = ("module", "op", "kind", "phase", "modeled", "shapes", "dtype", "time_s",
           "compute_s", "memory_s", "overhead_s", "flops", "bytes")


@dataclasses.dataclass(frozen=True)
class OpRecord:
    """One kernel the module launches: where it ran, what it is, and its estimate."""

    module: str
    op: str
    kind: str
    phase: str
    modeled: bool
    shapes: str
    dtype: str
    estimate: Estimate[Any]
    #: host calls by class (:data:`._host.CLASSES`) from the previous kernel's launch to this one's
    host: tuple[float, ...] = ()


@dataclasses.dataclass(frozen=True, eq=False)
class TorchEstimate(StepWall):
    """The estimated step of a PyTorch module: every kernel, totals, tables.

    Attributes
    ----------
    records : list of OpRecord
        One per kernel, in launch order (forward, then backward in ``mode="train"``).
    hardware, mode : str
        The accelerator and ``"train"`` / ``"inference"``.
    launch : str
        How the kernels are launched: ``"eager"``, ``"compiled"`` or ``"graph"``
        (see :func:`roofline.wall_time`).
    wall : roofline.WallTime or None
        Wall time of the step with its host launch overhead (None when no kernel runs).

    Notes
    -----
    ``time_s`` is the sum of the kernels' times (one stream, no overlap, the optimizer update
    only when ``optimizer=`` was given, no host overhead beyond each kernel's latency floor):
    GPU time. ``wall_s`` adds the host's
    launch overhead (:func:`roofline.wall_time` of the kernels in launch order) and
    ``launch_bound`` says when launching, not the kernels, is most of it. Ops the package
    does not model are estimated from the bytes of their tensors (a streaming kernel) and listed in
    :attr:`unmodeled`.
    """

    records: list[OpRecord]
    hardware: str
    mode: str
    launch: str = "eager"
    wall: WallTime | None = None

    @property
    def estimate(self) -> Estimate[Any]:
        """All kernels summed into one :class:`roofline.Estimate`."""
        total: Estimate[Any] = sum((r.estimate for r in self.records), start=_zero(self.hardware))
        return dataclasses.replace(total, label=f"{self.mode} step ({len(self.records)} kernels)")

    @property
    def time_s(self) -> float:
        """Predicted step time in seconds."""
        return float(sum(float(r.estimate.time_s) for r in self.records))

    @property
    def flops(self) -> float:
        """FLOPs of the step."""
        return float(sum(float(r.estimate.flops) for r in self.records))

    @property
    def bytes(self) -> float:
        """DRAM bytes of the step (link bytes for collectives)."""
        return float(sum(float(r.estimate.bytes) for r in self.records))

    @property
    def unmodeled(self) -> list[str]:
        """Names of the aten ops estimated from their tensors' bytes only (sorted)."""
        return sorted({r.op for r in self.records if not r.modeled})

    def table(self) -> Any:
        """Deprecated name of :meth:`to_pandas`."""
        table_renamed(self)
        return self.to_pandas()

    def to_pandas(self) -> Any:
        """One row per kernel (pandas DataFrame with :data:`COLUMNS`)."""
        import pandas as pd

        rows = []
        for r in self.records:
            e = r.estimate
            rows.append({
                "module": r.module, "op": r.op, "kind": r.kind, "phase": r.phase,
                "modeled": r.modeled, "shapes": r.shapes, "dtype": r.dtype,
                "time_s": float(e.time_s), "compute_s": float(e.compute_s),
                "memory_s": float(e.memory_s), "overhead_s": float(e.overhead_s),
                "flops": float(e.flops), "bytes": float(e.bytes),
            })
        return pd.DataFrame(rows, columns=list(COLUMNS))

    def _grouped(self, key: str) -> Any:
        t = self.to_pandas()
        g = t.groupby(key, sort=False).agg(
            time_s=("time_s", "sum"), flops=("flops", "sum"), bytes=("bytes", "sum"),
            kernels=("time_s", "size"))
        g["fraction"] = g["time_s"] / max(self.time_s, 1e-300)
        return g.sort_values("time_s", ascending=False)

    def by_module(self, depth: int | None = None) -> Any:
        """Time, FLOPs, bytes and kernel count per module (pandas, slowest first).

        Parameters
        ----------
        depth : int, optional
            Truncate module paths to this many components (``1``: the root's children).
        """
        if depth is None:
            return self._grouped("module")
        if isinstance(depth, bool) or not isinstance(depth, int) or depth < 0:
            raise ValueError(f"by_module: depth must be a non-negative integer, got {depth!r}")
        t = self.to_pandas()
        t["module"] = t["module"].map(lambda s: ".".join(s.split(".")[: depth + 1]))
        g = t.groupby("module", sort=False).agg(
            time_s=("time_s", "sum"), flops=("flops", "sum"), bytes=("bytes", "sum"),
            kernels=("time_s", "size"))
        g["fraction"] = g["time_s"] / max(self.time_s, 1e-300)
        return g.sort_values("time_s", ascending=False)

    def by_op(self) -> Any:
        """Time, FLOPs, bytes and kernel count per aten op (pandas, slowest first)."""
        return self._grouped("op")

    def by_kind(self) -> Any:
        """The same per kind (gemm, attention, norm, elementwise, memory, unmodeled, ...)."""
        return self._grouped("kind")

    def top_ops(self, n: int = 10) -> Any:
        """The ``n`` slowest kernels (pandas rows of :meth:`to_pandas`)."""
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise ValueError(f"top_ops: n must be a positive integer, got {n!r}")
        return self.to_pandas().sort_values("time_s", ascending=False).head(n)

    def _repr_html_(self) -> str:
        from .._html import result_html

        return result_html(f"{self.mode} step on {self.hardware}", [
            ("time (GPU)", si(self.time_s, "s")),
            ("wall time", f"{si(self.wall_s, 's')} ({self.launch}"
                          f"{', launch-bound' if self.launch_bound else ''})"),
            ("kernels", len(self.records)),
            ("work", si(self.flops, "FLOP")),
            ("DRAM traffic", si(self.bytes, "B")),
            ("unmodeled op names", len(self.unmodeled)),
        ], self.by_op().reset_index())

    def __repr__(self) -> str:
        return (
            f"TorchEstimate({self.mode} step on {self.hardware}: {si(self.time_s, 's')}, "
            f"wall {si(self.wall_s, 's')} {self.launch}"
            f"{' (launch-bound)' if self.launch_bound else ''}, "
            f"{len(self.records)} kernels, {si(self.flops, 'FLOP')}, {si(self.bytes, 'B')}, "
            f"{len(self.unmodeled)} unmodeled op names)"
        )


def _zero(hw: str) -> Estimate[Any]:
    return Estimate(0.0, 0.0, 0.0, 0.0, 0.0, 0.0, hardware=hw)


_shapes = _ops.shapes


class _Recorder(TorchDispatchMode):  # type: ignore[no-untyped-call]
    """Runs each aten op (on meta tensors) and records the kernels it stands for."""

    def __init__(self, ctx: _ops.Context, tracker: Tracker, root: str) -> None:
        super().__init__()  # type: ignore[no-untyped-call]
        self.ctx = ctx
        self.tracker = tracker
        self.root = root
        self.phase = "forward"
        self.records: list[OpRecord] = []
        #: host calls since the last record (see _host); aten ops dispatched; counting on/off
        self.pending: tuple[float, ...] = _host.NONE
        self.dispatched = 0
        self.counting = True
        #: called once before the next record (the dedupe's snapshot of the tracker)
        self.before_record: Callable[[], None] | None = None
        self.fusion: _inductor.FusionLog | None = None  # launch="compiled": what ops touched

    def module(self) -> str:
        names = [p for p in self.tracker.parents if p != "Global"]
        if not names:
            return self.root
        entered = self.tracker.entered
        return max(names, key=lambda s: (s.count("."), len(s), entered.get(s, -1)))

    def record(self, op: str, kind: str, estimate: Estimate[Any], modeled: bool, shapes: str,
               dtype: str) -> None:
        if self.before_record is not None:
            self.before_record()
        host = _host.add(self.pending, "backward") if self.phase == "backward" else self.pending
        self.pending = _host.NONE
        self.records.append(OpRecord(self.module(), op, kind, self.phase, modeled, shapes,
                                     dtype, estimate, host))

    def charge(self, start: int, dispatched: int) -> None:
        """Count one top-level forward torch call that began with ``start`` records and
        ``dispatched`` aten ops: on its first kernel, or pending when it launched none."""
        if not self.counting or self.phase != "forward":
            return
        cls = _host.classify([r.kind for r in self.records[start:]],
                             self.dispatched > dispatched)
        if cls is None:
            return
        if len(self.records) > start:
            self.records[start] = dataclasses.replace(
                self.records[start], host=_host.add(self.records[start].host, cls))
        else:
            self.pending = _host.add(self.pending, cls)

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (),
                           kwargs: Any = None) -> Any:
        kwargs = kwargs or {}
        self.dispatched += 1
        out = func(*args, **kwargs)
        if self.phase == "optimizer" and not any(
                t.device.type == "meta" for t in _ops.tensors((args, kwargs))):
            return out  # CPU work (an optimizer's step counts): no kernel
        name, launched, shapes, dt = _ops.kernels(self.ctx, func, args, kwargs, out)
        first = len(self.records)
        for kind, e, modeled in launched:
            self.record(name, kind, e, modeled, shapes, dt)
        if self.fusion is not None:
            self.fusion.op(name, first, len(self.records) - first, args, kwargs, out)
        return out


def run(
    fn: str,
    module: Any,
    example_inputs: Any,
    *,
    hardware: HardwareLike,
    mode: str,
    dtype: Any,
    efficiency: Any,
    kwargs: Mapping[str, Any] | None,
    fused_attention: bool,
    ranks: int | None,
    hooks: Callable[[torch.nn.Module], list[Any]] | None = None,
    launch: str = "eager",
    dedupe: bool = True,
    optimizer: Any = None,
) -> TorchEstimate:
    """Shared driver of :func:`estimate` and :func:`float8_speedup`."""
    launch = one_of(fn, "launch", launch, {m: m for m in LAUNCH_MODES})
    if not isinstance(module, torch.nn.Module):
        raise TypeError(f"{fn}: module must be a torch.nn.Module, got {type(module).__name__}")
    md = _check_mode(fn, mode)
    tdt = _torch_dtype(fn, dtype)
    if kwargs is not None and not isinstance(kwargs, Mapping):
        raise TypeError(f"{fn}: kwargs must be a mapping, got {type(kwargs).__name__}")
    if isinstance(example_inputs, (torch.Tensor, Mapping)) or not isinstance(
        example_inputs, (tuple, list)
    ):
        example_inputs = (example_inputs,)
    hw = lookup_hardware(hardware)
    if ranks is not None and (isinstance(ranks, bool) or not isinstance(ranks, int)
                              or ranks < 1):
        raise ValueError(f"{fn}: ranks must be a positive integer, got {ranks!r}")
    train = md == "train"
    # a training step's GEMMs and attention run at the settled clock (roofline.ops.sustained)
    ctx = _ops.Context(hw, efficiency, ranks, sustained=train)
    if not isinstance(dedupe, bool):
        raise TypeError(f"{fn}: dedupe must be True or False, got {dedupe!r}")
    _check_optimizer(fn, optimizer, train)
    handles = hooks(module) if hooks is not None else []
    try:
        # hooks (float8_speedup's) must see every call: no replay then
        traced = _trace(module, ctx, example_inputs, kwargs, tdt, train, fused_attention,
                        dedupe and hooks is None and launch != "compiled", launch == "compiled")
        if traced is None:  # a replayed layer was not provably identical: trace in full
            traced = _trace(module, ctx, example_inputs, kwargs, tdt, train, fused_attention,
                            False)
    finally:
        for h in handles:
            h.remove()
    assert traced is not None
    records, tail = traced
    if optimizer is not None:
        records = records + _optimizer_records(fn, module, optimizer, ctx, tdt)
    return TorchEstimate(records, hw.name, md, launch,
                         _wall(records, tail, launch, hw, efficiency))


def _check_optimizer(fn: str, optimizer: Any, train: bool) -> None:
    """``optimizer`` is None, a name of :data:`._optimizer.NAMES` or a callable, in training."""
    if optimizer is None:
        return
    if not train:
        raise ValueError(f"{fn}: optimizer applies to mode='train' only, got "
                         f"optimizer={optimizer!r} with an inference step")
    if isinstance(optimizer, str):
        one_of(fn, "optimizer", optimizer, {n: n for n in _optimizer.NAMES})
    elif not callable(optimizer):
        raise TypeError(f"{fn}: optimizer must be a name ({', '.join(_optimizer.NAMES)}) or a "
                        f"callable building a torch.optim.Optimizer, got "
                        f"{type(optimizer).__name__}")


def _optimizer_records(fn: str, module: torch.nn.Module, optimizer: Any, ctx: _ops.Context,
                       tdt: torch.dtype | None) -> list[OpRecord]:
    """The kernels of one optimizer update over the module's trainable parameters (phase
    ``"optimizer"``; see :mod:`._optimizer`)."""
    if isinstance(optimizer, str):
        optimizer = optimizer.strip().lower()
    unique = {id(p): p for p in module.parameters()}
    params = _optimizer.trainable([_meta(p, tdt, p.requires_grad) for p in unique.values()])
    rec = _Recorder(ctx, Tracker(), "optimizer")
    rec.phase = "optimizer"
    if not params:
        return []
    opt = _optimizer.make_optimizer(fn, optimizer, params)
    if opt is None:  # a fused optimizer: its one call
        call = _optimizer.fused_call(optimizer, params)
        found, _ = price(call, ctx)
        for kind, e in found or []:
            rec.record(call.name.split("::")[-1], kind, e, True, f"{len(params)} tensors",
                       _ops.dtype_name(params[0].dtype) or "")
        return rec.records
    opt.step()  # the first step creates the state (zeroed moments): not part of a step
    with rec:
        opt.step()
    return rec.records


def _trace(module: torch.nn.Module, ctx: _ops.Context, example_inputs: Any,
           kwargs: Mapping[str, Any] | None, tdt: torch.dtype | None, train: bool,
           fused_attention: bool, dedupe: bool, compiled: bool = False
           ) -> tuple[list[OpRecord], tuple[float, ...]] | None:
    """Run the module (and its backward) on fresh meta tensors and return its kernels in
    launch order and the host calls after the last one; None when ``dedupe`` replayed a layer
    that turned out not provably identical."""
    # One meta tensor per parameter / buffer object: a module reused (or a weight tied) under
    # several names gets the same tensor under each, as functional_call requires of tied keys.
    metas: dict[int, torch.Tensor] = {}
    params = {n: metas.setdefault(id(p), _meta(p, tdt, train and p.requires_grad))
              for n, p in module.named_parameters(remove_duplicate=False)}
    buffers = {n: metas.setdefault(id(b), _meta(b, tdt, False))
               for n, b in module.named_buffers(remove_duplicate=False)}
    args = _to_meta(tuple(example_inputs), tdt)
    kw = _to_meta(dict(kwargs or {}), tdt)
    tracker = Tracker()
    rec = _Recorder(ctx, tracker, type(module).__name__)
    rec.fusion = _inductor.FusionLog() if compiled else None

    def module_call() -> None:
        if rec.counting and rec.phase == "forward":
            rec.pending = _host.add(rec.pending, "module")

    tracker.on_call = module_call
    dd = _dedupe.Deduper(module, rec, tracker) if dedupe else None
    with _training_flags(module, train), torch.set_grad_enabled(train), tracker, rec, \
            Fusions(rec, fused_attention), patched_sdpa(rec, fused_attention), \
            (dd.patched() if dd is not None else nullcontext()), \
            (_inductor.compiling() if compiled else nullcontext()):
        out = torch.func.functional_call(module, {**params, **buffers}, args, kw,
                                         strict=False)
        if train:
            outs = [t for t in _ops.tensors(out) if t.requires_grad]
            # a module returning its loss (a 0-dim tensor: HF's ``loss`` beside ``logits``)
            # is trained by ``loss.backward()``: the other outputs get no gradient of their
            # own (which autograd would add to the loss's, one more kernel per output)
            losses = [t for t in outs if t.dim() == 0]
            outs = losses or outs
            if outs:
                rec.phase = "backward"
                torch.autograd.backward(outs, [torch.empty_like(t) for t in outs])
    if rec.fusion is not None:  # launch="compiled": Inductor's kernels
        rec.fusion.escaping(out, kw)
        return _inductor.fuse(rec.records, rec.fusion, ctx), rec.pending
    if dd is None:
        return rec.records, rec.pending
    records: list[OpRecord] | None = dd.records(rec.records)
    return None if records is None else (records, rec.pending)


def _wall(records: list[OpRecord], tail: tuple[float, ...], launch: str, hw: Any,
          efficiency: Any) -> WallTime | None:
    """Wall time of the recorded kernels in launch order: eager, per step of a loop with the
    host calls counted before each kernel (:func:`._host.program_wall`); compiled (one region
    per phase) and graph from the kernels alone (:func:`roofline.wall_time`)."""
    if not records:
        return None
    if launch == "eager":
        return _host.program_wall(records, tail, hw, efficiency)
    times = [float(r.estimate.time_s) for r in records]
    regions = len({r.phase for r in records}) if launch == "compiled" else 1
    return wall_time(times, launch, hw, efficiency=efficiency, regions=regions)


def estimate(
    module: Any,
    example_inputs: Any,
    hardware: HardwareLike = None,
    mode: str = "train",
    *,
    dtype: Any = None,
    kwargs: Mapping[str, Any] | None = None,
    efficiency: Any = "default",
    fused_attention: bool = True,
    ranks: int | None = None,
    launch: str = "eager",
    dedupe: bool = True,
    optimizer: Any = None,
) -> TorchEstimate:
    """Estimate one step of a PyTorch module on an accelerator, without running it.

    Parameters
    ----------
    module : torch.nn.Module
        The model, on any device (CPU, meta, ...). It is not modified and its parameters
        are not read: it runs on meta tensors of the same shapes.
    example_inputs : Tensor or tuple
        Positional inputs (tensors of the real shapes; meta tensors are fine and cost
        nothing).
    hardware : Hardware or str, optional
        Accelerator (default: detected / ``rl.set_default_hardware``).
    mode : {"train", "inference"}
        ``"train"``: forward plus backward (modules in training mode: dropout included): of
        the loss when the module returns one (its outputs of no dimension that require grad,
        like HF's ``loss`` when ``labels`` are passed), else of every output that requires
        grad. ``"inference"``: forward under ``no_grad``, modules
        in eval mode.
    dtype : torch.dtype or {"bf16", "fp16", "fp32"}, optional
        Run floating-point parameters and inputs in this dtype (e.g. a model built in fp32
        on the CPU but trained in bf16). Default: their own dtypes.
    kwargs : mapping, optional
        Keyword inputs of ``module.forward``.
    efficiency : str or Efficiency
        Efficiency model of every op.
    fused_attention : bool
        ``F.scaled_dot_product_attention`` is one fused (flash) kernel, as on a GPU; False
        traces the materialized math path instead.
    ranks : int, optional
        Group size of collectives whose group cannot be resolved.
    launch : {"eager", "compiled", "graph"}
        Eager PyTorch (default), a CUDA graph, or ``torch.compile`` (forward and backward one
        region each; the memory-bound ops fused into Triton kernels as Inductor does, every
        layer traced: see ``roofline.torch._inductor``; ``time_s`` changes too).
    dedupe : bool
        Trace only the first of identical sibling layers (children of a ``ModuleList`` /
        ``Sequential`` with the same classes, attributes, parameter metadata and input
        metadata, and no hooks) and replay its kernels under the others' names. The result
        is the same as tracing every layer (checked after the run; when a check fails the
        module is traced in full); False always traces every layer.
    optimizer : str or callable, optional
        ``mode="train"`` only: add the optimizer update to the step, as ``torch.optim`` launches
        it: ``"adamw_foreach"`` (``torch.optim.AdamW()`` on CUDA: eight ``_foreach_*``
        passes), ``"adam_foreach"``, ``"sgd_foreach"`` (momentum), ``"adamw_fused"`` /
        ``"adam_fused"`` (``fused=True``: one pass), or a callable that builds any optimizer
        from the parameter list (``lambda ps: torch.optim.AdamW(ps, foreach=True)``), whose
        ``step()`` runs on meta tensors. Every trainable parameter gets a gradient; the
        kernels are priced by the same registry entries as a profiler trace of the step
        (``multi_tensor_apply`` launches of at most 320 chunks of 65536 elements), in phase
        ``"optimizer"``. Default: no optimizer (forward and backward only).

    Returns
    -------
    TorchEstimate
        ``time_s`` (GPU), ``wall_s`` and ``launch_bound`` (host launch overhead),
        ``flops``, ``bytes``, ``table()``, ``by_module()``, ``by_op()``, ``top_ops()``,
        ``unmodeled``.

    Notes
    -----
    The module runs through ``torch.func.functional_call`` with meta parameters under a
    ``TorchDispatchMode`` that maps each aten op to this package's models: ``mm`` / ``addmm``
    / ``bmm`` / ``baddbmm`` / ``_scaled_mm`` to :func:`roofline.gemm`, convolutions to
    implicit GEMMs (M = batch·output pixels, K = C_in/groups·kernel, N = C_out/groups),
    scaled-dot-product / flash / efficient attention (and their backward) to
    :func:`roofline.attention`, layer / RMS norm and softmax to the norm models (or a
    streaming kernel), pointwise ops, reductions, copies, embeddings and collectives to
    streaming kernels over their tensors' bytes. Views and allocations cost nothing. Any
    other op is estimated from the bytes of its tensors and named in ``unmodeled``. Kernels
    run one after another; unfused elementwise ops are counted separately, as eager
    PyTorch runs them (``launch="compiled"`` fuses them as Inductor does).
    """
    rep = run("estimate", module, example_inputs, hardware=hardware, mode=mode, dtype=dtype,
              efficiency=efficiency, kwargs=kwargs, fused_attention=fused_attention,
              ranks=ranks, launch=launch, dedupe=dedupe, optimizer=optimizer)
    if rep.unmodeled:
        names = rep.unmodeled
        shown = ", ".join(names[:12]) + (f", ... ({len(names)} in all)" if len(names) > 12
                                          else "")
        warnings.warn(
            f"roofline.torch.estimate: {len(names)} op name(s) have no model and were "
            f"estimated from their tensors' bytes: {shown} (see .unmodeled)",
            UnmodeledOpsWarning, stacklevel=2,
        )
    return rep


class UnmodeledOpsWarning(UserWarning):
    """``roofline.torch.estimate`` met ops it has no model for (one warning per call)."""
