"""Transformer configurations: built-ins from public config.json files, or your own."""

from __future__ import annotations

import dataclasses
import functools
import json
import math
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .._checks import one_of
from .._errors import MissingKeyError
from ._hf_fields import get, hf_attention, hf_bool, hf_float, hf_int, hf_rope_mscale

__all__ = ["TransformerConfig", "config", "from_hf", "list_configs"]

_CONFIG_DIR = Path(__file__).resolve().parent / "configs"
_NORMS = ("rmsnorm", "layernorm")
_PLAIN_ACTS = ("gelu", "gelu_new", "gelu_pytorch_tanh", "gelu_fast", "relu", "quick_gelu")
#: Attention kinds of a layer: all keys (causal), the last ``sliding_window`` keys, or the keys
#: of the query's own ``attention_chunk``-token chunk.
ATTENTION_KINDS = ("full", "sliding", "chunked")


@dataclass(frozen=True)
class TransformerConfig:
    """Shape of a decoder-only transformer: attention (MHA/GQA/MQA or MLA), dense or MoE MLP.

    Parameters
    ----------
    name : str
        Display name.
    hidden_size, num_layers, num_heads : int
        Model width, decoder layers, query heads.
    num_kv_heads : int
        Key/value heads (``num_heads`` for MHA, 1 for MQA); must divide ``num_heads``.
    head_dim : int
        Query/key/value head dimension (``hidden_size // num_heads`` unless set).
    intermediate_size : int
        Dense MLP width.
    vocab_size : int
        Vocabulary (0: no embedding / LM head, e.g. for a block-only study).
    mlp_gated : bool
        SwiGLU-style MLP (gate, up, down: 3 matrices) instead of up/down (2 matrices).
    norm : {"rmsnorm", "layernorm"}
        Normalisation (weights only; biases are not modeled).
    tie_embeddings : bool
        The LM head shares the embedding matrix.
    rope, qk_norm : bool
        Rotary embeddings on Q and K; RMSNorm of Q and K per head (Qwen3).
    kv_lora_rank, q_lora_rank, qk_nope_head_dim, qk_rope_head_dim, v_head_dim : int
        Multi-head latent attention (DeepSeek-V2/V3) when ``kv_lora_rank > 0``;
        ``q_lora_rank = 0`` means a plain Q projection.
    num_experts, experts_per_token, moe_intermediate_size, num_shared_experts : int
        Mixture of experts when ``num_experts > 0``: routed experts (at most
        :data:`MAX_EXPERTS`), top-k, expert width, always-on shared experts of the same width.
    dense_layers : tuple of int
        Indices of layers with a dense MLP in an MoE model (DeepSeek-V3: 0, 1, 2).
    layer_types : tuple of str
        Attention of each layer, ``"full"``, ``"sliding"`` or ``"chunked"`` (empty: all
        full). A sliding layer's query sees the last ``min(kv_len, sliding_window)`` keys
        (GPT-OSS: 128, every other layer); a chunked layer's query sees the keys of its own
        ``attention_chunk``-token chunk (Llama 4: 8192, three layers of four).
    sliding_window, attention_chunk : int
        Window of the sliding layers and chunk of the chunked layers (needed when used).
    attention_sinks : bool
        A learned sink logit per head in the softmax (GPT-OSS): ``num_heads`` parameters per
        layer, no measurable work.
    attention_bias, mlp_bias : bool
        Biases on the Q/K/V/O projections; on the MLP, expert and router projections.
    glu_limit : float
        Clamp of a gated MLP's two halves before the activation (GPT-OSS's
        ``swiglu_limit`` 7.0: the gate at most ``glu_limit``, the linear half within
        ``±glu_limit``); 0: none. Same FLOPs; Megatron-Core runs the clamps unfused.
    rope_mscale : float
        YaRN's attention factor multiplying RoPE's cosines and sines (GPT-OSS: factor 32,
        ``0.1·ln 32 + 1 = 1.347``); 1: none. Same math; Megatron-Core's fused RoPE does not
        take it (unfused RoPE when it is not 1).
    mtp_layers : int
        Multi-token-prediction modules (DeepSeek-V3: 1), run in training only. Each is two
        norms, a ``2·hidden x hidden`` projection, one more block of the last layer's kind
        and the shared LM head again with its loss; their parameters are
        ``param_counts()["mtp"]``, outside ``total`` (DeepSeek-V3's published 671B
        excludes them). From 0 (default) to :data:`MAX_LAYERS`.
    source : str
        Where the numbers come from (a Hugging Face repository for built-ins).

    Notes
    -----
    Linear layers have no biases unless ``attention_bias`` / ``mlp_bias``.
    """

    name: str
    hidden_size: int
    num_layers: int
    num_heads: int
    num_kv_heads: int
    head_dim: int
    intermediate_size: int
    vocab_size: int
    mlp_gated: bool = True
    norm: str = "rmsnorm"
    tie_embeddings: bool = False
    rope: bool = True
    qk_norm: bool = False
    kv_lora_rank: int = 0
    q_lora_rank: int = 0
    qk_nope_head_dim: int = 0
    qk_rope_head_dim: int = 0
    v_head_dim: int = 0
    num_experts: int = 0
    experts_per_token: int = 0
    moe_intermediate_size: int = 0
    num_shared_experts: int = 0
    dense_layers: tuple[int, ...] = ()
    layer_types: tuple[str, ...] = ()
    sliding_window: int = 0
    attention_chunk: int = 0
    attention_sinks: bool = False
    attention_bias: bool = False
    mlp_bias: bool = False
    glu_limit: float = 0.0
    rope_mscale: float = 1.0
    mtp_layers: int = 0
    source: str = ""

    def __post_init__(self) -> None:
        fn = "TransformerConfig"
        for f in dataclasses.fields(self):
            v = getattr(self, f.name)
            if f.type == "int":
                if isinstance(v, bool) or not isinstance(v, int):
                    raise TypeError(f"{fn}: {f.name} must be an int, got {v!r}")
                minimum = 1 if f.name in _REQUIRED_POSITIVE else 0
                top = (MAX_LAYERS if f.name in ("num_layers", "mtp_layers") else
                       MAX_EXPERTS if f.name == "num_experts" else 2**53)
                if not minimum <= v <= top:
                    kind = "positive" if minimum else "non-negative"
                    raise ValueError(f"{fn}: {f.name} must be a {kind} integer no larger than "
                                     f"{top}, got {str(v)[:40]}")
            elif f.type == "bool" and not isinstance(v, bool):
                raise TypeError(f"{fn}: {f.name} must be a bool, got {v!r}")
            elif f.type == "float":
                if isinstance(v, bool) or not isinstance(v, (int, float)):
                    raise TypeError(f"{fn}: {f.name} must be a number, got {v!r:.60}")
                low = 0.0 if f.name == "glu_limit" else 1e-9
                if not (math.isfinite(v) and v >= low):
                    kind = "non-negative" if low == 0.0 else "positive"
                    raise ValueError(f"{fn}: {f.name} must be a finite {kind} number, got "
                                     f"{v!r}")
                object.__setattr__(self, f.name, float(v))
        if self.norm not in _NORMS:
            raise ValueError(f"{fn}: norm must be one of {_NORMS}, got {self.norm!r}")
        if self.num_heads % self.num_kv_heads:
            raise ValueError(
                f"{fn}: num_kv_heads must divide num_heads, got num_kv_heads="
                f"{self.num_kv_heads}, num_heads={self.num_heads}"
            )
        if self.is_mla and (self.qk_nope_head_dim + self.qk_rope_head_dim == 0
                            or self.v_head_dim == 0):
            raise ValueError(
                f"{fn}: MLA (kv_lora_rank={self.kv_lora_rank}) needs qk_nope_head_dim + "
                f"qk_rope_head_dim > 0 and v_head_dim > 0"
            )
        if self.is_moe:
            if not 0 < self.experts_per_token <= self.num_experts:
                raise ValueError(
                    f"{fn}: experts_per_token must be in 1..num_experts ({self.num_experts}), "
                    f"got {self.experts_per_token}"
                )
            if self.moe_intermediate_size <= 0:
                raise ValueError(
                    f"{fn}: moe_intermediate_size must be positive for an MoE model, got "
                    f"{self.moe_intermediate_size}"
                )
        if isinstance(self.dense_layers, (str, bytes)) or not isinstance(
                self.dense_layers, (tuple, list, set, frozenset, range)):
            raise TypeError(f"{fn}: dense_layers must be a tuple of layer indices (int), got "
                            f"{self.dense_layers!r}")
        for i in self.dense_layers:
            if isinstance(i, bool) or not isinstance(i, int):
                raise TypeError(f"{fn}: dense_layers must hold layer indices (int), got {i!r}")
        dense = tuple(int(i) for i in self.dense_layers)
        bad = [i for i in dense if not 0 <= i < self.num_layers]
        if bad:
            raise ValueError(
                f"{fn}: dense_layers must be layer indices in 0..{self.num_layers - 1}, got {bad}"
            )
        object.__setattr__(self, "dense_layers", tuple(sorted(set(dense))))
        self._check_layer_types(fn)

    def _check_layer_types(self, fn: str) -> None:
        types = self.layer_types
        if isinstance(types, (str, bytes)) or not isinstance(types, (tuple, list)):
            raise TypeError(f"{fn}: layer_types must be a tuple of {ATTENTION_KINDS}, got "
                            f"{types!r:.60}")
        if types and len(types) != self.num_layers:
            raise ValueError(f"{fn}: layer_types must have one entry per layer "
                             f"({self.num_layers}), got {len(types)}")
        bad = sorted({str(t)[:20] for t in types if t not in ATTENTION_KINDS})
        if bad:
            raise ValueError(f"{fn}: layer_types entries must be one of {ATTENTION_KINDS}, "
                             f"got {bad}")
        object.__setattr__(self, "layer_types", tuple(types))
        for kind, size in (("sliding", "sliding_window"), ("chunked", "attention_chunk")):
            if kind in types and getattr(self, size) < 1:
                raise ValueError(f"{fn}: {kind} layers need {size} >= 1, got "
                                 f"{getattr(self, size)}")

    # ----------------------------------------------------------------- structure

    @property
    def is_mla(self) -> bool:
        """Multi-head latent attention (a compressed KV cache)."""
        return self.kv_lora_rank > 0

    @property
    def is_moe(self) -> bool:
        """Mixture-of-experts MLP in (some) layers."""
        return self.num_experts > 0

    def layer_kinds(self) -> list[str]:
        """``"dense"`` or ``"moe"`` for each layer."""
        if not self.is_moe:
            return ["dense"] * self.num_layers
        dense = set(self.dense_layers)
        return ["dense" if i in dense else "moe" for i in range(self.num_layers)]

    def layer_attention(self) -> list[str]:
        """``"full"``, ``"sliding"`` or ``"chunked"`` for each layer."""
        return list(self.layer_types) or ["full"] * self.num_layers

    def attention_span(self, kind: str, kv_len: int) -> int:
        """Keys a layer of attention ``kind`` keeps for a sequence of ``kv_len`` tokens:
        ``kv_len`` (full), ``min(kv_len, sliding_window)``, ``min(kv_len, attention_chunk)``
        (what a KV cache holds for it, at most)."""
        if kind == "sliding":
            return min(kv_len, self.sliding_window)
        if kind == "chunked":
            return min(kv_len, self.attention_chunk)
        return kv_len

    def kv_cache_bytes_per_token(self, dtype_bytes: float = 2.0) -> float:
        """KV-cache bytes of one token in one layer (all kv heads, unsharded).

        GQA/MHA/MQA: ``2·num_kv_heads·head_dim`` elements (K and V); MLA: the latent
        ``kv_lora_rank + qk_rope_head_dim`` elements (one shared cache).
        """
        if self.is_mla:
            return (self.kv_lora_rank + self.qk_rope_head_dim) * dtype_bytes
        return 2.0 * self.num_kv_heads * self.head_dim * dtype_bytes

    def kv_cache_bytes(self, batch: int, seq_len: int, dtype_bytes: float = 2.0) -> float:
        """KV cache of ``batch`` sequences of ``seq_len`` tokens over all layers, in bytes
        (sliding / chunked layers keep ``attention_span`` tokens)."""
        kept = sum(self.attention_span(k, seq_len) for k in self.layer_attention())
        return batch * kept * self.kv_cache_bytes_per_token(dtype_bytes)

    # ----------------------------------------------------------------- parameters

    def attention_params(self) -> int:
        """Weights of one attention block: projections (with their biases when
        ``attention_bias``) and the per-head sinks when ``attention_sinks``."""
        h, d = self.hidden_size, self.head_dim
        if not self.is_mla:
            extra = self.num_heads if self.attention_sinks else 0
            if self.attention_bias:
                extra += (self.num_heads + 2 * self.num_kv_heads) * d + h
            return h * (self.num_heads + 2 * self.num_kv_heads) * d + self.num_heads * d * h + extra
        qk = self.qk_nope_head_dim + self.qk_rope_head_dim
        heads = self.num_heads
        if self.q_lora_rank:
            q = h * self.q_lora_rank + self.q_lora_rank * heads * qk
        else:
            q = h * heads * qk
        kv_a = h * (self.kv_lora_rank + self.qk_rope_head_dim)
        kv_b = self.kv_lora_rank * heads * (self.qk_nope_head_dim + self.v_head_dim)
        o = heads * self.v_head_dim * h
        return q + kv_a + kv_b + o

    def mlp_params(self, width: int | None = None) -> int:
        """Weights of one MLP (dense by default, or one expert of ``width``), with biases when
        ``mlp_bias``."""
        w = self.intermediate_size if width is None else width
        bias = ((2 if self.mlp_gated else 1) * w + self.hidden_size) if self.mlp_bias else 0
        return (3 if self.mlp_gated else 2) * self.hidden_size * w + bias

    def norm_params(self) -> int:
        """Norm weights of one layer (2 norms; MLA and qk-norm add theirs)."""
        n = 2 * self.hidden_size
        if self.is_mla:
            n += self.kv_lora_rank + self.q_lora_rank
        if self.qk_norm:
            n += 2 * self.head_dim
        return n

    def param_counts(self) -> dict[str, int]:
        """Parameter counts by component, with ``total`` and ``active`` (per token).

        Returns
        -------
        dict
            ``embedding``, ``lm_head`` (0 when tied), ``attention``, ``mlp`` (dense MLPs),
            ``experts`` (routed), ``shared_experts``, ``router``, ``norms``, ``total`` and
            ``active`` (routed experts counted ``experts_per_token`` of ``num_experts``).
        """
        kinds = self.layer_kinds()
        n_moe = kinds.count("moe")
        n_dense = len(kinds) - n_moe
        expert = self.mlp_params(self.moe_intermediate_size) if self.is_moe else 0
        counts = {
            "embedding": self.vocab_size * self.hidden_size,
            "lm_head": 0 if self.tie_embeddings else self.vocab_size * self.hidden_size,
            "attention": self.num_layers * self.attention_params(),
            "mlp": n_dense * self.mlp_params(),
            "experts": n_moe * self.num_experts * expert,
            "shared_experts": n_moe * self.num_shared_experts * expert,
            "router": n_moe * self.num_experts * (self.hidden_size + self.mlp_bias),
            "norms": self.num_layers * self.norm_params() + self.hidden_size,
        }
        counts["total"] = sum(counts.values())
        counts["active"] = counts["total"] - counts["experts"] + (
            n_moe * self.experts_per_token * expert
        )
        counts["mtp"] = sum(self.mtp_param_counts().values())
        return counts

    def mtp_param_counts(self) -> dict[str, int]:
        """Parameters of the multi-token-prediction modules by component (all zero without).

        Each module: ``enorm``, ``hnorm`` and the final norm of its head (``3·hidden``), the
        ``eh_proj`` (``2·hidden·hidden``) and one decoder block of the last layer's kind; the
        embedding and LM head are shared with the model (a checkpoint may store copies).
        """
        n, h = self.mtp_layers, self.hidden_size
        moe = bool(self.num_layers) and self.layer_kinds()[-1] == "moe"
        expert = self.mlp_params(self.moe_intermediate_size) if moe else 0
        return {
            "attention": n * self.attention_params(),
            "mlp": 0 if moe else n * self.mlp_params(),
            "experts": n * self.num_experts * expert,
            "shared_experts": n * self.num_shared_experts * expert,
            "router": n * self.num_experts * (h + self.mlp_bias) if moe else 0,
            "eh_proj": n * 2 * h * h,
            "norms": n * (self.norm_params() + 3 * h),
        }

    def replace(self, **changes: Any) -> TransformerConfig:
        """A copy with some fields changed (validated again)."""
        return dataclasses.replace(self, **changes)

    def __repr__(self) -> str:
        c = self.param_counts()
        kind = "MLA" if self.is_mla else f"{self.num_heads}q/{self.num_kv_heads}kv heads"
        moe = (f", MoE {self.num_experts}x top-{self.experts_per_token}"
               if self.is_moe else "")
        return (f"TransformerConfig({self.name}: {self.num_layers} layers, hidden "
                f"{self.hidden_size}, {kind}{moe}, {c['total'] / 1e9:.3g}B params)")


