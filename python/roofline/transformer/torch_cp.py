"""Context parallelism as PyTorch runs it (``torch.distributed.tensor.experimental.
context_parallel``, which torchtitan drives): one layer's ring SDPA, kernel by kernel.

What runs (PyTorch's ``_context_parallel/_attention.py``, 2025-2026: ``_templated_ring_attention``,
``_templated_ring_attention_backward``, ``_SDPAMerger``, the ``_AllGatherRotater`` /
``_AllToAllRotater``; torchtitan's ``create_context_parallel_ctx`` with its defaults,
``context_parallel_rotate_method="allgather"`` and head-tail load balancing):

- the sequence of ``S`` tokens is cut into ``2p`` chunks and rank ``r`` holds chunks ``r`` and
  ``2p-1-r`` (``L = S/p`` local tokens: the head-tail load balancer), so every rank has the
  same causal work;
- the forward runs ``p`` SDPA calls over the local queries: step 0 against the local K/V,
  ``is_causal=True`` (an ``L x L`` causal call), then ``p-1`` steps against the other ranks'
  K/V, ``is_causal=False``: the full local queries against the first half of the visiting
  chunk (``L x L/2``) when the K/V come from a lower rank, else the second half of the
  queries against all of it (``L/2 x L``) — half the pairs of step 0 each;
- every call returns its output and log-sum-exp, merged in fp32 (``convert_to_f32``): the
  first output cast to fp32, then per later step the output cast and ``out - sigmoid(lse_b -
  lse)·(out - out_b)``, ``lse - logsigmoid(lse - lse_b)`` (nine kernels, five over the
  log-sum-exp only); a merge into the second half of the queries edits views and rebuilds
  the whole fp32 output and log-sum-exp with ``torch.cat``; the result is cast back once;
- K and V are made contiguous (two copies), and before each step but the last the pair is
  concatenated into one buffer (``torch.cat``, a copy) handed to the rotater: the all-gather
  rotater gathers the whole sequence's K/V once, at step 0, and waits for it at step 1; the
  all-to-all rotater sends the buffer to the next rank each step (``permute_tensor``), waited
  for at the next step;
- the backward zero-fills fp32 accumulators for dQ, dK, dV, copies K and V contiguous again,
  concatenates K/V before each step but the last, runs the ``p`` SDPA backward calls on the
  same shapes, and accumulates in fp32: step 0 adds dQ, dK, dV (fp32 += bf16); each later
  step receives the dK/dV accumulator travelling round the ring (fp32, always by all-to-all
  permutes, whatever the rotate method), adds its dK/dV into it (into the first half then a
  ``torch.cat`` of the whole accumulator, for K/V from a lower rank) and its dQ into the local
  accumulator (half and a ``cat`` for the second-half queries), concatenates dK and dV and sends
  them on; after the last step dQ and the returned dK/dV are cast back.

Priced rank: the last (``r = p-1``), whose later steps all take the K/V of lower ranks: full
queries against half the visiting keys, full-size merges, half-size dK/dV adds plus the
``cat`` — the most memory traffic of any rank (the collectives make every rank wait for it).
K and V reach SDPA with one head per query head (torchtitan's models ``repeat_kv`` before
SDPA), so every K/V tensor, copy and transfer here is ``heads`` wide. Element counts are in
the activation's 2-byte units (an fp32 tensor counts twice), as :meth:`.Program.passes` takes
them. The rotation's exposed time is :func:`roofline._core.torch_cp_exposed_s` (one link,
each transfer hidden behind the SDPA call it was issued before). Each call is the kernel
``F.scaled_dot_product_attention`` dispatches (``rl.attention``'s ``backend="auto"``: cuDNN
on Hopper and datacenter Blackwell, first in torchtitan's ``sdpa_kernel`` priority too).

Not modeled: the SMs NCCL's kernels take from the overlapped calls, a context group
spanning scale-up domains (every transfer at the scale-up link), DTensor's dispatch on the
host, and 32-bit activations (the counts assume 16-bit ones).
"""

from __future__ import annotations

from typing import Any

from .._errors import ArgumentValueError
from .config import TransformerConfig
from .program import Pass, Program

__all__ = ["ROTATIONS", "check_cp", "torch_cp_attention", "torch_cp_passes"]

#: ``cp_comm`` values priced as PyTorch's ring SDPA: the rotater torchtitan's
#: ``context_parallel_rotate_method`` selects ("allgather", the default, or "alltoall").
ROTATIONS = ("all_gather", "all_to_all")


def check_cp(fn: str, cfg: TransformerConfig, seq: int, ranks: int, method: str) -> None:
    """ValueError unless ``ranks`` context-parallel ranks can split the sequence: ``cp``
    divides ``seq_len``; with PyTorch's ring SDPA (``method`` in :data:`ROTATIONS`) the
    head-tail load balancer cuts it into ``2·cp`` equal chunks, and the ring runs SDPA's full
    causal mask only (sliding-window / chunked layers have no ``is_causal`` form)."""
    if seq % ranks:
        raise ArgumentValueError(fn, "cp", f"must divide seq_len ({seq}), got {ranks}")
    if ranks <= 1 or method not in ROTATIONS:
        return
    if seq % (2 * ranks):
        raise ArgumentValueError(fn, "cp", f"must have 2·cp dividing seq_len ({seq}) with "
                                 f"cp_comm={method!r} (PyTorch's ring SDPA cuts the sequence "
                                 f"into 2·cp head-tail chunks), got {ranks}")
    local = sorted(set(cfg.layer_attention()) - {"full"})
    if local:
        raise ArgumentValueError(fn, "cp_comm", f"{method!r} runs PyTorch's ring SDPA, whose "
                                 f"calls take only a full causal mask; {cfg.name} has "
                                 f"{'/'.join(local)} attention layers (use cp_comm='ring')")


