"""Pricing of a step's program: each row's time, FLOPs and bytes from the op functions (GEMMs,
float8 linears, elementwise kernels, attention, grouped GEMMs, collectives), and the wall time
of launching its kernels."""

from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np

from .. import _core
from .._errors import ArgumentValueError
from .._params.memo import Memo, pricing_token
from .._params.resolve import resolve
from ..efficiency import EfficiencyLike
from ..float8.layer import linear as float8_linear
from ..float8.recipes import core_recipe
from ..hardware import Hardware
from ..ops.attention import attention
from ..ops.attention_columns import attention_columns
from ..ops.collectives import (
    DEFAULT_LATENCY_S,
    all_gather,
    all_reduce,
    all_to_all,
    collective_columns,
    reduce_scatter,
    send_recv,
)
from ..ops.elementwise import elementwise, elementwise_columns
from ..ops.gemm import gemm, gemm_columns
from ..ops.host import (
    HOST_CLASSES,
    MAX_KERNELS,
    TooManyKernelsError,
    WallTime,
    eager_program_wall,
    wall_time,
)
from ..ops.registry import Pricer, lookup, price
from ..ops.sustained import settle_columns, settled_clock
from ..ops.weight_only_gemm import weight_only_gemm, weight_only_grouped_gemm
from .config import TransformerConfig
from .deepep import DEEPEP_ROUNDS, deepep_columns, hybridep_columns
from .engines import CUSTOM_ALLREDUCE_RANKS
from .formats import recipe_dtype
from .grouped_parts import expected_part, grouped_part
from .program import Program
from .report import COLUMNS

__all__ = ["HYBRIDEP_PEER_S", "evaluate", "kernel_limit", "train_wall", "wall"]


#: Per-peer cost (seconds) of DeepEP HybridEP's exchange kernels over NVLink, which replaces
#: the all-to-all's per-step latency (the bytes keep the link rate): from HybridEP's published
#: GB200 table (deepseek-ai/DeepEP ``docs/README_Hybrid-EP.md`` @41cad94, 4096 tokens of
#: 7168, top-8 of 8 local experts per rank, 32 SMs, BF16, kernel time, 8-36 ranks) less the
#: bytes at NCCL's NVLink 5 share (721.8 GB/s), per peer: dispatch 2.9-3.1 us at 16-36 ranks
#: (4.3 at 8), combine 4.0-4.3 us at 24-36 ranks (5.2 at 16, 6.6 at 8); least squares over the
#: five rank counts: 2.9 / 4.3 us (every published time then within -4..+1 %). The handshake
#: per peer (flags written and polled across the switch) is what grows with the ranks.
HYBRIDEP_PEER_S = {"hybridep_dispatch": 2.9e-6, "hybridep_combine": 4.3e-6}
#: Priced parts of step programs (:func:`evaluate`): (part, its inputs, the hardware and
#: efficiency as resolved, the settings it reads) -> its columns. Serving runs price many
#: steps whose GEMMs, elementwise kernels and collectives are the same (a CUDA graph's padded
#: batch, a decode step at another context length): the same inputs give the same columns.
_PARTS = Memo(20_000)


#: Kernels of one float8 linear per (recipe, training): the list depends on neither shape nor
#: hardware.
_F8_KERNELS: dict[tuple[str, bool], int] = {}


def _f8_kernels(ops: Program, hw: Hardware, efficiency: EfficiencyLike) -> int:
    """Kernels one float8 linear of this step launches (casts and low-precision GEMMs; not
    the bf16 GEMMs ``float8.linear`` reports as its baseline)."""
    if not ops.f8 or ops.recipe is None:
        return 0
    key = (ops.recipe, ops.train)
    if key not in _F8_KERNELS:
        m, k, n = ops.f8[0]
        r = float8_linear(m, k, n, recipe=ops.recipe, hardware=hw,
                           mode="training" if ops.train else "inference", efficiency=efficiency)
        listed = r.kernels()  # its bf16 rows are the baseline it is compared with, not launched
        _F8_KERNELS[key] = max(1, int((listed["role"] != "bf16_gemm").sum()))
    return _F8_KERNELS[key]


