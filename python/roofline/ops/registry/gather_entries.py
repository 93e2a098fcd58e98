"""Entries of row gathers (``index_select``, ``embedding``) and the embedding gradient: priced
by the rows they touch, the same on every path.

A gather of ``n`` indices reads those ``n`` rows and the indices and writes the ``n`` rows; it
does not read the whole table (a 16-row lookup in a 128256 x 4096 table moves 16 rows, not
1 GB). The embedding gradient reads the output gradient and the indices and writes the whole
table's gradient (zeroed, then accumulated into).

``aten::index`` (``x[idx]``): a trace records no tensor list, so the indices (hence the rows
gathered) are unknown from the inputs; the kernel's launch configuration tells them
(:data:`roofline.trace._price.LAUNCH_OPS`). aten (``Indexing.cu``, ``IndexKernel.cu``) gathers
whole rows of a tensor indexed on its first dimension with ``vectorized_gather_kernel``, one
block row per index (``grid.x`` = the indices, ``grid.y`` the 16-byte chunks of a row): one
memory pass over those rows. Other advanced indexing runs ``index_elementwise_kernel<128, 4>``:
``grid`` blocks of 128 threads, each walking up to 4 outputs one after another, an output
being dependent loads of its index and of the element it addresses
(:func:`roofline._core.index_gather_chain_s`; the number of index tensors is not recorded
either: one is assumed, and each further index tensor adds a round trip per item). H200 MoE
traces (torch 2.11): HF Mixtral's ``hidden_states[token_idx]`` over 16384 tokens gathered
~4100 rows in 18-19 us, priced 66 us as a pass over every row; its
``routing_weights[token_idx, top_k_pos]`` (8-9 blocks) took 7.1-7.4 us, 1.4 us as a pass.
"""

from __future__ import annotations

import math

from ... import _core
from .call import Call, TensorArg
from .memory_entries import memory_at_least, memory_pricer
from .pricer import Pricer
from .table import Priced, register

_STREAM = memory_pricer("pointwise", "memory")


def _rows(call: Call, p: Pricer, table: TensorArg, index: TensorArg, dim: int,
          kind: str) -> Priced:
    row = math.prod(table.shape) // max(table.shape[dim], 1) if table.shape else 1
    moved = row * index.numel * table.itemsize
    e = p.traffic(moved + index.nbytes, moved, 0.0, call.base)
    return [(kind, e)], (f"{call.name}: {index.numel} rows of {row * table.itemsize} B read "
                         f"and written, {index.nbytes} B of indices (rl.elementwise)")


def _launch_gather(call: Call, p: Pricer) -> Priced | None:
    """``aten::index`` of a trace from its kernel's launch configuration (see the module);
    None when the kernel or its configuration is not one of aten's two gathers."""
    impl, x = call.impl, call.tensor(0)
    if impl.grid is None or impl.block is None or x is None or not x.shape or x.numel == 0:
        return None
    name = impl.kernel or ""
    gx = impl.grid[0]
    if "vectorized_gather_kernel" in name:
        row = x.nbytes // max(x.shape[0], 1)
        moved = gx * row
        e = p.traffic(moved + 8 * gx, moved, 0.0, call.base)
        return [("memory", e)], (f"{call.name}: {gx} rows of {row} B gathered "
                                 f"(vectorized_gather_kernel grid.x; rl.elementwise)")
    if "index_elementwise_kernel" not in name or impl.block[0] <= 0:
        return None
    sms = getattr(p.hardware, "sms", None)
    if not sms:
        return None
    threads = impl.block[0] * impl.block[1] * impl.block[2]
    blocks = impl.grid[0] * impl.grid[1] * impl.grid[2]
    n = int(_core.index_gather_outputs(float(blocks), float(threads)))  # at most
    busy = _core.index_gather_chain_s(float(blocks), float(threads), float(n), 1.0, float(sms))
    e = p.traffic(n * (x.itemsize + 8), n * x.itemsize, 0.0, call.base)
    e = p.cached(("index_chain", blocks, threads, n, x.itemsize),
                 lambda: memory_at_least(e, busy))
    return [("memory", e)], (f"{call.name}: index_elementwise_kernel, {blocks} blocks of "
                             f"{threads} threads, up to {n} outputs walked 4 per thread, an index "
                             f"then the element per output (dependent loads)")


@register("aten::index", kind="memory", op="elementwise")
def index(call: Call, p: Pricer) -> Priced:
    """``x[indices]``: from the launch configuration in a trace (see the module), else one
    pass over the recorded inputs (and the outputs, where known)."""
    if call.outputs is None:
        got = _launch_gather(call, p)
        if got is not None:
            return got
    return _STREAM(call, p)