def torch_cp_passes(ranks: int, q: float, o: float, k: float, v: float, lse: float
                    ) -> dict[str, tuple[list[Pass], list[Pass]]]:
    """Memory-bound kernels ``(elements, reads, writes)`` of one layer's ring SDPA on the last
    rank, forward and backward, per row: ``"copies"`` (K/V made contiguous, the K/V cats
    before each step but the last; the backward's dK/dV cats and final cast) and
    ``"merge"`` (the fp32 output / log-sum-exp merge; the backward's zero fills, fp32
    accumulation and dQ cast).

    ``q``, ``o``, ``k``, ``v``: local query, output, key and value elements (``B·H·L·d``,
    ``B·H·L·dv``, ...), ``lse``: log-sum-exp entries (``B·H·L``), all for the ``L`` local
    tokens; counts in 2-byte units (fp32: twice its entries).
    """
    later = ranks - 1  # steps after the diagonal one
    contiguous = [(k, 1.0, 1.0), (v, 1.0, 1.0)]
    cats = [(k + v, 1.0, 1.0)] * later
    # backward: dK/dV (fp32) concatenated and sent at every step, cast back after the loop
    dkv = [(2 * (k + v), 1.0, 1.0)] * ranks + [(k + v, 2.0, 1.0)]
    copies = (contiguous + cats, contiguous + cats + dkv)
    cast_up, cast_down = (o, 1.0, 2.0), (o, 2.0, 1.0)  # bf16 <-> fp32 output
    lse_ops = [(2 * lse, 2.0, 1.0), (2 * lse, 1.0, 1.0)]  # lse_b - lse, sigmoid
    out_ops = [(2 * o, 2.0, 1.0), (2 * o, 1.0, 1.0), (2 * o, 2.0, 1.0)]  # -, ·, -
    lse_new = [(2 * lse, 2.0, 1.0), (2 * lse, 1.0, 1.0), (2 * lse, 2.0, 1.0)]
    merge_fwd = [cast_up] + ([cast_up] + lse_ops + out_ops + lse_new) * later + [cast_down]

    def add(n: float) -> Pass:  # an fp32 accumulator += a bf16 gradient
        return (n, 3.0, 2.0)

    zeros = [(2 * q, 0.0, 1.0), (2 * k, 0.0, 1.0), (2 * v, 0.0, 1.0)]
    # later steps on the last rank: dK, dV into the first half of the accumulator, then a cat
    half_kv = [add(k / 2), (2 * k, 1.0, 1.0), add(v / 2), (2 * v, 1.0, 1.0)]
    merge_bwd = (zeros + [add(k), add(v), add(q)] + (half_kv + [add(q)]) * later
                 + [(q, 2.0, 1.0)])
    return {"copies": copies, "merge": (merge_fwd, merge_bwd)}


def torch_cp_attention(ops: Program, g: int, name: str, *, batch: int, heads: int,
                       seq: int, head_dim: int, v_head_dim: int, ranks: int, method: str,
                       act_bytes: float, attn_kw: dict[str, Any]) -> None:
    """Record one layer's ring SDPA over ``seq`` tokens split ``ranks`` ways (this module's
    docstring): the K/V copies, the diagonal causal call, the ``ranks - 1`` later calls
    (``L x L/2``, not causal), the fp32 merge and the K/V rotation (``method``: one of
    :data:`ROTATIONS`), each with its backward when training."""
    local = seq // ranks
    d, dv = head_dim, v_head_dim
    n = float(batch) * heads * local
    k, v = n * d, n * dv  # K/V as SDPA sees them: one head per query head (repeat_kv)
    passes = torch_cp_passes(ranks, n * d, n * dv, k, v, n)
    kw = {a: val for a, val in attn_kw.items() if a not in ("scale", "causal")}
    shape: dict[str, Any] = dict(batch=batch, heads=heads, kv_heads=heads, head_dim=d,
                                 v_head_dim=dv)
    fwd_first = len(ops.attn)
    ops.attention(g, f"{name} (cp step 0, causal)", q_len=local, kv_len=local, causal=True,
                  **shape, **kw)
    fwd_step = len(ops.attn)
    steps = "step 1" if ranks == 2 else f"steps 1-{ranks - 1}"
    ops.attention(g, f"{name} (cp {steps}, L x L/2)", calls=ranks - 1,
                  save=False, q_len=local, kv_len=local // 2, causal=False, **shape, **kw)
    bwd = (fwd_first + 1, fwd_step + ranks - 1)
    # kernels of the SDPA op's own dispatch: recomputed with it, never saved apart
    ops.passes(g, "cp kv copies", *passes["copies"], kind="attention")
    ops.passes(g, "cp merge (fp32)", *passes["merge"], kind="attention")
    ops.cp_rotation(g, f"cp {method} kv", (k + v) * act_bytes, (k + v) * 4.0, ranks,
                    method == "all_gather", (fwd_first, fwd_step), bwd)