_VIEW, _KERNEL, _GEMM, _ATTENTION, _MODULE, _BACKWARD = (
    HOST_CLASSES.index(c) for c in ("view", "kernel", "gemm", "attention", "module", "backward"))


def _host_class(ops: Program, kind: str, idx: int, backward: bool) -> int:
    """The host class (index into ``HOST_CLASSES``) of the torch call launching one part: a
    registry Call's class follows its entry's kind (``gemm``, ``attention``, else a kernel)."""
    if backward:
        return _BACKWARD
    if kind == "calls":
        entry = lookup(ops.calls[idx].name)
        kind = entry.kind if entry is not None else "memory"
    if kind in ("gemm", "gemms", "lowp", "f8", "grouped", "wo"):
        return _GEMM
    if kind in ("attention", "attn"):
        return _ATTENTION
    return _KERNEL


def eager_host_wall(ops: Program, row_time_s: np.ndarray, groups: list[tuple[str, list[int]]],
                    hw: Hardware, efficiency: EfficiencyLike) -> WallTime:
    """Wall time of an eager framework program (``ops.host_extra`` set): every part is one
    top-level torch call of its host class launching one kernel, and each layer (and the
    head) adds its views and module calls before its first kernel; priced by
    :func:`roofline.ops.host.eager_program_wall` as ``roofline.torch.estimate`` prices the
    real module."""
    extra = ops.host_extra or {}
    times: list[np.ndarray] = []
    counts: list[np.ndarray] = []
    row_time = np.asarray(row_time_s, dtype=np.float64)
    kernels: dict[int, tuple[list[int], list[int], list[int]]] = {}
    for i, (gi, name, _, parts) in enumerate(ops.rows):  # per kernel, by group in row order:
        if not parts:  # its row, the row's kernels, its host class
            continue
        rows, per, cls = kernels.setdefault(gi, ([], [], []))
        bwd = name.endswith(" bwd")
        for pk, idx in parts:
            rows.append(i)
            per.append(len(parts))
            cls.append(_host_class(ops, pk, idx, bwd))
    for g, (kind, layers) in enumerate(groups):
        if g not in kernels:
            continue
        rows, per, cls = kernels[g]
        c_ = np.zeros((len(rows), len(HOST_CLASSES)))
        c_[np.arange(len(rows)), cls] = 1.0
        views, modules = extra.get(g, (0.0, 0.0))
        c_[0, _VIEW] += views
        c_[0, _MODULE] += modules
        reps = len(layers) if kind != "head" else 1
        times.append(np.tile(row_time[rows] / np.asarray(per, dtype=np.float64), reps))
        counts.append(np.tile(c_, (reps, 1)))
    seq = np.concatenate(times) if times else np.zeros(1)
    cnt = np.concatenate(counts) if counts else np.zeros((1, len(HOST_CLASSES)))
    return eager_program_wall(seq, cnt, np.zeros(len(HOST_CLASSES)), hw,
                              efficiency=efficiency)


@contextmanager
def kernel_limit(fn: str, cfg: TransformerConfig) -> Iterator[None]:
    """A step whose kernel sequence exceeds :data:`~roofline.ops.host.MAX_KERNELS` is a
    ValueError naming the model's layers (the host-time model materializes the sequence)."""
    try:
        yield
    except TooManyKernelsError:
        raise ArgumentValueError(
            fn, None, f"this step launches more than {MAX_KERNELS} kernels over "
            f"{cfg.name}'s {cfg.num_layers} layers, more than the host-time model takes "
            "(it prices each launch); price fewer layers (config.replace(num_layers=...)) "
            "and scale") from None


