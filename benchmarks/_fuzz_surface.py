"""Random hostile calls over the surface sessions 7-8 added (used by ``fuzz_api.py``).

- ``trace op``: synthetic traces (``rl.trace.explain`` of ``trace.synthetic_trace``) of the
  registry's newer entries (topk, sort, sum / mean, cat / stack, nonzero, index_put_,
  nll_loss, log_softmax backward, grouped 2-D x 2-D GEMMs) with hostile recorded arguments:
  negative, huge, float or string sizes, k > n, k = 0, dims out of range, odd
  ``Concrete Inputs``, tensor-list strides of the wrong length. A priced kernel must be
  finite, positive and at or above its roofline; an error must be a named ``trace.`` one.
- ``from_hf``: GPT-OSS / Qwen3-MoE / DeepSeek-V3 / Llama-4 ``config.json`` with hostile
  values (negative, NaN, huge, wrong types, strings for ints, missing keys, lists where
  scalars go, unicode), then a prefill and a training step.
- ``config field``: ``TransformerConfig.replace`` of ``glu_limit``, ``rope_mscale``,
  ``attention_sinks``, ``sliding_window``, ``layer_types``, ``mtp_layers``; ``estimate``'s
  ``cuda_graph_scope``, ``moe_load_balancing``, ``recompute="modules:..."`` / ``"layer:k"``.
- ``serve runtime``: ``serve`` on each scheduler with hostile finite-run options;
  ``estimate runtime``: ``estimate`` on each runtime and program choice.
- ``price_job``: rows of the shipped jobs file with one hostile field.

Every call returns an object the worker checks (``time_s`` finite, >= 0) or raises; a
:class:`BadResult` is silent nonsense the call's own check found (wall below GPU time, a
kernel below its roofline).
"""

from __future__ import annotations

import json
import math
import random
from functools import cache
from pathlib import Path
from typing import Any

HOSTILE: list[Any] = [0, -1, -128, 1, 2, 3, 7, 8, 33, 129, 2**31, 2**53 + 1, 10**30, 0.5, 2.5,
                      float("nan"), float("inf"), -float("inf"), True, False, None, "abc",
                      "64", "", "é☃", [1, 2], [], {"a": 1}, "nan", "1e400", "-3", "True",
                      "-" * 10_000 + "1", "[" * 300, "[1, 2, 3.5]", "(-1,)"]


#: Chance that one argument of the current call is hostile (drawn per call: some calls are
#: nearly valid, so that silent nonsense in results shows, others are hostile throughout).
_LEVEL = [0.3]


def _level(rng: random.Random) -> float:
    _LEVEL[0] = rng.choice([0.02, 0.1, 0.3])
    return _LEVEL[0]


class BadResult(AssertionError):
    """A call returned silent nonsense (counted as a bad result, not a crash)."""


def _size(rng: random.Random) -> Any:
    return rng.choice([1, 2, 7, 8, 64, 128, 129, 4096, 5000, 65536]) \
        if rng.random() >= _LEVEL[0] else rng.choice(HOSTILE)


def _scalar(rng: random.Random, good: str) -> Any:
    """A recorded scalar: usually ``good``, else something odd (Concrete Inputs are strings
    in real traces; odd types test the reader)."""
    if rng.random() >= _LEVEL[0]:
        return good
    v = rng.choice(HOSTILE)
    return str(v) if rng.random() < 0.6 else v


def _shape(rng: random.Random, rank: int) -> list[Any]:
    return [_size(rng) for _ in range(rank)]


_DT = ["float", "c10::BFloat16", "c10::Half", "long int", "int", "bool", "double",
       "c10::Float8_e4m3fn", "weird", 5]


def _dt(rng: random.Random) -> Any:
    return rng.choice(_DT) if rng.random() < 0.3 else rng.choice(["float", "c10::BFloat16"])


