"""Entries of fused attention (SDPA's cuDNN, flash and memory-efficient kernels):
:func:`roofline.attention` with the backend that ran and the recorded ``is_causal``."""

from __future__ import annotations

import dataclasses
from typing import Any

from ... import _core
from ..attention import attention, attention_backend
from .call import Call, TensorArg, flag
from .memory_entries import CAT_STEP_S
from .pricer import Pricer
from .table import Priced, register, register_family

# op -> (backend, layout "bhsd" / "bshd", backward, recorded index of is_causal (or the
# efficient kernels' custom_mask_type), True when it is custom_mask_type, index of dropout_p)
_SDPA: dict[str, tuple[str, str, bool, int, bool, int]] = {
    "aten::_scaled_dot_product_cudnn_attention": ("cudnn", "bhsd", False, 6, False, 5),
    "aten::_cudnn_attention_forward": ("cudnn", "bhsd", False, 10, False, 9),
    "aten::_scaled_dot_product_cudnn_attention_backward": ("cudnn", "bhsd", True, 14, False, 13),
    "aten::_cudnn_attention_backward": ("cudnn", "bhsd", True, 14, False, 13),
    "aten::_scaled_dot_product_flash_attention": ("flash", "bhsd", False, 4, False, 3),
    "aten::_flash_attention_forward": ("flash", "bshd", False, 8, False, 7),
    "aten::_scaled_dot_product_flash_attention_backward": ("flash", "bhsd", True, 11, False, 10),
    "aten::_flash_attention_backward": ("flash", "bshd", True, 11, False, 10),
    "aten::_scaled_dot_product_efficient_attention": ("efficient", "bhsd", False, 6, False, 5),
    "aten::_efficient_attention_forward": ("efficient", "bshd", False, 9, True, 8),
    "aten::_scaled_dot_product_efficient_attention_backward":
        ("efficient", "bhsd", True, 11, False, 9),
    "aten::_efficient_attention_backward": ("efficient", "bshd", True, 14, True, 11),
}


#: Fraction of the DRAM bandwidth cuDNN's Hopper attention forward (the persistent
#: ``sm90_flash_fprop_wgmma`` kernel: one 384-thread CTA per SM) streams K and V at when an
#: attention mask is applied to a short query: Little's law on one CTA's loads in flight, as
#: for aten's register softmax (``cta_sm_fraction`` = 0.4). Measured on H200
#: (data/programs/h200/masked_decode.jsonl, HF StaticCache's packed query (b, 8, 4, 128) over
#: 4097 keys under a (b, 1, 1, 4097) mask): 1.83 and 1.87 TB/s at batch 64 and 256 = 0.39 x
#: 4.8 TB/s; held out: batch 16 (1.67 TB/s) and the HF StaticCache decode programs. The same
#: kernel unmasked streams at 3.8 TB/s, and a one-token query takes the sm80 kernel (4.2-4.5
#: TB/s, masked or not): neither is capped.
MASKED_CTA_FRACTION = 0.39

#: Tile of that masked kernel (``cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma_f16_
#: knob_7_64x128x128_4x1x1``, the kernel the H200 StaticCache decode traces record): 64 query
#: rows x 128 keys per block; the grid holds one CTA (384 threads) per query tile, at most one
#: per SM (batch 1, 8 heads: 8 CTAs; batch 64: 132).
MASKED_TILE_ROWS = 64
MASKED_BLOCK_KEYS = 128

#: Dependent DRAM round trips per KV block of that kernel when few CTAs are resident, from its
#: structure: the S = Q K^T MMA waits for the block's K tile (1), the mask is applied to S from
#: the mask tile read with ordinary loads (1: a broadcast (b, 1, 1, kv) bias has no TMA
#: descriptor), and P V waits for the V tile (1). The unmasked kernel on the same packed
#: query (masked_decode.jsonl, batch 1: 62 us per call over 33 blocks, ~52 us on the GPU)
#: shows the K, V pair alone: ~2 round trips per block; the mask adds its load.
MASKED_ROUND_TRIPS_PER_BLOCK = 3

#: Round trips per query tile outside the KV loop: the Q tile's load before the first block,
#: the O tile's (and row statistics') store after the last.
MASKED_ROUND_TRIPS_PER_TILE = 2

#: Tile of cuDNN's sm90 attention backward (``..._sm90_flash_bprop_wgmma_f16_knob_26_64x64x128
#: _1x4x1``, the kernel the H200 train traces record): each CTA owns 64 keys and loops over
#: the queries in blocks of 64 rows.
MASKED_BPROP_KEYS = 64
MASKED_BPROP_BLOCK_ROWS = 64

#: Dependent round trips the mask adds per block of a long query (more than one tile of
#: queries), forward and backward: the K, V (backward: Q, dO) tiles arrive by TMA into a
#: pipelined buffer and overlap the MMAs, but the (b, 1, sq, kv) bias tile is read with
#: ordinary loads (no TMA descriptor, as for the short query) right before it is added to
#: the scores, so every block waits for it once; ``_core.masked_attention_chain_s(tiles,
#: SMs, blocks, 1, 0, CAT_STEP_S)`` on top of the unmasked kernel's time. On the H200
#: (HF's compiled train step, 1x32x4096x128 under a 1x1x4096x4096 mask) this predicts
#: 447 + 410 = 857 us forward (measured 824) and 1285 + 819 = 2104 us backward (measured
#: 2396: the backward's mask cost is ~1.4 round trips per block, not modelled).
MASKED_LONG_ROUND_TRIPS_PER_BLOCK = 1