def wall(ops: Program, row_time_s: np.ndarray, groups: list[tuple[str, list[int]]],
         hw: Hardware, efficiency: EfficiencyLike, launch: str, phase: str) -> WallTime:
    """Wall time of the step's kernels: each row's time split evenly over its kernels, rows
    of a layer kind repeated per layer (kinds in order, then the head), one compiled region
    per pass (forward; backward when training). An eager framework program
    (``ops.host_extra``) is priced call by call (:func:`eager_host_wall`)."""
    if launch == "eager" and ops.host_extra is not None:
        return eager_host_wall(ops, row_time_s, groups, hw, efficiency)
    f8 = _f8_kernels(ops, hw, efficiency)
    per_row = np.array([sum(f8 if kind == "f8" else 1 for kind, _ in parts)
                        for _, _, _, parts in ops.rows], dtype=np.int64)
    times: list[np.ndarray] = []
    for g, (kind, layers) in enumerate(groups):
        idx = [i for i, row in enumerate(ops.rows) if row[0] == g]
        counts = per_row[idx]
        one = np.repeat(row_time_s[idx] / np.maximum(counts, 1), counts)
        times.append(np.tile(one, len(layers) if kind != "head" else 1))
    seq = np.concatenate(times) if times else np.zeros(1)
    if seq.size == 0:
        seq = np.zeros(1)
    regions = min(2 if phase == "train" else 1, seq.size) if launch == "compiled" else 1
    return wall_time(seq, launch, hw, efficiency=efficiency, regions=regions)


def train_wall(ops: Program, row_time_s: np.ndarray, groups: list[tuple[str, list[int]]],
               hw: Hardware, efficiency: EfficiencyLike, launch: str, *, step_s: float,
               pp: int, grad_accum: int, recompute: str,
               op_share: np.ndarray | None = None) -> WallTime:
    """Wall time of a whole training step: ``step_s`` (GPU time) plus the launch time the GPU
    work does not hide.

    One GPU's stream per micro-batch is its stage's forward kernels (``len(layers)/pp``
    layers per kind, rounded, at least one; the head's kernels at ``1/pp`` of their time),
    then per layer in reverse the recomputed forward (``full``: the layer's forward;
    ``layer:k``: the forward of ``floor(n/k)`` of a stage's ``n`` layers; ``op`` and
    ``modules:...``: each forward kernel times its recomputed share ``op_share``;
    ``selective``: its attention) and the backward. ``m = grad_accum`` micro-batches run back
    to back with no host synchronization, so with ``W1`` and ``W2`` the :func:`wall_time`
    of one and two micro-batches (``wall = max_i(A_i + sum_{j>=i} g_j)``), ``m`` of them take
    ``Wm = W1 + (m-1)·(W2 - W1)`` (each further micro-batch costs the larger of its host
    issue time and its GPU time). The launch time left exposed is ``Wm - m·G`` (``G``: the
    stream's kernel time per micro-batch), added to the step's GPU time; the bubble,
    exposed communication and the optimizer are GPU (or network) time during which the
    host may run ahead, so this is an upper estimate of the launch overhead. Hence
    ``wall_s >= step_s`` always.
    """
    f8 = _f8_kernels(ops, hw, efficiency)
    recompute, _, k = recompute.partition(":")
    every = int(k) if recompute == "layer" else 1
    fwd: list[np.ndarray] = []
    back: list[np.ndarray] = []
    head_b: list[np.ndarray] = []
    for g, (kind, layers) in enumerate(groups):
        f_: list[np.ndarray] = []
        r_: list[np.ndarray] = []
        b_: list[np.ndarray] = []
        for i, (gi, name, rkind, parts) in enumerate(ops.rows):
            if gi != g:
                continue
            n = sum(f8 if k == "f8" else 1 for k, _ in parts)
            one = np.full(max(n, 1), row_time_s[i] / max(n, 1))
            if kind == "head":
                one = one / pp
            is_bwd = name.endswith(" bwd")
            (b_ if is_bwd else f_).append(one)
            if not is_bwd and (recompute in ("full", "layer") or (recompute == "selective"
                                                                  and rkind == "attention")):
                r_.append(one)
            elif (not is_bwd and recompute in ("op", "modules") and op_share is not None
                  and op_share[i]):
                r_.append(one * op_share[i])
        cat = [np.concatenate(x) if x else np.zeros(0) for x in (f_, r_, b_)]
        if kind == "head":
            fwd.append(cat[0])
            head_b.append(cat[2])
            continue
        per_stage = max(1, round(len(layers) / pp))
        fwd.append(np.tile(cat[0], per_stage))
        # "layer:k": floor(n/k) of the stage's n layers recompute their forward
        redo = per_stage if recompute != "layer" else int(
            _core.checkpointed_layers(per_stage, every))
        back.append(np.concatenate([np.tile(np.concatenate([cat[1], cat[2]]), redo),
                                    np.tile(cat[2], per_stage - redo)]))
    seq = np.concatenate(fwd + head_b + back[::-1])
    if seq.size == 0:
        seq = np.zeros(1)
    regions = min(2, seq.size) if launch == "compiled" else 1
    w1 = wall_time(seq, launch, hw, efficiency=efficiency, regions=regions)
    w2 = wall_time(np.concatenate([seq, seq]), launch, hw, efficiency=efficiency,
                   regions=2 * regions if launch == "compiled" else 1)
    m = grad_accum
    wall_m = w1.wall_s + (m - 1) * (w2.wall_s - w1.wall_s)
    host_m = w1.host_s + (m - 1) * (w2.host_s - w1.host_s)
    exposed = max(0.0, wall_m - m * float(np.sum(seq)))
    total = step_s + exposed
    return WallTime(total, step_s, host_m, total > 2.0 * step_s, w1.mode, m * w1.kernels,
                    w1.hardware)