def _record(rng: random.Random) -> dict[str, Any]:
    """One record of a newer entry with hostile recorded arguments."""
    op = rng.choice(["topk", "sort", "argsort", "sum", "mean", "cat", "stack", "nonzero",
                     "index_put", "nll_fwd", "nll_bwd", "lsm_bwd", "grouped_mm", "layer_norm",
                     "softmax"])
    d = _dt(rng)
    r = rng.randrange(1, 4)
    if op == "topk":
        rec = {"op": "aten::topk", "shapes": [_shape(rng, r), [], [], [], []],
               "types": [d, "Scalar", "Scalar", "Scalar", "Scalar"],
               "concrete": ["", _scalar(rng, str(rng.choice([1, 2, 4, 8, 32, 33]))),
                            _scalar(rng, "-1"), _scalar(rng, "True"), _scalar(rng, "True")]}
    elif op in ("sort", "argsort"):
        rec = {"op": f"aten::{op}", "shapes": [_shape(rng, r), [], [], []],
               "types": [d, "Scalar", "Scalar", "Scalar"],
               "concrete": ["", _scalar(rng, "True"), _scalar(rng, "-1"),
                            _scalar(rng, "False")]}
    elif op in ("sum", "mean"):
        rec = {"op": f"aten::{op}", "shapes": [_shape(rng, r), [], [], []],
               "types": [d, "ScalarList", "Scalar", "ScalarType"],
               "concrete": ["", _scalar(rng, rng.choice(["[0]", "[-1]", "[0, 1]", "[]"])),
                            _scalar(rng, "False"), ""]}
    elif op in ("cat", "stack"):
        parts = [_shape(rng, r) for _ in range(rng.randrange(0, 4))]
        rec = {"op": f"aten::{op}", "shapes": [parts, []],
               "types": [rng.choice(["TensorList", "GenericList[float]", d]), "Scalar"],
               "concrete": ["", _scalar(rng, "0")]}
        if rng.random() < 0.5:
            rec["strides"] = [[_shape(rng, rng.randrange(0, 4))
                               for _ in range(rng.randrange(0, 5))], []]
    elif op == "nonzero":
        rec = {"op": "aten::nonzero", "shapes": [_shape(rng, r)], "types": [d]}
    elif op == "index_put":
        rec = {"op": "aten::_index_put_impl_",
               "shapes": [_shape(rng, 2), [_shape(rng, 1)], _shape(rng, 2), [], []],
               "types": [d, "TensorList", d, "Scalar", "Scalar"],
               "concrete": ["", "", "", _scalar(rng, "True"), _scalar(rng, "False")]}
    elif op == "nll_fwd":
        rec = {"op": "aten::nll_loss_forward",
               "shapes": [_shape(rng, 2), _shape(rng, 1), [], [], []],
               "types": [d, "long int", "", "Scalar", "Scalar"],
               "concrete": ["", "", "", _scalar(rng, "1"), _scalar(rng, "-100")]}
    elif op == "nll_bwd":
        rec = {"op": "aten::nll_loss_backward",
               "shapes": [[], _shape(rng, 2), _shape(rng, 1), [], [], [], []],
               "types": [d, d, "long int", "", "Scalar", "Scalar", d],
               "concrete": ["", "", "", "", _scalar(rng, "1"), _scalar(rng, "-100"), ""]}
    elif op == "lsm_bwd":
        s = _shape(rng, 2)
        rec = {"op": "aten::_log_softmax_backward_data",
               "shapes": [s, s if rng.random() < 0.7 else _shape(rng, 2), [], []],
               "types": [d, d, "Scalar", "ScalarType"],
               "concrete": ["", "", _scalar(rng, "1"), _scalar(rng, "15")]}
    elif op == "layer_norm":
        s = _shape(rng, 2)
        rec = {"op": "aten::native_layer_norm", "shapes": [s, [], s[-1:], s[-1:], []],
               "types": [d, "ScalarList", d, d, "Scalar"],
               "concrete": ["", _scalar(rng, f"[{s[-1]}]"), "", "", _scalar(rng, "1e-05")]}
    elif op == "softmax":
        rec = {"op": "aten::_softmax", "shapes": [_shape(rng, r), [], []],
               "types": [d, "Scalar", "Scalar"],
               "concrete": ["", _scalar(rng, "-1"), _scalar(rng, "False")]}
    else:  # grouped 2-D x 2-D (a weight gradient): offsets over the K dimension
        rec = {"op": "aten::_grouped_mm",
               "shapes": [_shape(rng, 2), _shape(rng, 2), [_size(rng)], [], []],
               "types": [d, d, "int", "", ""], "concrete": ["", "", "", "", ""]}
    if rng.random() < _LEVEL[0] / 3:
        rec["concrete"] = rng.choice(["xyz", None, 5, [None] * 7, [[1]] * 5])
    if rng.random() < _LEVEL[0] / 3:
        rec["types"] = rng.choice([None, "float", [5] * 5, []])
    rec["measured_s"] = rng.choice([1e-6, 1e-5, 1e-3])
    return rec


