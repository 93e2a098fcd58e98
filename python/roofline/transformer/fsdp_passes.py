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

from ..ops.elementwise import elementwise
from .composer import fsdp1_grad_s
from .program import Pass

__all__ = ["FSDP2_COPY_OUT", "fsdp2_copy_passes", "fsdp_unit_passes_s"]

#: ``(reads, writes)`` in 2-byte units per unsharded element of FSDP2's copy-out after an
#: all-gather (``split_with_sizes_copy`` of the bf16 parameters).
FSDP2_COPY_OUT = (1.0, 1.0)


def fsdp2_copy_passes(unsharded: float, reduce_bytes: float,
                      resharded: bool) -> tuple[list[Pass], list[Pass]]:
    """FSDP2's passes of one unit of ``unsharded`` elements per micro-batch, ``(forward,
    backward)``, each a list of ``(elements, reads, writes)`` in 2-byte units: the forward's
    copy-out; in the backward the copy-out again when ``resharded`` and the reduce-scatter's
    ``chunk_cat`` (reads 1, writes ``reduce_bytes / 2``)."""
    u = float(unsharded)
    r, w = FSDP2_COPY_OUT
    fwd: list[Pass] = [(u, r, w)]
    bwd: list[Pass] = ([(u, r, w)] if resharded else []) + [(u, 1.0, float(reduce_bytes) / 2.0)]
    return fwd, bwd


def _pass_s(elements: np.ndarray, reads: Any, writes: Any, hw: Any) -> np.ndarray:
    """Seconds of one bf16 elementwise pass over ``elements`` (arrays; none under 1)."""
    n = np.maximum(np.ceil(elements), 1).astype(np.int64)
    t = np.asarray(elementwise(n, reads, writes, 0.0, "bf16", hw).time_s, dtype=float)
    return np.where(elements >= 1, t, 0.0)


def fsdp_unit_passes_s(fsdp: str, layer: Any, root: Any, n_layers: Any, world: Any,
                       reduce_bytes: Any, resharded: Any, accumulate: Any, hw: Any
                       ) -> tuple[np.ndarray, np.ndarray]:
    """Seconds the FSDP implementation ``fsdp`` adds to one stage's forward and backward per
    micro-batch (arrays broadcast): ``n_layers`` units of ``layer`` unsharded elements (each
    ``resharded`` after its forward or not) and one root unit of ``root`` elements (never
    resharded), sharded over ``world`` ranks, gradients reduced in ``reduce_bytes`` per
    element, ``accumulate`` the share of micro-batches adding to a saved shard (FSDP1)."""
    args = np.broadcast_arrays(*(np.asarray(x, dtype=float) for x in (
        layer, root, n_layers, world, reduce_bytes, resharded, accumulate)))
    fwd, bwd = np.zeros(args[0].shape), np.zeros(args[0].shape)
    if fsdp == "fsdp1":
        a_lay, a_rt, a_n, a_w, a_rb, a_rs, a_acc = args
        bwd = (a_n * fsdp1_grad_s(a_lay, a_w, a_rb, a_rs, a_acc, hw)
               + fsdp1_grad_s(a_rt, a_w, a_rb, False, a_acc, hw))
        return fwd, np.asarray(bwd)
    if fsdp != "fsdp2":  # megatron: not priced
        return fwd, bwd
    lay, rt, n, _, rb, rs, _ = args
    r, w = FSDP2_COPY_OUT  # the passes of fsdp2_copy_passes, over whole arrays
    out_l, out_r = _pass_s(lay, r, w, hw), _pass_s(rt, r, w, hw)
    fwd = n * out_l + out_r
    bwd = (n * (np.where(rs > 0, out_l, 0.0) + _pass_s(lay, 1.0, rb / 2.0, hw))
           + _pass_s(rt, 1.0, rb / 2.0, hw))
    return fwd, bwd