_REQUIRED_POSITIVE = {
    "hidden_size", "num_layers", "num_heads", "num_kv_heads", "head_dim", "intermediate_size",
}




#: Most layers a config may have (from_hf and TransformerConfig): far above any model built,
#: and small enough that per-layer lists stay cheap.
MAX_LAYERS = 100_000
#: Most routed experts a config may have: 400x DeepSeek-V3's 256, and small enough that the
#: per-expert token counts an MoE layer prices stay cheap (2**31 experts took minutes).
MAX_EXPERTS = 100_000


def from_hf(source: Mapping[str, Any] | str | os.PathLike[str], name: str | None = None
            ) -> TransformerConfig:
    """Build a :class:`TransformerConfig` from a Hugging Face ``config.json``.

    Parameters
    ----------
    source : dict, str or path
        The parsed config, or the path of a ``config.json`` (or of a directory holding one).
    name : str, optional
        Display name (default: ``_name_or_path``, ``model_type`` or the file name).

    Notes
    -----
    Reads the Llama / Mistral / Mixtral / Qwen2-3 (MoE) / DeepSeek-V2-V3 / GPT-2 spellings:
    ``hidden_size`` (``n_embd``), ``num_hidden_layers`` (``n_layer``),
    ``num_attention_heads`` (``n_head``), ``num_key_value_heads`` (default: the heads),
    ``head_dim`` (default ``hidden_size // heads``), ``intermediate_size`` (``n_inner``,
    default 4x hidden), ``vocab_size``, ``tie_word_embeddings`` (default False),
    ``hidden_act`` (GELU/ReLU → a 2-matrix MLP, else gated), experts from
    ``num_local_experts`` / ``n_routed_experts`` / ``num_experts`` with
    ``num_experts_per_tok``, ``moe_intermediate_size``, ``n_shared_experts``,
    ``first_k_dense_replace`` / ``moe_layer_freq`` (DeepSeek) or ``decoder_sparse_step`` /
    ``mlp_only_layers`` (Qwen), and MLA from ``kv_lora_rank``, ``q_lora_rank``,
    ``qk_nope_head_dim``, ``qk_rope_head_dim``, ``v_head_dim``; DeepSeek-V3's MTP modules
    from ``num_nextn_predict_layers``.

    Also GPT-OSS (``model_type`` ``gpt_oss``: ``layer_types`` of ``sliding_attention`` /
    ``full_attention`` with ``sliding_window``, attention sinks, ``attention_bias``, expert
    and router biases, ``experts_per_token``, ``swiglu_limit`` as ``glu_limit``) and Llama 4
    (``llama4`` with a ``text_config``, or ``llama4_text``: ``moe_layers`` or
    ``interleave_moe_layer_step``, a shared expert, the
    experts' width ``intermediate_size`` and the dense layers' ``intermediate_size_mlp``,
    ``chunked_attention`` layers from ``layer_types`` or ``no_rope_layers`` with
    ``attention_chunk_size``; vision weights are not read). ``layer_types`` is read for any
    model; a YaRN ``rope_scaling`` gives ``rope_mscale`` (:func:`._hf_fields.hf_rope_mscale`);
    a Mistral config's ``sliding_window`` applies to every layer; Qwen's
    ``sliding_window`` is ignored unless ``use_sliding_window`` (then read ``layer_types``).
    """
    fn = "from_hf"
    cfg: Mapping[str, Any]
    if isinstance(source, Mapping):
        cfg = source
        default_name = str(get(cfg, "_name", "_name_or_path", "model_type", default="custom"))
    elif isinstance(source, (str, os.PathLike)):
        path = Path(source)
        if path.is_dir():
            path = path / "config.json"
        if not path.is_file():
            raise FileNotFoundError(f"{fn}: no config file at {str(path)!r}")
        try:
            cfg = json.loads(path.read_text(encoding="utf-8"))
        except (ValueError, RecursionError) as exc:  # bad JSON / UTF-8, deep nesting, huge ints
            raise ValueError(f"{fn}: {str(path)!r} is not valid JSON: {str(exc)[:100]}") from None
        if not isinstance(cfg, Mapping):
            raise ValueError(f"{fn}: {str(path)!r} must hold a JSON object")
        default_name = str(get(cfg, "_name", "_name_or_path", default=path.parent.name))
    else:
        raise TypeError(f"{fn}: source must be a dict or a path, got {source!r}")

    if str(cfg.get("model_type", "")) == "llama4" and isinstance(cfg.get("text_config"),
                                                                  Mapping):
        cfg = {**cfg["text_config"], "model_type": "llama4_text",
               "_source": cfg.get("_source", "")}

    def need(*keys: str) -> Any:
        v = get(cfg, *keys)
        if v is None:
            raise MissingKeyError(fn, keys[0], f"is missing: the config has none of {keys}")
        return v

    model_type = str(cfg.get("model_type", ""))

    def num(*keys: str, default: Any = None, required: bool = False, positive: bool = False
            ) -> int:
        v = need(*keys) if required else get(cfg, *keys, default=default)
        got = next((k for k in keys if k in cfg), keys[0])
        out = hf_int(fn, got, v)
        if positive and out < 1:
            raise ValueError(f"{fn}: {got} must be a positive integer, got {v!r}")
        return out

    hidden = num("hidden_size", "n_embd", "d_model", required=True, positive=True)
    layers = num("num_hidden_layers", "n_layer", "num_layers", required=True, positive=True)
    if layers > MAX_LAYERS:
        raise ValueError(f"{fn}: num_hidden_layers must be at most {MAX_LAYERS}, got {layers}")
    heads = num("num_attention_heads", "n_head", "num_heads", required=True, positive=True)
    if get(cfg, "num_key_value_heads") is None:
        kv_heads = 1 if cfg.get("multi_query") else heads
    else:
        kv_heads = num("num_key_value_heads", positive=True)
    head_dim = num("head_dim", default=hidden // heads)
    act = str(get(cfg, "hidden_act", "activation_function", default="silu")).lower()
    gpt_like = model_type in ("gpt2", "gpt_bigcode", "gpt_neox", "opt", "bloom", "gptj")
    experts = num("num_local_experts", "n_routed_experts", "num_experts", default=0)
    if experts > MAX_EXPERTS:
        got = next(k for k in ("num_local_experts", "n_routed_experts", "num_experts")
                   if k in cfg)
        raise ValueError(f"{fn}: {got} must be at most {MAX_EXPERTS}, got {experts}")
    dense: list[int] = []
    llama4 = model_type == "llama4_text"
    inter = num("intermediate_size", "n_inner", "ffn_dim", default=4 * hidden)
    moe_inter = num("moe_intermediate_size", default=inter)
    if llama4:  # experts and shared expert: intermediate_size; dense layers: _mlp
        moe_inter, inter = inter, num("intermediate_size_mlp", default=inter)
    if experts and llama4:
        moe_layers = get(cfg, "moe_layers")
        if moe_layers is None:
            step = num("interleave_moe_layer_step", default=1, positive=True)
            moe_layers = list(range(step - 1, layers, step))
        if isinstance(moe_layers, (str, bytes)) or not isinstance(moe_layers, (list, tuple)):
            raise TypeError(f"{fn}: moe_layers must be a list of layer indices, got "
                            f"{moe_layers!r:.60}")
        moe_set = {hf_int(fn, "moe_layers", i) for i in moe_layers}
        dense = [i for i in range(layers) if i not in moe_set]
    elif experts:
        first = num("first_k_dense_replace", default=0)
        freq = num("moe_layer_freq", default=1, positive=True)
        step = num("decoder_sparse_step", default=1, positive=True)
        only = get(cfg, "mlp_only_layers", default=[])
        if isinstance(only, (str, bytes)) or not isinstance(only, (list, tuple)):
            raise TypeError(f"{fn}: mlp_only_layers must be a list of layer indices, got "
                            f"{only!r:.60}")
        mlp_only = {hf_int(fn, "mlp_only_layers", i) for i in only}
        outside = sorted(i for i in mlp_only if not 0 <= i < layers)
        if outside:
            raise ValueError(f"{fn}: mlp_only_layers holds layer index {outside[0]}, outside "
                             f"the {layers} layers (0 to {layers - 1})")
        for i in range(layers):
            moe = i >= first and i % freq == 0 and (i + 1) % step == 0 and i not in mlp_only
            if not moe:
                dense.append(i)
    layer_types, window, chunk = hf_attention(fn, cfg, model_type, layers, num)
    gpt_oss = model_type == "gpt_oss"
    return TransformerConfig(
        name=name or default_name,
        hidden_size=hidden,
        num_layers=layers,
        num_heads=heads,
        num_kv_heads=kv_heads,
        head_dim=head_dim,
        intermediate_size=inter,
        vocab_size=num("vocab_size", default=0),
        mlp_gated=act not in _PLAIN_ACTS,
        norm=str(get(cfg, "_norm", default="layernorm" if gpt_like else "rmsnorm")),
        tie_embeddings=hf_bool(fn, "tie_word_embeddings",
                                get(cfg, "tie_word_embeddings", default=False)),
        rope=not gpt_like,
        qk_norm=model_type.startswith("qwen3"),
        layer_types=layer_types,
        sliding_window=window,
        attention_chunk=chunk,
        attention_sinks=gpt_oss,
        attention_bias=hf_bool(fn, "attention_bias", get(cfg, "attention_bias", default=False)),
        mlp_bias=gpt_oss or hf_bool(fn, "mlp_bias", get(cfg, "mlp_bias", default=False)),
        glu_limit=hf_float(fn, "swiglu_limit", get(cfg, "swiglu_limit", default=0.0)),
        rope_mscale=hf_rope_mscale(fn, get(cfg, "rope_scaling")),
        mtp_layers=num("num_nextn_predict_layers", default=0),
        kv_lora_rank=num("kv_lora_rank", default=0),
        q_lora_rank=num("q_lora_rank", default=0),
        qk_nope_head_dim=num("qk_nope_head_dim", default=0),
        qk_rope_head_dim=num("qk_rope_head_dim", default=0),
        v_head_dim=num("v_head_dim", default=0),
        num_experts=experts,
        experts_per_token=num("num_experts_per_tok", "experts_per_token", default=0)
        if experts else 0,
        moe_intermediate_size=moe_inter if experts else 0,
        num_shared_experts=(1 if llama4 else num("n_shared_experts", default=0))
        if experts else 0,
        dense_layers=tuple(dense),
        source=str(cfg.get("_source", "")),
    )


@functools.lru_cache(maxsize=1)
def _builtin() -> dict[str, tuple[str, Path]]:
    table: dict[str, tuple[str, Path]] = {}
    for path in sorted(_CONFIG_DIR.glob("*.json")):
        doc = json.loads(path.read_text())
        canonical = doc["_name"]
        for key in (canonical, *doc.get("_aliases", [])):
            table[key.lower()] = (canonical, path)
    return table


def list_configs() -> list[str]:
    """Names of the built-in configurations."""
    return sorted({canonical for canonical, _ in _builtin().values()})


@functools.lru_cache(maxsize=64)
def _load(path: Path) -> TransformerConfig:
    return from_hf(path)


def config(name: str | TransformerConfig) -> TransformerConfig:
    """A built-in configuration by name (case-insensitive; HF repo names work too).

    Built-ins (numbers from each model's public ``config.json``, source in ``.source``):
    Llama-3-8B, Llama-3-70B, Llama-3.1-405B, Llama-4-Scout, Llama-4-Maverick, Mixtral-8x7B,
    DeepSeek-V3 (with its MTP module), GPT-OSS-120B, GPT-OSS-20B, Qwen3-4B, Qwen3-8B,
    Qwen3-14B, Qwen3-32B, Qwen3-30B-A3B, Qwen3-235B-A22B. A :class:`TransformerConfig` is
    returned unchanged.

    Raises
    ------
    KeyError
        Unknown name (the message lists close matches).
    """
    if isinstance(name, TransformerConfig):
        return name
    canonical, path = one_of("transformer.config", "model", name,
                             {k: v for k, v in _builtin().items()})
    del canonical
    return _load(path)