def trace_op(rng: random.Random) -> Any:
    """``trace.explain`` of a synthetic trace of hostile records; checks the priced rows."""
    import roofline as rl
    from roofline.trace import synthetic_trace

    _level(rng)
    recs = [_record(rng) for _ in range(rng.randrange(1, 4))]
    doc = synthetic_trace([{k: v for k, v in r.items() if k != "strides"} for r in recs],
                          device="NVIDIA H100 80GB HBM3")
    ops = [e for e in doc["traceEvents"] if e["cat"] == "cpu_op"]
    for e, r in zip(ops, recs, strict=True):
        if "strides" in r:
            e["args"]["Input Strides"] = r["strides"]
    rep = rl.trace.explain(doc, hardware=rng.choice(["H100 SXM", "B200", "MI300X"]))
    _check_priced_rows(rep, lambda row: f"bytes {row.bytes}, flops {row.flops} "
                                        f"({row.how[:80]})")
    if not (math.isfinite(rep.predicted_s) and rep.predicted_s >= 0):
        raise BadResult(f"predicted_s {rep.predicted_s}")
    return rep


#: Real traces whose recorded ops reach the newer entries (MoE routing: topk, sort, nonzero,
#: index_put_, cat, grouped GEMMs; cross-entropy: nll_loss, log_softmax backward).
_TRACES = ["data/programs/h200/traces/moe_qwen3moe_grouped_mm_train_t512.json.gz",
           "data/programs/h200/traces/moe_mixtral_hf_t512.json.gz",
           "data/programs/h200/traces/gpu_cross_entropy_bf16_1024_32000.json.gz",
           "tests/data/traces/encoder_layer_train.json.gz"]


@cache
def _trace_doc(path: str) -> dict[str, Any]:
    import gzip

    root = Path(__file__).resolve().parents[1]
    doc: dict[str, Any] = json.loads(gzip.decompress((root / path).read_bytes()))
    return doc


def trace_file(rng: random.Random) -> Any:
    """A real trace with one recorded op's arguments made hostile (one of its Input Dims,
    Concrete Inputs, Input Strides or Input type entries); the priced rows are checked."""
    import roofline as rl

    doc = _trace_doc(rng.choice(_TRACES))
    events = list(doc["traceEvents"])
    ops = [i for i, e in enumerate(events) if isinstance(e, dict) and e.get("cat") == "cpu_op"
           and isinstance(e.get("args", {}).get("Input Dims"), list)]
    i = rng.choice(ops)
    e = dict(events[i])
    args = dict(e["args"])
    key = rng.choice(["Input Dims", "Concrete Inputs", "Input Strides", "Input type"])
    old = list(args.get(key) or [""])
    j = rng.randrange(len(old))
    if key == "Input Dims" and isinstance(old[j], list) and old[j] and rng.random() < 0.7:
        dims = list(old[j])
        dims[rng.randrange(len(dims))] = rng.choice(HOSTILE)
        old[j] = dims
    else:
        old[j] = _hostile_value(rng, old[j])
    args[key] = old
    e["args"] = args
    events[i] = e
    rep = rl.trace.explain({**doc, "traceEvents": events}, hardware="H200")
    _check_priced_rows(rep, lambda row: f"({key} of {events[i].get('name')} -> "
                                        f"{old[j]!r:.60})")
    return rep


def _check_priced_rows(rep: Any, context: Any) -> None:
    """Every priced row of trace report ``rep``: a finite positive time at or above its
    finite roofline, non-negative bytes and flops; else :class:`BadResult` with the row's
    op, shapes, figures and ``context(row)``."""
    k = rep.kernels()
    for row in k[k["priced"]].itertuples():
        t, roof = float(row.predicted_s), float(row.roofline_s)
        if not (math.isfinite(t) and t > 0 and math.isfinite(roof) and roof >= 0
                and t >= roof * (1 - 1e-9) and row.bytes >= 0 and row.flops >= 0):
            raise BadResult(f"{row.op} {row.shapes}: predicted {t}, roofline {roof}, "
                            f"{context(row)}")


_HF = {"gpt_oss": "gpt-oss-20b.json", "qwen3_moe": "qwen3-30b-a3b.json",
       "deepseek_v3": "deepseek-v3.json", "llama4": "llama-4-scout.json"}


