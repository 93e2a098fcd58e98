"""Entries of row gathers (``index_select``, ``embedding``) and the embedding gradient: priced
by the rows they touch, the same on every path.

A gather of ``n`` indices reads those ``n`` rows and the indices and writes the ``n`` rows; it
does not read the whole table (a 16-row lookup in a 128256 x 4096 table moves 16 rows, not
1 GB). The embedding gradient reads the output gradient and the indices and writes the whole
table's gradient (zeroed, then accumulated into).
"""

from __future__ import annotations

import math

from .call import Call, TensorArg
from .pricer import Pricer
from .table import Priced, register


def _rows(call: Call, p: Pricer, table: TensorArg, index: TensorArg, dim: int,
          kind: str) -> Priced:
    row = math.prod(table.shape) // max(table.shape[dim], 1) if table.shape else 1
    moved = row * index.numel * table.itemsize
    e = p.traffic(moved + index.nbytes, moved, 0.0, call.base)
    return [(kind, e)], (f"{call.name}: {index.numel} rows of {row * table.itemsize} B read "
                         f"and written, {index.nbytes} B of indices (rl.elementwise)")


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
