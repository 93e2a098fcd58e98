"""Entry of ``aten::nonzero``: cub's count, a host sync, cub's select and an unflatten kernel.

``torch.nonzero`` on CUDA (``aten/src/ATen/native/cuda/Nonzero.cu``, ``nonzero_cuda_out_impl``)
cannot size its output before it has counted: it runs

1. ``cub::DeviceReduce::Sum`` over ``x != 0``: one single-tile kernel for at most one tile of
   items (256 threads x 16 items), else a grid pass and the single-tile kernel;
2. ``memcpy_and_sync`` of the count to pinned host memory (a copy and a stream sync: host
   time, not a kernel, not priced here);
3. ``cub::DeviceSelect::Flagged`` writing the flat int64 indices of the nonzeros: an init
   kernel (the look-back tile states) and the sweep;
4. ``write_indices`` when the input has more than one dimension: each flat index becomes
   ``ndim`` coordinates.

So :func:`roofline._core.nonzero_launches` kernels (3-5), each far shorter than its launch:
the op is priced as that many back-to-back streaming kernels over the bytes they move, each
with its own launch floor, not as one pass spread over them. Bytes: the count and the select
each read the input; the select writes 8 bytes per nonzero and ``write_indices`` reads them
and writes ``8 x ndim`` per nonzero. The count is data; with the output recorded (the live
path) it is the output's rows, else (a trace) every element is taken as nonzero (an upper
bound on bytes that are small beside the launches in the MoE routing that calls it).

Evidence (H200 traces, torch 2.11, HF Qwen3-MoE / Mixtral blocks,
``data/programs/h200/traces/moe_*_hf_*``): ``nonzero`` of an 8 x 4096 bool mask ran 5
kernels of 0.8-3.6 us (10.2 us) where one priced pass was 1.6 us.
"""

from __future__ import annotations

import math

from ... import _core
from .call import Call
from .memory_entries import memory_pricer
from .pricer import Pricer
from .table import Entry, Priced, add

__all__ = ["nonzero_price"]

_PLAIN = memory_pricer("reduce", "reduction")

#: Bytes of one int64 index.
_INDEX_BYTES = 8


def nonzero_price(call: Call, p: Pricer) -> Priced:
    """cub's count, cub's select and ``write_indices`` (see the module), each its own launch."""
    x = call.tensor(0)
    if x is None or not x.shape:
        return _PLAIN(call, p)
    numel, ndim = x.numel, len(x.shape)
    launches = int(_core.nonzero_launches(float(numel), float(ndim)))
    if launches == 0:
        return [], f"{call.name}: empty input"
    out = call.outputs[0] if call.outputs else None
    found = out.shape[0] if out is not None and out.shape else numel
    read = 2 * x.nbytes + (found * _INDEX_BYTES if ndim > 1 else 0)
    written = found * _INDEX_BYTES * (1 + (ndim if ndim > 1 else 0))
    e = p.traffic(read, written, 0.0, call.base, kernels=launches)
    known = "" if out is not None else " (count not recorded: all taken as nonzero)"
    return [("reduction", e)], (
        f"{call.name}: cub count + select of {numel} elements{known}: {launches} kernels"
        + (f" (with write_indices for {ndim} dims)" if ndim > 1 else "")
        + f", {math.ceil(read + written)} B")


add("aten::nonzero", entry=lambda n: Entry(n, "memory", "reduction", nonzero_price))