@cache
def _hf_base(name: str) -> dict[str, Any]:
    import roofline

    path = Path(roofline.__file__).parent / "transformer" / "configs" / name
    d: dict[str, Any] = json.loads(path.read_text())
    return {k: v for k, v in d.items() if not k.startswith("_")}


_HF_KEYS = ["hidden_size", "num_hidden_layers", "num_attention_heads", "num_key_value_heads",
            "head_dim", "intermediate_size", "moe_intermediate_size", "num_local_experts",
            "num_experts", "n_routed_experts", "num_experts_per_tok", "experts_per_token",
            "n_shared_experts", "first_k_dense_replace", "sliding_window", "layer_types",
            "swiglu_limit", "rope_scaling", "attention_chunk_size", "no_rope_layers",
            "num_nextn_predict_layers", "kv_lora_rank", "q_lora_rank", "qk_rope_head_dim",
            "qk_nope_head_dim", "v_head_dim", "vocab_size", "tie_word_embeddings",
            "mlp_only_layers", "decoder_sparse_step", "interleave_moe_layer_step",
            "attention_bias", "model_type", "text_config", "hidden_act"]


def _hostile_value(rng: random.Random, old: Any) -> Any:
    pick = rng.random()
    if pick < 0.15 and isinstance(old, list) and old:
        out = list(old)
        out[rng.randrange(len(out))] = rng.choice(HOSTILE)
        return out if rng.random() < 0.7 else out[: rng.randrange(len(out))]
    if pick < 0.25 and isinstance(old, dict) and old:
        out2 = dict(old)
        out2[rng.choice(list(out2))] = rng.choice(HOSTILE)
        return out2
    if pick < 0.35:
        return [old, old]
    if pick < 0.45 and isinstance(old, (int, float)) and not isinstance(old, bool):
        return str(old)
    return rng.choice(HOSTILE)


def from_hf(rng: random.Random) -> Any:
    """``from_hf`` of a newer model's config with hostile values, then prefill and train."""
    import roofline as rl

    d = dict(_hf_base(rng.choice(list(_HF.values()))))
    if d.get("text_config") and rng.random() < 0.5:
        d = {**d, **d["text_config"]}
    for _ in range(rng.randrange(1, 3)):
        key = rng.choice(_HF_KEYS)
        if rng.random() < 0.2:
            d.pop(key, None)
        else:
            d[key] = _hostile_value(rng, d.get(key))
    if rng.random() < 0.1:  # the largest accepted sizes: per-layer and per-expert work
        d[rng.choice(["num_hidden_layers", "num_local_experts", "num_experts",
                      "n_routed_experts"])] = rng.choice([100_000, 99_999, 65_536])
    cfg = rl.transformer.from_hf(d)
    if cfg.num_layers > 4 and rng.random() < 0.8:  # most calls: a 4-layer slice (fast)
        cfg = cfg.replace(num_layers=4, layer_types=cfg.layer_types[:4],
                          dense_layers=tuple(i for i in cfg.dense_layers if i < 4))
    return _run(rng, cfg)


def _run(rng: random.Random, cfg: Any) -> Any:
    """A prefill, decode or train estimate of ``cfg``; wall below GPU time is a bad result."""
    import roofline as rl

    phase = rng.choice(["prefill", "decode", "train"])
    if phase == "train":
        e = rl.transformer.estimate(cfg, "train", 1, seq_len=rng.choice([512, 4096]),
                                    hardware="H100 SXM", ep=rng.choice([1, 2]),
                                    dp=2)
    elif phase == "prefill":
        e = rl.transformer.estimate(cfg, "prefill", 1, seq_len=rng.choice([300, 4096]),
                                    hardware="H100 SXM")
    else:
        e = rl.transformer.estimate(cfg, "decode", 8, kv_len=rng.choice([100, 9000]),
                                    hardware="H100 SXM")
    _check_wall(e)
    return e


def _check_wall(e: Any) -> None:
    t = float(e.time_s)
    wall = getattr(e, "wall_s", None)
    if not (math.isfinite(t) and t > 0):
        raise BadResult(f"time_s {t}")
    if wall is not None and not float(wall) >= t * (1 - 1e-9):
        raise BadResult(f"wall_s {wall} below GPU time {t}")
    mfu = float(getattr(e, "mfu", float("nan")))
    if math.isfinite(mfu) and not 0 <= mfu <= 1 + 1e-9:  # faster than the datasheet
        raise BadResult(f"mfu {mfu}: {e.flops} FLOP in {t} s at peak {e.peak_flops_per_s}")