def fused_attention(p: Pricer, q: TensorArg, k: TensorArg, v: TensorArg, causal: bool,
                    backward: bool, layout: str = "bhsd", backend: str = "auto",
                    masked: bool = False, dropout_p: float = 0.0) -> Priced:
    """One fused attention kernel (forward or backward) from Q, K, V of either layout;
    ``masked``: an attention mask is applied (see :data:`MASKED_CTA_FRACTION`);
    ``dropout_p``: dropout on the attention weights (the kernel draws random bits per score)."""
    dt = q.dtype_name
    if dt is None or len(q.shape) != 4 or len(k.shape) != 4 or len(v.shape) != 4:
        return None, f"attention: expected 4-d q, k, v of a known type, got {q}, {k}, {v}"
    if layout == "bhsd":
        b, h, sq, d = q.shape
        hk, skv = k.shape[1], k.shape[2]
    else:  # (batch, seq, heads, dim): the _flash_attention_* / _efficient_attention_* ops
        b, sq, h, d = q.shape
        skv, hk = k.shape[1], k.shape[2]
    dv = v.shape[-1]
    if min(b, h, sq, skv, d, dv) == 0:
        return [], "attention: empty"
    if hk == 0 or h % hk:
        return None, f"attention: {h} heads over {hk} kv heads"
    drop = dropout_p if 0.0 < dropout_p <= 1.0 else 0.0
    key = ("attn", b, h, hk, sq, skv, d, dv, causal, backward, dt, backend, drop > 0)
    kw: dict[str, Any] = {"flash": True} if backend == "auto" else {"backend": backend}
    e = p.cached(key, lambda: p.settle(attention(
        b, h, sq, skv, d, kv_heads=hk, v_head_dim=dv, causal=bool(causal), backward=backward,
        dtype=dt, hardware=p.hardware, efficiency=p.efficiency, dropout_p=drop, **kw)))
    how = (f"rl.attention({b}, {h}, {sq}, {skv}, {d}, kv_heads={hk}, v_head_dim={dv}, "
           f"causal={causal}, backward={backward}, dtype={dt!r}, backend={backend!r}"
           + (f", dropout_p={drop:g})" if drop else ")"))
    if masked and not backward and 1 < sq <= MASKED_TILE_ROWS and _runs_cudnn(
            p, b, h, hk, sq, skv, d, dt, backend):
        e, why = _masked_floor(p, e, key, q, k, v, b, h, sq, skv)
        how += why
    elif masked and sq > MASKED_TILE_ROWS and _runs_cudnn(p, b, h, hk, sq, skv, d, dt, backend):
        e, why = _masked_long(p, e, key, b, h, sq, skv, backward)
        how += why
    return [("attention", e)], how