def evaluate(ops: Program, hw: Hardware, efficiency: EfficiencyLike, recipe: str | None,
              comm_bw: float | None, latency_s: float, dtype: str = "bf16",
              nccl_bw: float | None = None, custom_max_bytes: float = 0.0
              ) -> dict[str, np.ndarray]:
    """Price every row of ``ops``: columns per row (time, compute, memory, overhead, flops,
    bytes). Collectives: with ``nccl_bw`` set, an all-reduce under ``custom_max_bytes`` over
    a group size in :data:`~roofline.transformer.engines.CUSTOM_ALLREDUCE_RANKS` runs the
    engine's own kernel (``algorithm="custom"``: vLLM's one- / two-stage custom all-reduce
    over ``comm_bw``) and every other all-reduce, all-gather or reduce-scatter runs NCCL
    (``algorithm="nccl"``: its tuning model's protocols at the bus bandwidth ``nccl_bw``);
    without it, all of them take the alpha-beta ring at ``comm_bw`` and ``latency_s``.
    All-to-alls always take the alpha-beta model."""
    parts: dict[str, np.ndarray] = {}  # kind -> (n_specs, 6) columns
    f8_gemm: np.ndarray | None = None  # one GEMM of each float8 linear, alone

    def stack(e: Any) -> np.ndarray:
        return np.stack([np.atleast_1d(np.asarray(getattr(e, c), dtype=np.float64))
                         for c in COLUMNS], axis=1)

    token = pricing_token(hw, efficiency)

    def memo(name: str, inputs: Any, price: Any) -> np.ndarray:
        """``price()`` (a part's columns), memoized by its inputs; a copy (_sustain edits)."""
        if token is None:
            return np.asarray(price())
        key = (name, inputs, token, dtype)
        try:
            hit = _PARTS.get(key)
        except TypeError:  # an unhashable input
            return np.asarray(price())
        if hit is None:
            hit = _PARTS.put(key, np.asarray(price()))
        return np.array(hit)

    def gemms() -> np.ndarray:
        m, k, n, b, at = (np.array(c) for c in zip(*ops.gemms, strict=True))
        cols = np.empty((len(m), len(COLUMNS)))
        for flag in (False, True):  # weight gradients (A = x^T) align on m and n, not k
            sel = at == flag
            if sel.any():
                fast = gemm_columns(m[sel], k[sel], n[sel], b[sel], dtype, hw, efficiency,
                                    flag)
                cols[sel] = fast if fast is not None else stack(gemm(
                    m[sel], k[sel], n[sel], dtype, hw, batch=b[sel], efficiency=efficiency,
                    a_transposed=flag))
        return cols

    if ops.gemms:
        parts["gemms"] = memo("gemms", tuple(ops.gemms), gemms)
    if ops.wo and ops.weight_only is not None:
        m, k, n = (np.array(c) for c in zip(*ops.wo, strict=True))
        wdt, group, zp = ops.weight_only
        # vLLM: GPTQ / compressed-tensors checkpoints take Machete on Hopper, AWQ's (zero
        # points) awq_marlin path always Marlin
        parts["wo"] = stack(weight_only_gemm(m, k, n, wdt, dtype, hw, group_size=group,
                                             zero_points=zp, efficiency=efficiency,
                                             kernel="marlin" if zp else "auto"))
    if ops.lowp and recipe is not None:
        m, k, n, b = (np.array(c) for c in zip(*ops.lowp, strict=True))
        parts["lowp"] = stack(gemm(m, k, n, recipe_dtype(recipe), hw, batch=b,
                                   efficiency=efficiency))
    if ops.f8 and recipe is not None:
        m, k, n = (np.array(c) for c in zip(*ops.f8, strict=True))
        mode = "training" if ops.train else "inference"
        r = float8_linear(m, k, n, recipe=recipe, hardware=hw, mode=mode,
                           efficiency=efficiency)
        mult = 3.0 if ops.train else 1.0
        g = gemm(m, k, n, recipe_dtype(recipe), hw, efficiency=efficiency)
        time = np.atleast_1d(np.asarray(r.fp8_s, dtype=np.float64))
        comp = mult * np.atleast_1d(np.asarray(g.compute_s))
        mem = mult * np.atleast_1d(np.asarray(g.memory_s))
        parts["f8"] = np.stack(
            [time, comp, mem, np.maximum(time - np.maximum(comp, mem), 0.0),
             mult * np.atleast_1d(np.asarray(g.flops)), mult * np.atleast_1d(np.asarray(g.bytes))],
            axis=1)
        f8_gemm = stack(g)
    if ops.quant and recipe is not None:
        rhw, chw, ceff = resolve(hw, efficiency)
        r = core_recipe(recipe, rhw)

        def quant() -> np.ndarray:
            out = np.zeros((len(ops.quant), len(COLUMNS)))
            for i, (counts, width) in enumerate(ops.quant):
                t, mem, nbytes, _ = _core.grouped_quantize_columns(
                    np.asarray(counts, dtype=np.float64), float(width), r, chw, ceff)
                out[i, COLUMNS.index("time_s")] = t
                out[i, COLUMNS.index("memory_s")] = mem
                out[i, COLUMNS.index("overhead_s")] = max(t - mem, 0.0)
                out[i, COLUMNS.index("bytes")] = nbytes
            return out

        parts["quant"] = memo("quant", (recipe, tuple(ops.quant)), quant)
    if ops.elts:
        num, rd, wr = (np.array(c) for c in zip(*ops.elts, strict=True))
        def elts() -> np.ndarray:
            fast = elementwise_columns(num, rd, wr, dtype, hw, efficiency)
            return fast if fast is not None else stack(elementwise(
                num, rd, wr, 0.0, dtype, hw, efficiency=efficiency))

        parts["elts"] = memo("elts", tuple(ops.elts), elts)
    if ops.attn:
        def attn(kw: dict[str, Any]) -> np.ndarray:
            args = {a: v for a, v in kw.items() if a != "scale"}
            fast = attention_columns(**args, hardware=hw, efficiency=efficiency)
            cols: np.ndarray = fast if fast is not None else stack(
                attention(**args, hardware=hw, efficiency=efficiency))
            scaled: np.ndarray = kw["scale"] * cols
            return scaled

        parts["attn"] = np.concatenate([attn(kw) for kw in ops.attn])
    clock = settled_clock(hw, efficiency) if ops.sustained else None
    if clock is not None:
        _sustain(parts, f8_gemm, clock, recipe)
    if ops.grouped and ops.weight_only is not None:  # fused Marlin MoE
        wdt, group, zp = ops.weight_only

        def marlin(counts: tuple[int, ...], k: float, n: float) -> np.ndarray:
            cols: np.ndarray = stack(weight_only_grouped_gemm(
                np.asarray(counts, dtype=np.int64), int(k), int(n), wdt, dtype, hw,
                group_size=group, zero_points=zp, efficiency=efficiency))
            return cols
        parts["grouped"] = np.concatenate([
            expected_part(lambda c, k=k, n=n: marlin(c, k, n), counts, alt)
            for counts, k, n, _layout, alt in ops.grouped])
    elif ops.grouped:
        gdtype = dtype if recipe is None else recipe_dtype(recipe)
        steady = None if _block_scaled(recipe) else clock
        parts["grouped"] = np.concatenate([
            expected_part(lambda c, k=k, n=n, lay=lay: grouped_part(
                c, k, n, lay, gdtype, hw, efficiency, steady, stack), counts, alt)
            for counts, k, n, lay, alt in ops.grouped])
    if ops.comms:
        fns: dict[str, Any] = {"all_reduce": all_reduce, "all_to_all": all_to_all,
                               "all_gather": all_gather, "reduce_scatter": reduce_scatter}
        # an expert group wider than a node spans nodes: its all-to-alls send the off-node
        # share through the NICs while the on-node share crosses NVLink (all_to_all's
        # ranks_per_node)
        span: dict[str, Any] = ({} if ops.ep_span is None else
                                dict(ranks_per_node=ops.ep_span[0],
                                     network_bytes_per_s=ops.ep_span[1]))

        def route(op: str, nb: float, r: Any) -> tuple[str, float | None, float]:
            """(algorithm, link, latency) of a collective: without NCCL, the alpha-beta ring;
            an engine's all-reduce under its custom kernel's max_size, that kernel where the
            group size is one it supports; everything else NCCL."""
            if nccl_bw is None:
                return "ring", comm_bw, latency_s
            if op == "all_reduce" and nb < custom_max_bytes and r in CUSTOM_ALLREDUCE_RANKS:
                return "custom", comm_bw, latency_s
            return "nccl", nccl_bw, DEFAULT_LATENCY_S

        def exchange(op: str) -> bool:
            """An expert all-to-all (NCCL's or HybridEP's dispatch / combine), priced alone."""
            return op == "all_to_all" or op in HYBRIDEP_PEER_S

        def comm(op: str, nb: float, r: Any) -> Any:
            if op in HYBRIDEP_PEER_S and ops.ep_span is not None and r > ops.ep_span[0]:
                return hybridep_columns(nb, r, ops.ep_span, ops.deepep_node_share, comm_bw or float(
                    hw.interconnect_bytes_per_s or 1.0), HYBRIDEP_PEER_S[op], hw.name)
            if exchange(op):
                return all_to_all(math.ceil(nb), r, hardware=hw, link_bytes_per_s=comm_bw,
                                  latency_s=HYBRIDEP_PEER_S.get(op, latency_s), **span)
            algo, link, lat = route(op, nb, r)
            return fns[op](math.ceil(nb), r, algo, hardware=hw, link_bytes_per_s=link,
                           latency_s=lat)

        def comms() -> np.ndarray:
            """Every collective; those of one kind, algorithm and link in one sweep."""
            out = np.empty((len(ops.comms), len(COLUMNS)))
            alike: dict[tuple[str, str, float | None, float], list[int]] = {}
            deep = [i for i, c in enumerate(ops.comms) if c[0] in DEEPEP_ROUNDS]
            if deep:  # DeepEP's kernels (.deepep): NVLink and, across nodes, RDMA at once
                out[deep] = stack(deepep_columns(
                    [ops.comms[i] for i in deep], ops.ep_span, ops.deepep_node_share,
                    comm_bw or float(hw.interconnect_bytes_per_s or 1.0), latency_s, hw.name))
            for i, (op, nb, _r) in enumerate(ops.comms):
                if op in DEEPEP_ROUNDS:
                    continue
                if exchange(op):
                    out[i] = stack(comm(op, nb, _r))
                else:
                    alike.setdefault((op, *route(op, nb, _r)), []).append(i)
            for (op, algo, link, lat), idx in alike.items():
                sizes = np.array([math.ceil(ops.comms[i][1]) for i in idx])
                ranks = np.array([ops.comms[i][2] for i in idx])
                fast = collective_columns(op, sizes, ranks, algo, hw, link, lat)
                for j, i in enumerate(idx):
                    out[i] = fast[j] if fast is not None else stack(comm(*ops.comms[i]))
            return out

        parts["comms"] = memo(
            "comms", (tuple(ops.comms), ops.ep_span, ops.deepep_node_share, comm_bw,
                      latency_s, nccl_bw, custom_max_bytes), comms)
    if ops.rings:  # ring context parallelism: the sends a step's attention block cannot hide
        nb, ranks, ai = (np.array(c) for c in zip(*ops.rings, strict=True))
        one = stack(send_recv(np.ceil(nb).astype(np.int64), hardware=hw,
                              link_bytes_per_s=comm_bw, latency_s=latency_s))
        sends = (ranks - 1)[:, None] * one  # every column of the cp-1 sends, bytes included
        exposed = np.asarray(_core.ring_exposed_s(one[:, 0], parts["attn"][ai, 0], ranks))
        share = np.where(sends[:, 0] > 0, exposed / np.maximum(sends[:, 0], 1e-300), 0.0)
        sends[:, :4] *= share[:, None]  # the times scale to the exposed part; bytes stay
        parts["rings"] = sends
    if ops.cp_rotations:
        parts["cp_rotations"] = _rotations(ops, parts["attn"][:, 0], hw, comm_bw, latency_s,
                                           nccl_bw, stack)
    if ops.calls:
        parts["calls"] = _price_calls(ops.calls, hw, efficiency, ops.sustained)
    out = np.zeros((len(ops.rows), len(COLUMNS)))
    for i, (_, _, _, row_parts) in enumerate(ops.rows):
        for kind, idx in row_parts:
            out[i] += parts[kind][idx]
    return {c: out[:, j] for j, c in enumerate(COLUMNS)}