def config_field(rng: random.Random) -> Any:
    """A built-in config with a hostile newer field, or estimate's newer options."""
    import roofline as rl

    base = rl.transformer.config(rng.choice(["GPT-OSS-20B", "Qwen3-30B-A3B", "DeepSeek-V3",
                                             "Llama-4-Scout", "Llama-3-8B"]))
    base = base.replace(num_layers=4, layer_types=base.layer_types[:4],
                        dense_layers=tuple(i for i in base.dense_layers if i < 4))
    which = rng.randrange(3)
    if which == 0:
        field = rng.choice(["glu_limit", "rope_mscale", "attention_sinks", "sliding_window",
                            "layer_types", "mtp_layers", "attention_chunk"])
        v = rng.choice(HOSTILE + [("full", "sliding", "full", "chunked"), ("sliding",) * 4,
                                  ["full"] * 4, ("full",) * 5, 1e9, 2.0, 1e-300])
        return _run(rng, base.replace(**{field: v}))
    kw: dict[str, Any] = {}
    opt = rng.choice(["cuda_graph_scope", "moe_load_balancing", "recompute", "offload_layers",
                      "cross_entropy", "mlp_activation", "check_for_nan_in_grad",
                      "fp8_param_gather", "moe_capacity_factor", "megatron_core",
                      "moe_a2a_overlap"])
    if opt == "mlp_activation":  # session 12: NeMo 2.x's eager squared ReLU
        kw[opt] = rng.choice(["fused", "relu_pow", "RELU_POW", "gelu", True, None,
                              rng.choice(HOSTILE)])
        if rng.random() < 0.5:
            base = base.replace(mlp_gated=False)
    elif opt in ("check_for_nan_in_grad", "fp8_param_gather"):  # session 12
        kw[opt] = rng.choice([True, False, 1, 0, "yes", None, rng.choice(HOSTILE)])
        if rng.random() < 0.5:
            kw["linear_recipe"] = rng.choice(["tensorwise_te", "mxfp8", "tensorwise"])
        if rng.random() < 0.5:
            kw["zero"] = rng.choice([0, 1, 3])
    elif opt == "moe_capacity_factor":  # session 13: Megatron-Core's token dropping
        kw[opt] = rng.choice([1.0, 0.5, 2.0, 1e-9, 1e9, 0, -1.0, True, "1", None,
                              rng.choice(HOSTILE)])
        if rng.random() < 0.6:
            kw["moe_pad_to_capacity"] = rng.choice([True, False, 1, None, rng.choice(HOSTILE)])
    elif opt == "megatron_core":  # session 13: Megatron-Core 0.11 / 0.12's MoE layer
        kw[opt] = rng.choice(["0.11", "0.12", "0.15", "0.13", 0.11, None, rng.choice(HOSTILE)])
        if rng.random() < 0.6:
            kw["moe_permute_fusion"] = rng.choice([True, False, 0, "no", rng.choice(HOSTILE)])
        if rng.random() < 0.6:
            kw.update(moe_capacity_factor=1.0, moe_pad_to_capacity=True)
    elif opt == "moe_a2a_overlap":  # session 13: the combined 1F1B all-to-all overlap
        kw[opt] = rng.choice([True, False, 1, "yes", None, rng.choice(HOSTILE)])
        if rng.random() < 0.3:
            kw["recompute"] = rng.choice(["full", "selective"])
    elif opt == "cross_entropy":
        kw[opt] = rng.choice(["fused", "native", "unfused", "te", "NATIVE", True, None,
                              rng.choice(HOSTILE)])
        if rng.random() < 0.3:
            kw["attention_backend"] = rng.choice(["flash", "auto"])
    elif opt == "offload_layers":
        kw[opt] = rng.choice([0, 1, 2, 3, 4, 5, -1, 2.0, True, rng.choice(HOSTILE)])
        if rng.random() < 0.5:
            kw["host_bytes_per_s"] = rng.choice([1e9, 5e10, 1e18, 0, -1.0, rng.choice(HOSTILE)])
        if rng.random() < 0.3:
            kw["recompute"] = rng.choice(["full", "none"])
    elif opt == "cuda_graph_scope":
        kw[opt] = rng.choice([["attn"], ["attn", "moe_router"], ["full_iteration"], ["x"],
                              "attn", [], [1], [None], ("attn", "attn"), rng.choice(HOSTILE)])
    elif opt == "moe_load_balancing":
        kw[opt] = rng.choice(["aux_loss", "seq_aux_loss", "sinkhorn", "none", "AUX_LOSS",
                              rng.choice(HOSTILE)])
    else:
        kw[opt] = rng.choice(["modules:core_attn", "modules:mlp,layernorm", "modules:",
                              "modules:nope", "modules:core_attn,core_attn", "layer:1",
                              "layer:2", "layer:0", "layer:-1", "layer:999", "layer:x",
                              "layer:", "layer:2.5", "layer:1e400", "modules:moe_act,mla_up_proj",
                              "full", "selective", rng.choice(HOSTILE)])
    e = rl.transformer.estimate(base, "train", rng.choice([1, 2]), seq_len=2048,
                                hardware="H100 SXM", dp=2, ep=rng.choice([1, 2]), **kw)
    _check_wall(e)
    return e