def _masked_long(p: Pricer, e: Any, key: tuple[Any, ...], b: int, h: int, sq: int, skv: int,
                 backward: bool) -> tuple[Any, str]:
    """cuDNN's sm90 kernel on a long query under a mask: the unmasked kernel's time plus one
    dependent load of the mask tile per block (:data:`MASKED_LONG_ROUND_TRIPS_PER_BLOCK`),
    ``_core.masked_attention_chain_s(tiles, SMs, blocks, 1, 0, CAT_STEP_S)`` with one CTA per
    SM. Forward: ``tiles = b·h·ceil(sq / 64)``, ``blocks = ceil(skv / 128)``; backward:
    ``tiles = b·h·ceil(skv / 64)``, ``blocks = ceil(sq / 64)``. The mask's FLOPs and bytes
    (read from L2: one broadcast tile per block) are not counted apart."""
    if backward:
        tiles = b * h * -(-skv // MASKED_BPROP_KEYS)
        blocks = -(-sq // MASKED_BPROP_BLOCK_ROWS)
    else:
        tiles = b * h * -(-sq // MASKED_TILE_ROWS)
        blocks = -(-skv // MASKED_BLOCK_KEYS)
    chain = _core.masked_attention_chain_s(
        float(tiles), float(p.hardware.sms or 0), float(blocks),
        float(MASKED_LONG_ROUND_TRIPS_PER_BLOCK), 0.0, CAT_STEP_S)
    if chain <= 0.0:
        return e, ""
    e = p.cached(key + ("masked long",), lambda: dataclasses.replace(
        e, time_s=float(e.time_s) + chain))
    p.clocked.add(id(e))  # still a compute kernel: the limiter's clock reprices its compute
    return e, (f"; masked: + {MASKED_LONG_ROUND_TRIPS_PER_BLOCK} DRAM round trip per "
               f"{blocks}-block loop for the mask tile ({tiles} CTAs)")


def _masked_floor(p: Pricer, e: Any, key: tuple[Any, ...], q: TensorArg, k: TensorArg,
                  v: TensorArg, b: int, h: int, sq: int, skv: int) -> tuple[Any, str]:
    """cuDNN's sm90 forward on a short query under a mask: no faster than its K/V bytes at
    :data:`MASKED_CTA_FRACTION` of the DRAM bandwidth (many CTAs resident), nor than its
    latency chain plus the call's fixed time (``e.overhead_s``) when few are:
    ``_core.masked_attention_chain_s(b·h·ceil(sq / 64), SMs, ceil(skv / 128), 3, 2,
    CAT_STEP_S)``, one loaded DRAM round trip (:data:`.memory_entries.CAT_STEP_S`) per
    dependent load (:data:`MASKED_ROUND_TRIPS_PER_BLOCK`). The larger of the three."""
    bandwidth = (q.nbytes + k.nbytes + v.nbytes) / (
        MASKED_CTA_FRACTION * float(p.hardware.mem_bytes_per_s))
    tiles = b * h * -(-sq // MASKED_TILE_ROWS)
    chain = _core.masked_attention_chain_s(
        float(tiles), float(p.hardware.sms or 0), float(-(-skv // MASKED_BLOCK_KEYS)),
        float(MASKED_ROUND_TRIPS_PER_BLOCK), float(MASKED_ROUND_TRIPS_PER_TILE), CAT_STEP_S)
    latency = chain + max(float(e.overhead_s), 0.0)
    floor = max(bandwidth, latency)
    if floor <= float(e.time_s):
        return e, ""
    e = p.cached(key + ("masked",), lambda: dataclasses.replace(
        e, memory_s=max(float(e.memory_s), bandwidth), time_s=floor))
    if latency > bandwidth:
        return e, (f"; masked: cuDNN's sm90 kernel waits on {MASKED_ROUND_TRIPS_PER_BLOCK} "
                   f"DRAM round trips per {MASKED_BLOCK_KEYS}-key block ({tiles} CTAs)")
    return e, f"; masked: cuDNN's sm90 kernel streams K/V at {MASKED_CTA_FRACTION} x HBM"


def _runs_cudnn(p: Pricer, b: int, h: int, hk: int, sq: int, skv: int, d: int, dt: str,
                backend: str) -> bool:
    """Whether the call runs cuDNN's attention (forced, or what SDPA picks here)."""
    if backend != "auto":
        return backend == "cudnn"
    try:
        return bool(attention_backend(b, h, sq, skv, d, kv_heads=hk, dtype=dt,
                                      hardware=p.hardware) == "cudnn")
    except (TypeError, ValueError):
        return False


def _sdpa(call: Call, p: Pricer) -> Priced:
    backend, layout, backward, causal_i, mask_type, drop_i = _SDPA[call.name]
    q_i = 1 if backward else 0
    q, k, v = (call.tensor(q_i + j) for j in range(3))
    if q is None or k is None or v is None:
        return None, f"{call.name}: no q, k, v shapes"
    causal = flag(call.arg("custom_mask_type" if mask_type else "is_causal", causal_i, False))
    # cuDNN's forward records its attn_bias as the 4th input, its backward as the 9th
    bias = call.tensor(8 if backward else 3) if backend == "cudnn" else None
    masked = bias is not None and len(bias.shape) == 4
    drop = call.arg("dropout_p", drop_i)
    try:
        dropout = float(drop) if drop is not None else 0.0
    except (TypeError, ValueError):
        dropout = 0.0
    return fused_attention(p, q, k, v, causal, backward, layout, backend, masked, dropout)


for _name in _SDPA:
    register(_name, kind="attention", op="attention")(_sdpa)


def _other_attention(call: Call, p: Pricer) -> Priced:
    q, k, v = (call.arg(n) for n in ("query", "key", "value"))
    if not all(isinstance(t, TensorArg) for t in (q, k, v)):
        return None, f"{call.name}: no q, k, v"
    layout = "bhsd" if call.base.startswith("_scaled_dot_product") else "bshd"
    return fused_attention(p, q, k, v, flag(call.arg("is_causal", default=False)),
                           call.base.endswith("_backward"), layout)


register_family("attention ops with a query", lambda c: "attention" in c.base
                and "query" in c.args, "attention", "attention", _other_attention)


def _sdpa_fused(call: Call, p: Pricer) -> Priced:
    """``F.scaled_dot_product_attention`` as the one fused kernel SDPA dispatches to on a GPU
    (the backend ``rl.attention`` picks for the shape and dtype): what ``roofline.torch`` records
    for every SDPA call, and what ``transformer.estimate(runtime="hf")`` lists."""
    q, k, v = (call.arg(n) for n in ("query", "key", "value"))
    if not all(isinstance(t, TensorArg) for t in (q, k, v)):
        return None, f"{call.name}: no q, k, v"
    mask = call.arg("attn_mask")
    return fused_attention(p, q, k, v, flag(call.arg("is_causal", default=False)),
                           call.base.endswith("_backward"),
                           masked=mask is not None and mask is not False)


register("roofline::sdpa", "roofline::sdpa_backward", kind="attention", op="attention")(
    _sdpa_fused)