def _rotations(ops: Program, attn_s: np.ndarray, hw: Hardware, comm_bw: float | None,
               latency_s: float, nccl_bw: float | None, stack: Any) -> np.ndarray:
    """Columns of PyTorch's ring-SDPA K/V rotations (``ops.cp_rotations``): every transfer's
    columns summed (bytes included), the times scaled to the part the SDPA calls leave exposed
    (:func:`roofline._core.torch_cp_exposed_s`; ``attn_s``: each attention spec's time).

    The all-gather runs as the step's other gathers do (NCCL's model at ``nccl_bw`` in
    training, else the alpha-beta ring); each all-to-all permute (``permute_tensor``: one
    non-empty destination) is one send at ``comm_bw`` (as ring context parallelism's sends)."""
    kv, dkv, ranks, gather, back, first, step = (
        np.array(c) for c in zip(*ops.cp_rotations, strict=True))
    ranks = ranks.astype(np.int64)
    gather, back = gather.astype(bool), back.astype(bool)

    def send(nb: np.ndarray) -> np.ndarray:
        return np.asarray(stack(send_recv(np.ceil(nb).astype(np.int64), hardware=hw,
                                          link_bytes_per_s=comm_bw, latency_s=latency_s)))

    total = np.ceil(kv * ranks).astype(np.int64)  # the gathered sequence's K/V
    ag = np.asarray(stack(
        all_gather(total, ranks, hardware=hw, link_bytes_per_s=comm_bw, latency_s=latency_s)
        if nccl_bw is None else
        all_gather(total, ranks, "nccl", hardware=hw, link_bytes_per_s=nccl_bw)))
    one_kv = np.where(gather[:, None], ag, send(kv))
    one_dkv = send(dkv)
    # transfers per pass: one gather or p-1 permutes of K/V; p dK/dV permutes backward
    n_kv = np.where(gather, 1, ranks - 1)
    cols = n_kv[:, None] * one_kv + np.where(back, ranks, 0)[:, None] * one_dkv
    exposed = np.asarray(_core.torch_cp_exposed_s(
        attn_s[first], attn_s[step], one_kv[:, 0], one_dkv[:, 0], ranks, gather, back))
    share = np.where(cols[:, 0] > 0, exposed / np.maximum(cols[:, 0], 1e-300), 0.0)
    cols[:, :4] *= share[:, None]  # the times scale to the exposed part; bytes stay
    out: np.ndarray = cols
    return out


