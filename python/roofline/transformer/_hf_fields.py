"""Reading Hugging Face ``config.json`` fields for :func:`roofline.transformer.config.from_hf`:
typed getters with clear errors and the per-layer attention kinds (sliding / chunked)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

__all__ = ["HF_LAYER_TYPES", "get", "hf_attention", "hf_bool", "hf_float", "hf_int",
           "hf_rope_mscale"]

#: HF ``layer_types`` spellings -> TransformerConfig attention kinds.
HF_LAYER_TYPES = {"full_attention": "full", "sliding_attention": "sliding",
                  "chunked_attention": "chunked"}


def get(cfg: Mapping[str, Any], *keys: str, default: Any = None) -> Any:
    for k in keys:
        if k in cfg and cfg[k] is not None:
            return cfg[k]
    return default


def hf_int(fn: str, key: str, v: Any) -> int:
    """An integer field of an HF config: an int or an integral float (JSON writes 4096.0)."""
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise TypeError(f"{fn}: {key} must be an integer, got {v!r:.60}")
    if isinstance(v, float):
        if not (math.isfinite(v) and v.is_integer()):
            raise ValueError(f"{fn}: {key} must be an integer, got {v!r}")
        v = int(v)
    if not 0 <= v <= 2**53:
        raise ValueError(f"{fn}: {key} must be a non-negative integer no larger than 2**53, "
                         f"got {str(v)[:40]}")
    return int(v)


def hf_float(fn: str, key: str, v: Any) -> float:
    """A non-negative finite number of an HF config."""
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise TypeError(f"{fn}: {key} must be a number, got {v!r:.60}")
    if not (math.isfinite(v) and v >= 0):
        raise ValueError(f"{fn}: {key} must be a finite non-negative number, got {v!r}")
    return float(v)


def hf_rope_mscale(fn: str, scaling: Any) -> float:
    """YaRN's attention factor from an HF ``rope_scaling`` (1.0 for any other RoPE).

    As Megatron-Core (``yarn_rotary_pos_embedding.py``, ``_yarn_get_concentration_factor``)
    and transformers (``_compute_yarn_parameters``) compute it: ``attention_factor`` when
    given, else ``m(factor, mscale) / m(factor, mscale_all_dim)`` when both are given, else
    ``m(factor, 1)``, with ``m(s, k) = 0.1·k·ln s + 1`` (1 for ``s <= 1``). DeepSeek-V3
    (mscale = mscale_all_dim = 1): 1; GPT-OSS (factor 32): ``0.1·ln 32 + 1 = 1.3466``.
    """
    if scaling is None:
        return 1.0
    if not isinstance(scaling, Mapping):
        raise TypeError(f"{fn}: rope_scaling must be an object, got {scaling!r:.60}")
    if get(scaling, "rope_type", "type") != "yarn":
        return 1.0
    given = get(scaling, "attention_factor")
    if given is not None:
        out = hf_float(fn, "rope_scaling.attention_factor", given)
    else:
        factor = hf_float(fn, "rope_scaling.factor", get(scaling, "factor", default=1.0))

        def m(k: float) -> float:
            return 0.1 * k * math.log(factor) + 1.0 if factor > 1.0 else 1.0

        ms, ms_all = get(scaling, "mscale"), get(scaling, "mscale_all_dim")
        if ms is not None and ms_all is not None:
            out = (m(hf_float(fn, "rope_scaling.mscale", ms))
                   / m(hf_float(fn, "rope_scaling.mscale_all_dim", ms_all)))
        else:
            out = m(1.0)
    if not out > 0:
        raise ValueError(f"{fn}: rope_scaling gives a YaRN attention factor of {out!r}; it "
                         f"must be positive")
    return out


def hf_bool(fn: str, key: str, v: Any) -> bool:
    if not isinstance(v, bool):
        raise TypeError(f"{fn}: {key} must be a JSON boolean (true/false), got {v!r:.60}")
    return v


def hf_attention(fn: str, cfg: Mapping[str, Any], model_type: str, layers: int, num: Any
                  ) -> tuple[tuple[str, ...], int, int]:
    """``(layer_types, sliding_window, attention_chunk)`` of an HF config (see from_hf)."""
    raw = get(cfg, "layer_types")
    window = num("sliding_window", default=0)
    chunk = num("attention_chunk_size", default=0)
    if raw is None and model_type == "llama4_text" and chunk:
        nope = get(cfg, "no_rope_layers")
        if nope is None:
            every = num("no_rope_layer_interval", default=4, positive=True)
            nope = [int((i + 1) % every != 0) for i in range(layers)]
        if isinstance(nope, (str, bytes)) or not isinstance(nope, (list, tuple)):
            raise TypeError(f"{fn}: no_rope_layers must be a list, got {nope!r:.60}")
        raw = ["chunked_attention" if r else "full_attention" for r in nope]
    if raw is None:
        if model_type == "mistral" and window:
            return ("sliding",) * layers, window, 0
        return (), 0, 0
    if isinstance(raw, (str, bytes)) or not isinstance(raw, (list, tuple)):
        raise TypeError(f"{fn}: layer_types must be a list of strings, got {raw!r:.60}")
    if len(raw) != layers:  # (an all-full list used to pass unchecked, at any length)
        raise ValueError(f"{fn}: layer_types must have one entry per layer "
                         f"(num_hidden_layers={layers}), got {len(raw)}")
    bad = sorted({str(t)[:30] for t in raw
                  if not isinstance(t, str) or t not in HF_LAYER_TYPES})
    if bad:
        raise ValueError(f"{fn}: layer_types entries must be one of {tuple(HF_LAYER_TYPES)}, "
                         f"got {bad}")
    types = tuple(HF_LAYER_TYPES[t] for t in raw)
    if "sliding" not in types:
        window = 0
    if "chunked" not in types:
        chunk = 0
    if all(t == "full" for t in types):
        types = ()
    return types, window, chunk
