"""Entry of ``aten::_index_put_impl_``: aten's sort-based accumulate and its serial chains.

``x[idx] += v`` / ``index_put_(..., accumulate=True)`` on CUDA, and autograd's backward of a
row gather (``grad_input[order] += grad`` of ``x[order]``: an MoE layer's permutation), run
``index_put_with_sort_kernel`` (``aten/src/ATen/native/cuda/Indexing.cu``):

1. cub's ``radix_sort_pairs`` of the ``n`` flattened indices (int64 keys, their positions as
   values) on ``get_num_bits(rows)`` bits, 8 per onesweep pass: one single-tile kernel up to
   2304 keys, else a histogram, an exclusive sum, a memset and a onesweep kernel per pass
   and two memsets (:func:`roofline._core.index_put_launches`);
2. ``indexing_backward_kernel`` (blocks of 32 lanes x 4 indices, ``grid.y = ceil(slice /
   128)``): a warp whose index starts a run of equal sorted indices adds the run's values into
   its row one after the other, each a dependent load -> add -> store round trip, so the
   kernel is a set of serial chains, not a stream: :func:`roofline._core.
   index_put_accumulate_chain_s` with the DRAM round trip
   :data:`.memory_entries.ATEN_LOOP_STEP_S` per step.

The op is priced as the sort's launches streaming its keys and values, then the backward
kernel: the slower of one pass over its bytes (the values read, the rows touched read and
written) and its chains. Rows are the first
dimension of ``self`` and the indices index it (``slice = numel / rows``); ``n`` is the values'
rows; every row is taken as hit (``unique = min(rows, n)``), as the top-k copies of each token
in an MoE permutation are. ``slice == 1`` runs another kernel (``indexing_backward_kernel_
stride_1``) that is priced by the launches and bytes only; ``accumulate=False`` stays one
memory-bound pass.

Evidence (H200 traces, torch 2.11, ``data/programs/h200/traces/moe_*_grouped_mm_train_*``):
the backward of ``x[order // top_k]`` ran indexing_backward_kernel for 27 / 170 / 663 us (Qwen3-
MoE, 512 / 4096 / 16384 tokens x 8 copies of 2048 columns) and 13 / 302 us (Mixtral, 512 /
16384 tokens x 2 copies of 4096) where one memory pass priced 7 / 63 / 264 and 6 / 150 us.
"""

from __future__ import annotations

import dataclasses
import math

from ... import _core
from .call import Call
from .memory_entries import ATEN_LOOP_STEP_S, memory_pricer, stream
from .pricer import Pricer
from .table import Entry, Priced, add

__all__ = ["index_put_price"]

_PLAIN = memory_pricer("pointwise", "memory")

#: Bytes of one int64 index (the sort's keys and values).
_INDEX_BYTES = 8


def _accumulate(call: Call) -> bool:
    v = call.arg("accumulate", 3)
    return v is not None and str(v).strip().lower() in ("true", "1")


def index_put_price(call: Call, p: Pricer) -> Priced:
    """The sort and the chains of an accumulating ``index_put`` (see the module); one
    memory-bound pass when not accumulating or without shapes."""
    self_t, values = call.tensor(0), call.tensor(2)
    sms = getattr(p.hardware, "sms", None)
    if (not _accumulate(call) or self_t is None or values is None or not self_t.shape
            or self_t.numel == 0 or values.numel == 0 or not sms):
        return _PLAIN(call, p) if call.outputs is None else stream(call, p, "pointwise",
                                                                   "memory")
    rows = self_t.shape[0]
    slice_ = max(self_t.numel // max(rows, 1), 1)
    n = max(values.numel // slice_, 1)
    unique = min(rows, n)
    bits = max(int(rows).bit_length(), 1)
    passes = math.ceil(bits / 8)
    launches = int(_core.index_put_launches(float(n), float(passes)))
    item = values.itemsize
    sort_bytes = _core.radix_sort_bytes(float(n), float(_INDEX_BYTES))
    sort = p.traffic(int(sort_bytes / 2), int(sort_bytes / 2), 0.0, call.base,
                     kernels=launches - 1)
    add_pass = p.traffic(n * slice_ * item + unique * slice_ * self_t.itemsize,
                         unique * slice_ * self_t.itemsize, 0.0, call.base)
    chain = 0.0
    if slice_ > 1:
        chain = _core.index_put_accumulate_chain_s(float(n), float(unique), float(slice_),
                                                   float(sms), ATEN_LOOP_STEP_S)
    # the backward kernel streams its bytes while its chains run: the slower of the two
    backward = max(float(add_pass.time_s), chain)
    both = sort + add_pass
    time = float(sort.time_s) + backward
    e = p.cached(("index_put", n, unique, slice_, item, launches), lambda: dataclasses.replace(
        both, time_s=time,
        overhead_s=time - max(float(both.compute_s), float(both.memory_s))))
    dups = n / unique
    return [("memory", e)], (
        f"{call.name}: accumulate {n} indices into {unique} rows of {slice_}: cub sort on "
        f"{passes} pass(es), {launches} launches"
        + (f", {dups:.1f} duplicates added serially per row ({chain * 1e6:.1f} us of chains)"
           if chain > 0 else ""))


add("aten::_index_put_impl_", entry=lambda n: Entry(n, "memory", "elementwise",
                                                     index_put_price))