def _block_scaled(recipe: str | None) -> bool:
    """Block-scaled (DeepGEMM-style) recipes: their GEMMs carry no clock drop."""
    return (recipe or "").startswith("blockwise")


def _sustain(parts: dict[str, np.ndarray], f8_gemm: np.ndarray | None,
             clock: tuple[float, float, float], recipe: str | None) -> None:
    """Reprice a training step's GEMMs and attention (``gemms``, ``lowp``, ``f8``, ``attn``
    parts, in place) at the clock the power limiter holds under continuous tensor load.

    The GEMM terms price a kernel run alone: its clock drops from full towards
    ``throttle_fraction`` with its own length (time constant ``throttle_time_s``); the
    attention terms were fitted on kernels run alone too. A training step runs GEMMs and
    attention back to back for seconds, and the clock is the whole GPU's, so every such
    kernel in it runs at the settled clock (:mod:`roofline.ops.sustained`; the registry-priced
    calls of the "hf" / "compiled" runtimes get it in :func:`_price_calls`, as
    :func:`roofline.torch.estimate` prices the same step). ``f8_gemm``: the columns of one GEMM
    of each float8 linear run alone (its ``f8`` row holds three of them and the casts). Block-scaled
    (DeepGEMM-style) recipes carry no clock drop: their GEMMs are left as they are.
    """
    blockwise = _block_scaled(recipe)
    for kind in ("gemms", "attn") if blockwise else ("gemms", "lowp", "attn"):
        if kind in parts:
            settle_columns(parts[kind], clock)
    if "f8" in parts and f8_gemm is not None and not blockwise:
        # forward, dgrad and wgrad GEMMs of one shape in each row, casts beside them
        cols, alone = parts["f8"], f8_gemm.copy()
        settle_columns(alone, clock)
        gemms = cols[:, 1] / np.maximum(f8_gemm[:, 1], 1e-300)  # 3 in training
        cols[:, 0] += gemms * (alone[:, 0] - f8_gemm[:, 0])
        cols[:, 1] += gemms * (alone[:, 1] - f8_gemm[:, 1])
        cols[:, 3] = np.maximum(cols[:, 0] - np.maximum(cols[:, 1], cols[:, 2]), 0.0)


def _price_calls(calls: list[Any], hw: Hardware, efficiency: EfficiencyLike,
                 sustained: bool) -> np.ndarray:
    """Each registry Call priced by its entry (the sum of the kernels it launches); in a
    sustained step (training) its GEMMs and attention at the settled clock, as
    :func:`roofline.torch.estimate` prices them (one rule: :mod:`roofline.ops.sustained`)."""
    pricer = Pricer(hw, efficiency, sustained=sustained)
    out = np.zeros((len(calls), len(COLUMNS)))
    for i, call in enumerate(calls):
        found, why = price(call, pricer)
        if found is None:
            raise RuntimeError(f"transformer.estimate: the op registry cannot price {why}")
        for _, e in found:
            out[i] += [float(getattr(e, c)) for c in COLUMNS]
    return out