@register("aten::scatter_", kind="memory", op="elementwise")
def scatter_(call: Call, p: Pricer) -> Priced:
    """``self.scatter_(dim, index, value | src)`` (in place, as ``one_hot`` fills its zeros):
    the index's elements are written into ``self`` (the rest of ``self`` is not touched),
    reading the index (and ``src``'s matching elements). aten's
    ``_scatter_gather_elementwise_kernel<128, 8>`` walks 8 index elements per thread one
    after another, a dependent index load each: at least
    :func:`roofline._core.scatter_chain_s` (a latency chain, beyond one pass over those
    bytes). H200 HF MoE traces (torch 2.11): ``one_hot``'s scatter_ of 32768 indices into a
    4096 x 8 x 129 int64 tensor took 5.9 us where a pass over the whole tensor priced 18.7."""
    x = call.tensor(0)
    index = call.arg("index") if "index" in call.args else call.tensor(2)
    if not isinstance(x, TensorArg) or not isinstance(index, TensorArg):
        return _STREAM(call, p)
    n = index.numel
    src = call.arg("src") if "src" in call.args else call.tensor(3)
    read = index.nbytes + (n * src.itemsize if isinstance(src, TensorArg) else 0)
    sms = getattr(p.hardware, "sms", None)
    e = p.traffic(read, n * x.itemsize, 0.0, call.base)
    if sms:
        busy = _core.scatter_chain_s(float(n), float(sms))
        e = p.cached(("scatter_chain", n, read, x.itemsize), lambda: memory_at_least(e, busy))
    return [("memory", e)], (f"{call.name}: {n} index elements written into self, {read} B "
                             f"read; 8 per thread, one dependent index load each")


@register("aten::index_select", kind="memory", op="elementwise")
def index_select(call: Call, p: Pricer) -> Priced:
    """``index_select(self, dim, index)``: the selected slices along ``dim``."""
    table = call.arg("self") if "self" in call.args else call.tensor(0)
    index = call.arg("index") if "index" in call.args else call.tensor(2)
    if not isinstance(table, TensorArg) or not isinstance(index, TensorArg):
        return None, f"{call.name}: no table / index shapes"
    try:
        dim = int(call.arg("dim", 1, 0)) % max(len(table.shape), 1)
    except (TypeError, ValueError):
        return None, f"{call.name}: dim not recorded"
    return _rows(call, p, table, index, dim, "memory")


@register("aten::embedding", kind="memory", op="elementwise")
def embedding(call: Call, p: Pricer) -> Priced:
    """``embedding(weight, indices)``: one table row per index."""
    table = call.arg("weight") if "weight" in call.args else call.tensor(0)
    index = call.arg("indices") if "indices" in call.args else call.tensor(1)
    if not isinstance(table, TensorArg) or not isinstance(index, TensorArg):
        return None, f"{call.name}: no table / index shapes"
    return _rows(call, p, table, index, 0, "embedding")


@register("aten::embedding_dense_backward", kind="memory", op="elementwise")
def embedding_dense_backward(call: Call, p: Pricer) -> Priced:
    """``embedding_dense_backward(grad_output, indices, num_weights, ...)``: reads the output
    gradient and the indices, writes the table's gradient."""
    grad = call.arg("grad_output") if "grad_output" in call.args else call.tensor(0)
    index = call.arg("indices") if "indices" in call.args else call.tensor(1)
    if not isinstance(grad, TensorArg) or not isinstance(index, TensorArg) or not grad.shape:
        return None, f"{call.name}: no gradient / index shapes"
    try:
        rows = int(call.arg("num_weights", 2))
    except (TypeError, ValueError):
        return None, f"{call.name}: num_weights not recorded"
    written = rows * grad.shape[-1] * grad.itemsize
    e = p.traffic(grad.nbytes + index.nbytes, written, 0.0, call.base)
    return [("embedding", e)], (f"{call.name}: {grad.nbytes + index.nbytes} B read, "
                                f"{written} B written (rl.elementwise)")


@register("aten::index_copy_", kind="memory", op="elementwise")
def index_copy_(call: Call, p: Pricer) -> Priced:
    """``self.index_copy_(dim, index, source)`` (HF's ``StaticCache`` update): in place, it
    reads ``source`` and the indices and writes ``source``'s slices into ``self``; the rest of
    ``self`` is not touched (one token into a 4097-slot cache moves that token's K, not the
    cache)."""
    src = call.arg("source") if "source" in call.args else call.tensor(3)
    index = call.arg("index") if "index" in call.args else call.tensor(2)
    if not isinstance(src, TensorArg) or not isinstance(index, TensorArg):
        return None, f"{call.name}: no source / index shapes"
    e = p.traffic(src.nbytes + index.nbytes, src.nbytes, 0.0, call.base)
    return [("memory", e)], (f"{call.name}: {src.nbytes} B of source read and written into "
                             f"place, {index.nbytes} B of indices (rl.elementwise)")


@register("aten::gather", kind="memory", op="elementwise")
def gather(call: Call, p: Pricer) -> Priced:
    """``torch.gather(self, dim, index)``: ``out[i][j] = self[index[i][j]][j]`` reads one
    element of ``self`` per index and writes the output (the index's shape): a gather of 64
    rows from a 128256 x 4096 table moves 64 rows, not the table."""
    src = call.arg("self") if "self" in call.args else call.tensor(0)
    index = call.arg("index") if "index" in call.args else call.tensor(2)
    if not isinstance(src, TensorArg) or not isinstance(index, TensorArg):
        return None, f"{call.name}: no source / index shapes"
    moved = index.numel * src.itemsize
    e = p.traffic(moved + index.nbytes, moved, 0.0, call.base)
    return [("memory", e)], (f"{call.name}: {index.numel} elements of {src.itemsize} B read "
                             f"and written, {index.nbytes} B of indices (rl.elementwise)")
