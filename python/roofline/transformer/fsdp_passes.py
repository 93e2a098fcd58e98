"""The memory-bound passes a ZeRO-3 (FSDP) implementation runs around its collectives.

Per wrapped unit (a layer; the root unit: embedding and head) and micro-batch, by
``estimate(fsdp=)``:

- ``"fsdp2"``: PyTorch's ``fully_shard`` (``torch/distributed/_composable/fsdp/
  _fsdp_collectives.py``, or ``torch/distributed/fsdp/_fully_shard/`` in newer releases), as
  torchtitan runs it. ``foreach_all_gather_copy_out``: after each all-gather the compute
  stream waits for it and ``split_with_sizes_copy`` copies the gathered flat buffer into
  every parameter's unsharded tensor, one read and one write of the unit's unsharded
  parameters (bf16: 2 bytes each way) per all-gather: in the forward, and again in the
  backward when the unit was resharded after its forward (the root unit never is).
  ``foreach_reduce``'s copy-in: ``chunk_cat`` of the unit's unsharded gradients (bf16) into
  the reduce-scatter input in ``reduce_dtype`` (fp32: reads 2, writes 4 bytes per element),
  once per backward. Today's code runs it on the compute stream before the reduce-scatter
  stream waits for it; older releases ran it on the reduce-scatter stream (for a while with
  the compute stream waiting for it); priced here as if on the compute stream. Left out:
  the all-gather's copy-in (``_foreach_copy_`` of the shard, ``1/world`` of the unit, on its
  own stream) and the divides by the data-parallel size (on the reduce-scatter stream).
- ``"fsdp1"``: :func:`.composer.fsdp1_grad_passes` (Composer's FSDP1 gradient path), in the
  backward only.
- ``"megatron"``: Megatron-FSDP (Megatron-Core / Megatron-Bridge's ``use_megatron_fsdp``),
  whose parameters and gradients live in its own bucket buffers: its copies are not priced.

Each pass is one bf16 ``roofline.elementwise`` kernel (an fp32 tensor counts as two 2-byte
elements); the passes add to the forward / backward of every micro-batch.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..efficiency import EfficiencyLike
from .composer import fsdp1_grad_s, passes_s, passes_that_run
from .program import Pass

__all__ = ["FSDP2_COPY_OUT", "fsdp2_copy_pass_arrays", "fsdp2_copy_passes", "fsdp_unit_passes_s"]

#: ``(reads, writes)`` in 2-byte units per unsharded element of FSDP2's copy-out after an
#: all-gather (``split_with_sizes_copy`` of the bf16 parameters).
FSDP2_COPY_OUT = (1.0, 1.0)


def fsdp2_copy_pass_arrays(unsharded: Any, reduce_bytes: Any, resharded: Any
                           ) -> tuple[list[tuple[np.ndarray, Any, Any]],
                                      list[tuple[np.ndarray, Any, Any]]]:
    """FSDP2's passes of one unit of ``unsharded`` elements per micro-batch (arrays
    broadcast), ``(forward, backward)``, each a list of ``(elements, reads, writes)`` in
    2-byte units, ``elements`` 0 where a pass does not run: the forward's copy-out; in the
    backward the copy-out again where ``resharded`` and the reduce-scatter's ``chunk_cat``
    (reads 1, writes ``reduce_bytes / 2``)."""
    u, rb, rs = np.broadcast_arrays(*(np.asarray(x, dtype=float) for x in (
        unsharded, reduce_bytes, resharded)))
    r, w = FSDP2_COPY_OUT
    return [(u, r, w)], [(np.where(rs > 0, u, 0.0), r, w), (u, 1.0, rb / 2.0)]


def fsdp2_copy_passes(unsharded: float, reduce_bytes: float,
                      resharded: bool) -> tuple[list[Pass], list[Pass]]:
    """:func:`fsdp2_copy_pass_arrays` of one unit (scalars), the passes that run, in order."""
    fwd, bwd = fsdp2_copy_pass_arrays(unsharded, reduce_bytes, resharded)
    return passes_that_run(fwd), passes_that_run(bwd)


def fsdp_unit_passes_s(fsdp: str, layer: Any, root: Any, n_layers: Any, world: Any,
                       reduce_bytes: Any, resharded: Any, accumulate: Any, hw: Any,
                       efficiency: EfficiencyLike = "default"
                       ) -> tuple[np.ndarray, np.ndarray]:
    """Seconds the FSDP implementation ``fsdp`` adds to one stage's forward and backward per
    micro-batch (arrays broadcast): ``n_layers`` units of ``layer`` unsharded elements (each
    ``resharded`` after its forward or not) and one root unit of ``root`` elements (never
    resharded), sharded over ``world`` ranks, gradients reduced in ``reduce_bytes`` per
    element, ``accumulate`` the share of micro-batches adding to a saved shard (FSDP1); each
    pass priced by :func:`.composer.passes_s` under ``efficiency``."""
    args = np.broadcast_arrays(*(np.asarray(x, dtype=float) for x in (
        layer, root, n_layers, world, reduce_bytes, resharded, accumulate)))
    lay, rt, n, wd, rb, rs, acc = args
    zero = np.zeros(lay.shape)
    if fsdp == "fsdp1":
        bwd = (n * fsdp1_grad_s(lay, wd, rb, rs, acc, hw, efficiency)
               + fsdp1_grad_s(rt, wd, rb, 0.0, acc, hw, efficiency))
        return zero, np.asarray(bwd)
    if fsdp != "fsdp2":  # megatron: not priced
        return zero, zero.copy()
    lay_f, lay_b = fsdp2_copy_pass_arrays(lay, rb, rs)
    rt_f, rt_b = fsdp2_copy_pass_arrays(rt, rb, 0.0)
    fwd = n * passes_s(lay_f, hw, efficiency) + passes_s(rt_f, hw, efficiency)
    bwd = n * passes_s(lay_b, hw, efficiency) + passes_s(rt_b, hw, efficiency)
    return zero + fwd, zero + bwd
