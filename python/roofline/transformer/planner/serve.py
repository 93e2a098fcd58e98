"""Serving over batch sizes: continuous batching, chunked prefill, speculative decoding."""

from __future__ import annotations

from typing import Any

from ... import _core
from ..._errors import ArgumentValueError
from ...hardware import hardware as _hardware
from ..arguments import MAX_SEQ, batch_sizes
from ..config import TransformerConfig, config
from ..estimate import estimate
from .cost import dollars_per_million_tokens

__all__ = ["serve"]

_BATCHES = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512)


def _check(fn: str, name: str, value: Any, lo: float, hi: float | None = None,
           integer: bool = False) -> None:
    ok = isinstance(value, (int, float)) and not isinstance(value, bool)
    if ok and integer:
        ok = isinstance(value, int)
    if not ok or value < lo or (hi is not None and value > hi):
        rng = f"[{lo}, {hi}]" if hi is not None else f">= {lo}"
        kind = "an integer" if integer else "a number"
        raise ArgumentValueError(fn, name, f"must be {kind} {rng}, got {value!r}")


def serve(model: TransformerConfig | str, hardware: Any = None, *, prompt_len: int = 2048,
          output_len: int = 512, batches: Any = _BATCHES, tp: int = 1, ep: int = 1,
          chunk_tokens: int | None = None, spec_k: int = 0, spec_alpha: float = 0.7,
          draft_model: TransformerConfig | str | None = None,
          linear_recipe: str | None = None, kv_dtype: str | None = None,
          memory_fraction: float = 0.9, price_per_gpu_hour: float | None = None,
          gpus_per_node: int | None = None, routing_skew: float = 0.0,
          efficiency: Any = "default") -> Any:
    """Serve a model with continuous batching: one row per batch size.

    Parameters
    ----------
    model : TransformerConfig or str
        The served model.
    hardware : Hardware or str
        Accelerator.
    prompt_len, output_len : int
        Tokens per request in and out.
    batches : sequence of int
        Concurrent sequences per GPU group to tabulate (per GPU with ``ep > 1``).
    tp, ep : int
        Tensor / expert parallelism of one replica (``tp`` GPUs, or ``ep`` GPUs with data-
        parallel attention).
    chunk_tokens : int, optional
        Chunked prefill: prompt tokens mixed into each decode step (default: whole prompts
        prefilled on their own).
    spec_k, spec_alpha, draft_model : int, float, model
        Speculative decoding: draft length ``k`` (0 = off), per-token acceptance ``alpha``,
        draft model (default: none, i.e. a free draft such as n-gram lookup; DeepSeek-V3's
        MTP module is close to one extra layer).
    memory_fraction : float
        Share of GPU memory usable for weights and KV cache.
    price_per_gpu_hour : float, optional
        Adds ``usd_per_m_tokens`` (output tokens).

    Returns
    -------
    pandas.DataFrame
        ``batch``, ``kv_len``, ``decode_step_s``, ``tpot_s``, ``ttft_s``, ``tokens_per_s``
        (one replica), ``tokens_per_s_per_gpu``, ``weights_gb``, ``kv_cache_gb``,
        ``memory_gb``, ``fits``, and ``max_batch`` (KV-cache capacity) in ``df.attrs``.

    Notes
    -----
    Steady state of continuous batching: ``B`` sequences decode at the mean context
    ``prompt + output/2``; every finished sequence is replaced, so per ``output_len`` decode
    steps the replica also prefills ``B`` prompts. Tokens/s = ``B·out / (out·t_step +
    B·t_prefill)``; TPOT = ``t_step + B·t_prefill/out`` (prefill work spread over the steps,
    which is what chunked prefill does); TTFT = ``t_prefill`` alone, or with chunked prefill
    ``ceil(prompt/chunk)`` mixed steps of ``t_step + chunk/prompt·t_prefill``. Speculative
    decoding: a step drafts ``k`` tokens (``k`` draft decode steps) and verifies them in one
    target step of ``q_len = k+1``, emitting ``(1-α^(k+1))/(1-α)`` tokens on average.
    KV-cache capacity: ``floor((capacity·fraction - weights) / kv_per_sequence)`` at the full
    context ``prompt + output``.
    """
    import pandas as pd

    fn = "transformer.serve"
    cfg = config(model)
    hw = _hardware(hardware)
    _check(fn, "prompt_len", prompt_len, 1, MAX_SEQ, integer=True)
    _check(fn, "output_len", output_len, 1, MAX_SEQ, integer=True)
    _check(fn, "spec_k", spec_k, 0, 16, integer=True)
    _check(fn, "spec_alpha", spec_alpha, 0.0, 1.0)
    _check(fn, "memory_fraction", memory_fraction, 0.05, 1.0)
    if chunk_tokens is not None:
        _check(fn, "chunk_tokens", chunk_tokens, 1, MAX_SEQ, integer=True)
    bs = batch_sizes(fn, "batches", batches)
    kw: dict[str, Any] = dict(hardware=hw, tp=tp, ep=ep, linear_recipe=linear_recipe,
                              kv_dtype=kv_dtype, routing_skew=routing_skew,
                              gpus_per_node=gpus_per_node, efficiency=efficiency)
    replica = ep if ep > 1 else tp
    per_replica = ep if ep > 1 else 1  # with ep, `batch` is per GPU
    kv_mean = prompt_len + max(output_len // 2, 1)
    prefill = estimate(cfg, "prefill", 1, seq_len=prompt_len, **kw)
    full = estimate(cfg, "decode", 1, kv_len=prompt_len + output_len, **kw)
    kv_per_seq = full.memory["kv_cache_bytes"]
    weights = full.memory["weights_bytes"]
    if hw.mem_capacity_bytes is None:
        raise ValueError(f"{fn}: {hw.name} has no mem_capacity_bytes in the database; pass "
                         "hardware=hw.replace(mem_capacity_bytes=...)")
    max_batch = int(_core.kv_capacity_sequences(hw.mem_capacity_bytes, memory_fraction,
                                                weights, kv_per_seq))
    draft = None if draft_model is None else config(draft_model)
    rows = []
    for b in bs:
        q = spec_k + 1
        dec = estimate(cfg, "decode", b, kv_len=kv_mean + spec_k, q_len=q, **kw)
        step = dec.time_s
        if spec_k:
            draft_s = 0.0 if draft is None else estimate(
                draft, "decode", b, kv_len=kv_mean, hardware=hw, tp=tp,
                efficiency=efficiency).time_s
            per_token = float(_core.speculative_tpot_s(spec_k, spec_alpha, draft_s, step))
            emitted = float(_core.speculative_tokens_per_step(spec_k, spec_alpha))
        else:
            per_token, emitted = step, 1.0
        # prefill of the b prompts that replace finished sequences, spread over the steps
        pre_s = prefill.time_s * b
        tpot = per_token + pre_s / output_len
        if chunk_tokens is None:
            ttft = prefill.time_s
        else:
            mixed = step + chunk_tokens / prompt_len * prefill.time_s
            ttft = float(_core.chunked_prefill_ttft_s(prompt_len, chunk_tokens, mixed))
        tok_s = b * per_replica * output_len / (output_len * per_token + pre_s)
        mem = weights + kv_per_seq * b
        rows.append({"batch": b, "kv_len": kv_mean, "decode_step_s": step,
                     "tokens_per_step": emitted, "tpot_s": tpot, "ttft_s": ttft,
                     "tokens_per_s": tok_s, "tokens_per_s_per_gpu": tok_s / replica,
                     "weights_gb": weights / 1e9, "kv_cache_gb": kv_per_seq * b / 1e9,
                     "memory_gb": mem / 1e9,
                     "fits": mem <= (hw.mem_capacity_bytes or 0.0) * memory_fraction})
    df = pd.DataFrame(rows)
    if price_per_gpu_hour is not None:
        df["usd_per_m_tokens"] = dollars_per_million_tokens(price_per_gpu_hour, replica,
                                                            df["tokens_per_s"])
    df.attrs.update(max_batch=max_batch, model=cfg.name, hardware=hw.name, tp=tp, ep=ep,
                    gpus=replica, prefill_s=prefill.time_s)
    return df