#: ``serve``'s schedulers and ``estimate``'s programs.
_SERVE_RUNTIMES = ["vllm", "sglang", "megatron"]
_RUNTIMES = ["vllm", "sglang", "hf", "compiled", "megatron"]


def _runtime_case(rng: random.Random) -> tuple[str, Any]:
    """A model and a ``pick(good)`` that returns a hostile value instead at half the level."""
    level = _level(rng) / 2

    def pick(good: Any) -> Any:
        return good if rng.random() >= level else rng.choice(HOSTILE)

    return rng.choice(["Llama-3-8B", "Qwen3-30B-A3B", "GPT-OSS-20B"]), pick


def serve_runtime(rng: random.Random) -> Any:
    """``serve`` on a scheduler with hostile finite-run options; checks the frame's times."""
    model, pick = _runtime_case(rng)
    return _serve(rng, model, pick)


def estimate_runtime(rng: random.Random) -> Any:
    """``estimate`` on each runtime and program choice, some arguments hostile."""
    model, pick = _runtime_case(rng)
    return _estimate(rng, model, pick)


def _estimate(rng: random.Random, model: str, pick: Any) -> Any:
    import roofline as rl

    phase = rng.choice(["prefill", "decode"])
    sizes = {"seq_len": pick(rng.choice([17, 512]))} if phase == "prefill" else {
        "kv_len": pick(rng.choice([17, 4096]))}
    e = rl.transformer.estimate(model, phase, pick(rng.choice([1, 8, 64])),
                                hardware="H100 SXM", runtime=pick(rng.choice(_RUNTIMES)),
                                tp=pick(rng.choice([1, 2])),
                                gated_mlp=pick(rng.choice(["fused", "separate"])),
                                allreduce=pick(rng.choice(["custom", "nccl"])),
                                attention_plugin=pick(rng.choice([False, True])),
                                launch=pick(rng.choice(["eager", "graph"])), **sizes)
    _check_wall(e)
    return e


def _serve(rng: random.Random, model: str, pick: Any) -> Any:
    import numpy as np

    import roofline as rl

    finite = rng.random() < 0.6
    rate = rng.choice([None, 0.5, 4.0, 1e6]) if finite else None
    kw: dict[str, Any] = dict(
        runtime=pick(rng.choice(_SERVE_RUNTIMES)), prompt_len=pick(rng.choice([16, 512, 2048])),
        output_len=pick(rng.choice([1, 16, 64])),
        num_requests=pick(rng.choice([1, 8, 64]) if finite else None),
        request_rate=pick(rate),
        arrivals=pick(rng.choice(["even", "poisson"]) if rate else "even"),
        lengths=pick(rng.choice(["fixed", "uniform"]) if finite else "fixed"),
        mixed_prefill=pick(rng.choice([None, True, False]) if finite else None),
        overlap_schedule=pick(rng.choice([None, True, False]) if finite else None),
        sustained_clock=pick(rng.choice([None, True, False])),
        kv_admission=pick(rng.choice(["reserve", "grow", "ignore_eos"])))  # session 13
    if kw["num_requests"] is None:
        kw["batches"] = [pick(rng.choice([1, 8, 64]))]
    df = rl.transformer.serve(model, "H100 SXM", **kw)
    for col in df.columns:
        if col.endswith("_s") or col.endswith("per_s"):
            v = np.asarray(df[col], dtype=float)
            if not np.all(np.isfinite(v) & (v >= 0)):
                raise BadResult(f"serve {kw}: column {col} = {v.tolist()[:3]}")
    return df


@cache
def _jobs() -> list[dict[str, Any]]:
    from roofline.validation.jobs import JOBS_FILE

    rows = [json.loads(line) for line in JOBS_FILE.read_text().splitlines() if line.strip()]
    # the quick ones: small models (a fuzz call has a few seconds)
    return [r for r in rows if not any(s in str(r["config"].get("model")) for s in
                                       ("405B", "DeepSeek", "Maverick", "235B"))]


def price_job(rng: random.Random) -> Any:
    """``price_job`` of a shipped row with one hostile field (top level or config)."""
    import copy

    from roofline.validation.jobs import _check_row, price_job

    row = copy.deepcopy(rng.choice(_jobs()))
    c = row["config"]
    for _ in range(rng.randrange(1, 3)):
        if rng.random() < 0.3:
            key = rng.choice(["hardware", "gpus", "measured", "unit", "id", "config"])
            row[key] = _hostile_value(rng, row.get(key))
        else:
            key = rng.choice(list(c) + ["mtp_layers", "num_requests", "request_rate",
                                        "batch", "model"])
            if rng.random() < 0.15:
                c.pop(key, None)
            else:
                c[key] = _hostile_value(rng, c.get(key))
    row = _check_row(row, "fuzz row")
    t = price_job(row)
    if not (math.isfinite(t) and t > 0):
        raise BadResult(f"price_job {row['id']}: {t}")
    return None


def moe_options(rng: random.Random) -> Any:
    """Session 15's training options (routers, DeepEP, AutoModel's modules, FlexAttention,
    TE's Hopper recipes) with good and hostile values, on hardware whose compute capability
    may be replaced by a good or a hostile one."""
    import roofline as rl

    hw: Any = "H100 SXM"
    if rng.random() < 0.3:
        cc = rng.choice([(10, 0), (8, 9), (12, 0), (9,), "9.0", (-1, 0), (9, 0.5), None, 9.0])
        hw = rl.hardware("H100 SXM").replace(compute_capability=cc)
    kw = {"moe_router": rng.choice(["topk", "force_balanced", "fake_balanced", "bogus", 3]),
          "moe_dispatcher": rng.choice(["alltoall", "deepep", "hybridep", "deepEP", None]),
          "moe_shared_overlap": rng.choice([False, True, 1, "yes"]),
          "modules": rng.choice(["te", "torch", "automodel", "x"]),
          "attention_backend": rng.choice(["auto", "flash", "cudnn", "flex", "bogus"]),
          "linear_recipe": rng.choice([None, "blockwise_te", "tensorwise_te", "mxfp8_te", "no"]),
          "routing_skew": rng.choice([0.0, 0.5, -1.0, float("nan")])}
    pick = {k: kw[k] for k in rng.sample(sorted(kw), rng.randrange(1, 4))}
    model = rng.choice(["Qwen3-30B-A3B", "DeepSeek-V3", "GPT-OSS-20B", "Llama-3-8B"])
    phase = rng.choice(["train", "train", "prefill"])
    ep = rng.choice([1, 8])
    e = rl.transformer.estimate(model, phase, rng.choice([1, 2]),
                                seq_len=rng.choice([128, 1024, _size(rng)]), hardware=hw,
                                ep=ep, dp=ep if phase == "train" else 1, **pick)
    _check_wall(e)
    return e


#: Name of each call kind and its generator.
KINDS = {"trace op": trace_op, "trace file": trace_file, "from_hf": from_hf,
         "config field": config_field, "serve runtime": serve_runtime,
         "estimate runtime": estimate_runtime, "price_job": price_job,
         "moe options": moe_options}

#: Prefix a named error's message must start with, per kind (others: any).
PREFIX = {"trace op": "trace.", "trace file": "trace.",
          "from_hf": ("from_hf", "transformer.from_hf", "transformer.estimate",
                      "TransformerConfig"),
          "config field": ("TransformerConfig", "transformer.estimate"),
          "serve runtime": "transformer.serve", "estimate runtime": "transformer.estimate",
          "price_job": ("price_job", "read_jobs"),
          "moe options": ("transformer.estimate", "Hardware", "hardware")}
