"""The layer modules of NeMo AutoModel's MoE models as they run on Transformer Engine
(``estimate(modules="automodel")``, training): what its eager attention launches that
Megatron-Core's fused layer does not (issue #24).

Read at the commits of AutoModel's DGX-H100 rows (``github.com/NVIDIA-NeMo/Automodel``
89e3a9fdd and 8d9bfb90e), ``BackendConfig(attn="te", linear="te", rms_norm="te")``:

* **Qwen3-MoE** (``components/models/qwen3_moe/layers.py`` ``Qwen3MoeAttention``): separate
  ``q_proj`` / ``k_proj`` / ``v_proj`` TE ``Linear`` modules over the same input (three GEMMs
  where the model's row fuses one; their input gradients meet in autograd's accumulation: two
  adds of ``t x hidden``), the outputs ``view``-ed to heads (no split copy, unlike
  Megatron-Core's :func:`.framework_ops.mcore_qkv_split`), TE ``RMSNorm`` on q and k (the
  ``qk_norm`` row), then ``_apply_rotary_emb`` of ``components/models/gpt_oss/layers.py``, run
  eagerly on q and on k (:func:`half_rope_passes`).
* **DeepSeek-V3 / Kimi-K2 MLA** (``components/models/deepseek_v3/layers.py`` ``MLA.forward``):
  ``q_a_proj`` and ``kv_a_proj_with_mqa`` are two TE Linears over the same input (the model's
  row fuses them; one gradient add), ``apply_rotary_emb`` of ``components/moe/rope_utils.py``
  on ``q_pe`` (``t x heads x rope``) and on ``k_pe`` (``t x rope``) as eager complex ops
  (:func:`complex_rope_passes`), and ``torch.cat([q_nope, q_pe])`` / ``torch.cat([k_nope,
  k_pe.expand(heads)])`` (:func:`mla_cat_passes`).
* **GPT-OSS** (``components/models/gpt_oss/{layers,model}.py``, ``moe/layers.py`` @
  89e3a9fdd; FlexAttention and its sinks are :mod:`.flex`'s): ``q_proj`` / ``k_proj`` /
  ``v_proj`` as Qwen3's (biased TE Linears: the biases in the GEMM epilogues), no q/k norm,
  the same ``_apply_rotary_emb`` on q and k (YaRN's concentration is folded into the
  model-level fp32 cos / sin table, built once per forward under ``no_grad``: not Megatron-
  Core's unfused YaRN RoPE), the ``o_proj`` bias in TE's epilogue (not Megatron-Core's
  unfused bias add), the experts' ``gate_and_up`` bias added per expert
  (:func:`expert_gate_up_bias_passes`; Megatron-Core fuses it into the activation), the
  ``torch.compile``'d ``quick_geglu_deepep`` (clamps fused: not Megatron-Core's eager clamps
  and their host-to-device copy) and the output bias with the probabilities, which is
  Megatron-Core's ``_apply_bias`` (:func:`.layers.expert_fc2_bias`, kept). The block is
  Qwen3's (input ``RMSNorm`` module, attention, ``MoE``): the same module calls.
* **Dense layers and shared experts** (``components/moe/layers.py`` ``MLP``): ``gate_proj`` and
  ``up_proj`` TE Linears (two GEMMs for the fused ``gate_up`` row; one gradient add) and
  ``F.silu(gate) * up`` run eagerly (:func:`silu_mul_passes`).

:func:`automodel_rewrite` edits a recorded :class:`.program.Program` in place: the fused rows
``qkv_proj`` / ``q_a+kv_a_proj`` get the separate GEMMs (same FLOPs, each GEMM's own wave
quantization), the split copy rows go, ``rope`` becomes ``rope (eager)`` with the passes
below, MLA gains ``mla q/k cat``. Counts in the activation's 2-byte elements (an fp32 tensor
is two of them), each pass one kernel ``(elements, reads, writes)``.

Host side: the model prices Megatron-Core's module calls per row
(:data:`.moe_host.MCORE_FORWARD_MODULES`, :data:`.moe_host.MCORE_BACKWARD_FUNCTIONS`, TE's
fusible-op norms); :data:`AUTOMODEL_MODULE_CALLS` adds what AutoModel's block calls beside
them (:attr:`.program.Program.module_calls`), each at the model's module-call cost. DeepEP's
Python is AutoModel's copy of Megatron-Core's flex dispatcher (:data:`.moe_host.DEEPEP_CALLS`,
unchanged). Not priced: ``kv_a_layernorm`` on a strided split view (a possible copy), the
DTensor ``to_local`` calls, the non-reentrant checkpoint's saved-tensor hooks per tensor.
"""

from __future__ import annotations

from .config import TransformerConfig
from .layers import GLU_CLAMP_ROW
from .program import Pass, Program

__all__ = ["AUTOMODEL_MODULE_CALLS", "MODULES_AUTOMODEL", "automodel_rewrite",
           "complex_rope_passes", "expert_gate_up_bias_passes", "half_rope_passes",
           "mla_cat_passes", "silu_mul_passes"]

#: The ``modules=`` name of AutoModel's layer modules.
MODULES_AUTOMODEL = "automodel"

#: Module calls (Python before a row's first kernel, one ``module`` host call each) AutoModel's
#: decoder block makes beyond Megatron-Core's TE layer, by ``(row, backward, mla)``, counted
#: from ``qwen3_moe/model.py`` ``Block``, ``deepseek_v3/layers.py``, ``moe/layers.py`` and
#: ``moe/parallelizer.py`` (``ptd_checkpoint_wrapper``, ``fully_shard`` per block).
#: Forward: before ``attn_norm`` the ``CheckpointWrapper.forward``, the non-reentrant
#: ``torch.utils.checkpoint`` entry, FSDP2's pre-forward hook of this block and the
#: post-forward hook of the one before (4), and with GQA the input ``RMSNorm`` as a module of
#: its own (Megatron-Core fuses it into the QKV ``LayerNormLinear``: +1, the TE norm's
#: fuser +1); ``qkv_proj``: the ``q_proj`` / ``k_proj`` / ``v_proj`` TE ``Linear`` modules (3);
#: ``fake gate``: ``FakeBalancedGate`` (1; Megatron-Core's table has no gate module without a
#: router GEMM). The experts (``GroupedExpertsDeepEP`` and grouped_gemm's two ``GroupedGemm``
#: Functions) match ``TEGroupedMLP`` and its two ``GroupedLinear`` calls. Backward: the q / k /
#: v Linears' ``autograd.Function`` backward bodies (2 beyond the fused one), FSDP2's
#: pre-backward hook before the block's first backward kernel (``mlp_residual``) and its
#: post-backward (the reduce-scatter's issue) after its last (charged to ``attn_norm``), and
#: with GQA the input norm's own backward Function (+1). Shared experts (MLA models here):
#: AutoModel's ``MLP`` makes four module calls (the MLP, ``gate_proj``, ``up_proj``,
#: ``down_proj``) where Megatron-Core's ``SharedExpertMLP`` makes three (+1), two Linear
#: backward Functions for the fused one (+1), and its activation is eager, not the
#: ``torch.compile``'d ``bias_swiglu`` (:data:`.moe_host.MCORE_COMPILED_CALLS`: -1 per pass).
AUTOMODEL_MODULE_CALLS: dict[tuple[str, bool, bool], float] = {
    ("attn_norm", False, False): 6.0, ("attn_norm", False, True): 4.0,
    ("qkv_proj", False, False): 3.0, ("fake gate", False, False): 1.0,
    ("fake gate", False, True): 1.0,
    ("qkv_proj", True, False): 2.0, ("mlp_residual", True, False): 1.0,
    ("mlp_residual", True, True): 1.0, ("attn_norm", True, False): 2.0,
    ("attn_norm", True, True): 1.0,
    ("shared gate_up", False, True): 1.0, ("shared gate_up", True, True): 1.0,
    ("shared act", False, True): -1.0, ("shared act", True, True): -1.0}


def half_rope_passes(n: float, t: float, half: float) -> tuple[list[Pass], list[Pass]]:
    """``(forward, backward)`` kernels of AutoModel's ``_apply_rotary_emb(x, cos, sin)``
    (gpt_oss/layers.py @ 8d9bfb90e) on ``n`` bf16 elements of ``t`` tokens with ``half`` =
    head_dim / 2 cos / sin values per token.

    Forward: ``cos.unsqueeze(-2).to(x.dtype)`` and the same for ``sin`` (fp32 -> bf16 over
    ``t·half``: reads 2, writes 1), ``x1, x2 = chunk(x, 2)`` (views), ``o1 = x1*cos - x2*sin``
    and ``o2 = x2*cos + x1*sin`` (four products over ``n/2``, reads 1 writes 1; a subtract
    and an add, reads 2 writes 1; the ``t·half`` cos / sin broadcast over heads is not
    counted), ``cat((o1, o2))`` (reads and writes ``n``): 9 kernels, ``5n`` read and ``4n``
    written against a fused kernel's ``n`` and ``n``. Backward (autograd): ``cat``'s is a
    narrow (views), ``add``'s passes the gradient, ``sub``'s negates one (``n/2``), each
    product's ``grad * cos`` (cos needs no gradient: one kernel over ``n/2``), the two
    gradients of ``x1`` and of ``x2`` summed (two adds, reads 2 writes 1 over ``n/2``) and
    ``chunk``'s ``SplitBackward`` concatenates them (reads and writes ``n``): 8 kernels."""
    h = n / 2.0
    fwd: list[Pass] = [(t * half, 2.0, 1.0), (t * half, 2.0, 1.0),
                       (h, 1.0, 1.0), (h, 1.0, 1.0), (h, 2.0, 1.0),
                       (h, 1.0, 1.0), (h, 1.0, 1.0), (h, 2.0, 1.0), (n, 1.0, 1.0)]
    bwd: list[Pass] = [(h, 1.0, 1.0), *[(h, 1.0, 1.0)] * 4, (h, 2.0, 1.0), (h, 2.0, 1.0),
                       (n, 1.0, 1.0)]
    return fwd, bwd


def complex_rope_passes(n: float) -> tuple[list[Pass], list[Pass]]:
    """``(forward, backward)`` kernels of AutoModel's ``apply_rotary_emb(x, freqs_cis)``
    (moe/rope_utils.py @ 89e3a9fdd) on ``n`` bf16 elements: ``x.float()`` (reads 1, writes 2
    units), ``view_as_complex`` (a view), the complex product with ``freqs_cis`` (fp32 pairs:
    reads 2, writes 2; the table, broadcast over heads, not counted), ``view_as_real`` /
    ``flatten`` (views), ``.to(bf16)`` (reads 2, writes 1). Backward: the cast's gradient to
    fp32 (1, 2), ``grad * conj(freqs_cis)`` (2, 2), the cast back to bf16 (2, 1): three
    kernels each way where a fused RoPE runs one (reads 1, writes 1)."""
    return ([(n, 1.0, 2.0), (n, 2.0, 2.0), (n, 2.0, 1.0)],
            [(n, 1.0, 2.0), (n, 2.0, 2.0), (n, 2.0, 1.0)])


def mla_cat_passes(t: float, heads: int, nope: int, rope: int, vd: int, lat: int
                   ) -> tuple[list[Pass], list[Pass]]:
    """``(forward, backward)`` kernels of MLA.forward's concatenations (deepseek_v3/layers.py
    @ 89e3a9fdd), ``t`` tokens, ``heads`` heads of ``nope + rope`` query / key width, ``vd``
    value width, ``lat`` the KV latent. Forward: ``q = cat([q_nope, q_pe])`` and ``k =
    cat([k_nope, k_pe.expand(heads)])`` (each reads and writes ``t·heads·(nope + rope)``).
    Backward: the cats' gradients are narrows (views); ``q``'s split
    (``torch.split(q, [nope, rope])``) concatenates the two gradients (``t·heads·(nope +
    rope)``), ``expand``'s gradient sums ``t·heads·rope`` over the heads (writes ``t·rope``),
    the ``kv_b_proj`` output's split into ``k_nope`` / ``v`` concatenates theirs
    (``t·heads·(nope + vd)``), and ``kv_a_proj_with_mqa``'s split into the latent and
    ``k_pe`` (``t·(lat + rope)``)."""
    qk = t * heads * (nope + rope)
    fwd: list[Pass] = [(qk, 1.0, 1.0), (qk, 1.0, 1.0)]
    bwd: list[Pass] = [(qk, 1.0, 1.0), (t * rope, float(heads), 1.0),
                       (t * heads * (nope + vd), 1.0, 1.0), (t * (lat + rope), 1.0, 1.0)]
    return fwd, bwd


def silu_mul_passes(n: float) -> tuple[list[Pass], list[Pass]]:
    """``(forward, backward)`` kernels of AutoModel's ``MLP`` activation
    ``F.silu(gate_proj(x)) * up_proj(x)`` (moe/layers.py @ 89e3a9fdd; the dense layers and the
    shared experts) on ``n`` elements of each input: ``silu`` (reads 1, writes 1) and the
    product (reads 2, writes 1); backward ``MulBackward``'s two gradients (``grad * up``,
    ``grad * silu(gate)``: reads 2, writes 1 each) and ``SiluBackward`` (reads the gradient
    and the saved input, writes 1). Two kernels and ``5n`` forward, three and ``9n`` backward,
    against one fused SwiGLU each way (``3n``, ``5n``)."""
    return ([(n, 1.0, 1.0), (n, 2.0, 1.0)], [(n, 2.0, 1.0)] * 3)


def expert_gate_up_bias_passes(counts: tuple[int, ...], width: float
                               ) -> tuple[list[Pass], list[Pass]]:
    """``(forward, backward)`` kernels of ``GroupedExpertsDeepEP._apply_bias`` on the routed
    experts' ``gate_and_up`` output (moe/layers.py @ 89e3a9fdd, GPT-OSS's ``expert_bias``),
    ``counts[i]`` rows of local expert i, ``width`` the fused gate-and-up width (``2 x
    moe_inter``): ``torch.split`` into the experts' rows (views), ``t + b`` per expert (bf16 +
    bf16: reads and writes ``counts[i]·width``, the bias row broadcast, not counted),
    ``torch.cat`` of the sums (reads and writes ``n = sum(counts)·width``), ``.to(bf16)``
    (the dtype it has: no kernel). Backward: the cat's gradients are narrows (views), each
    add passes the gradient to ``t`` and reduces it over the expert's rows for ``b``
    (``sum_to_size``: reads ``counts[i]·width``), the split's backward concatenates the
    per-expert gradients (reads and writes ``n``). Megatron-Core fuses this bias into its
    activation (``weighted_bias_quick_geglu_impl``); the output bias (``_apply_bias`` with the
    probabilities) is Megatron-Core's copy and stays as :func:`.layers.expert_fc2_bias`."""
    per = [float(c) * width for c in counts]
    n = float(sum(per))
    fwd: list[Pass] = [(e, 1.0, 1.0) for e in per] + [(n, 1.0, 1.0)]
    bwd: list[Pass] = [(e, 1.0, 0.0) for e in per] + [(n, 1.0, 1.0)]
    return fwd, bwd


#: Megatron-Core rows AutoModel's GPT-OSS does not run: the output projection's unfused bias
#: add (TE ``Linear(bias=True)`` adds it in the GEMM's epilogue and reduces its gradient in
#: the weight gradient's), and the clamps of the quick-GEGLU that Megatron-Core runs eagerly
#: (AutoModel's ``quick_geglu_deepep`` is one ``torch.compile`` function, clamps included,
#: with no host-to-device copy after them).
_MCORE_ONLY = ("attn_proj bias (unfused bda)", GLU_CLAMP_ROW)


def _gemms(ops: Program, m: float, k: float, widths: tuple[float, ...], backward: bool
           ) -> list[tuple[str, int]]:
    """GEMM specs of ``len(widths)`` linears over one ``m x k`` input: forward ``x @ W_i``
    (``m x k x n_i``); backward each dgrad (``m x n_i x k``) and wgrad (``k x m x n_i``,
    A transposed), as :meth:`.Program.linear` records one."""
    if not backward:
        return [ops._push("gemms", (m, k, n, 1.0, False)) for n in widths]
    out = []
    for n in widths:
        out += [ops._push("gemms", (m, n, k, 1.0, False)),
                ops._push("gemms", (k, m, n, 1.0, True))]
    return out


#: AutoModel's ``MLP`` (separate ``gate_proj`` / ``up_proj`` TE Linears): the fused rows it
#: splits and the name of the row summing the two input gradients.
_GATE_UP = {"gate_up_proj": "gate/up dgrad sum", "shared gate_up": "shared gate/up dgrad sum"}


def automodel_rewrite(ops: Program, cfg: TransformerConfig, t: int, tp: int) -> None:
    """Turn the recorded Megatron-Core attention rows of ``ops`` into AutoModel's (module
    docstring), ``t`` tokens on this GPU, ``tp`` tensor-parallel ranks (AutoModel's rows run
    ``tp = 1``). Training programs only. The routed experts are left as recorded (AutoModel's
    ``GroupedExpertsDeepEP`` runs the fused ``weighted_bias_swiglu_impl``, or GPT-OSS's
    compiled ``quick_geglu_deepep``) but for GPT-OSS's biases and clamps; under a linear
    recipe (one ``(fwd+bwd)`` low-precision row per linear) the projections stay fused."""
    if not ops.train:
        return
    hid, heads = cfg.hidden_size, cfg.num_heads // tp
    rows: list[tuple[int, str, str, list[tuple[str, int]]]] = []
    gate_up_bias: tuple[list[Pass], list[Pass]] | None = None
    for g, name, kind, parts in ops.rows:
        base = name.removesuffix(" bwd")
        bwd = name.endswith(" bwd")
        if name.startswith("mcore qkv split"):
            continue  # separate q / k / v outputs: views, no split copy
        if base == "qkv_proj" and [k for k, _ in parts][:1] == ["gemms"]:
            kvh = cfg.num_kv_heads // tp if cfg.num_kv_heads >= tp else 1
            d = cfg.head_dim
            rows.append((g, name, kind, _gemms(ops, t, hid, (heads * d, kvh * d, kvh * d), bwd)))
            if bwd:  # autograd sums the three input gradients: two adds
                rows.append((g, "q/k/v dgrad sum bwd", "elementwise",
                             [ops._push("elts", (float(t * hid), 2.0, 1.0)) for _ in "qk"]))
            continue
        if base == "q_a+kv_a_proj" and [k for k, _ in parts][:1] == ["gemms"]:
            widths = (float(cfg.q_lora_rank), float(cfg.kv_lora_rank + cfg.qk_rope_head_dim))
            rows.append((g, name, kind, _gemms(ops, t, hid, widths, bwd)))
            if bwd:
                rows.append((g, "q_a/kv_a dgrad sum bwd", "elementwise",
                             [ops._push("elts", (float(t * hid), 2.0, 1.0))]))
            continue
        if base in _GATE_UP and [k for k, _ in parts] == ["gemms"] * (2 if bwd else 1):
            m, k, n2 = ops.gemms[parts[0][1]][:3]
            if bwd:  # the dgrad's (m, n, k): the fused width is its k
                m, n2, k = m, k, n2
            rows.append((g, name, kind, _gemms(ops, m, k, (n2 / 2, n2 / 2), bwd)))
            if bwd:  # gate_proj's and up_proj's input gradients summed
                rows.append((g, _GATE_UP[base] + " bwd", "elementwise",
                             [ops._push("elts", (float(m * k), 2.0, 1.0))]))
            continue
        if base in ("act (silu*up)", "shared act") and [k for k, _ in parts] == ["elts"]:
            n = ops.elts[parts[0][1]][0]
            fwd, bwdp = silu_mul_passes(n)
            rows.append((g, name, kind, [ops._push("elts", p) for p in (bwdp if bwd else fwd)]))
            continue
        if base in _MCORE_ONLY:
            continue  # Megatron-Core's unfused bias add and eager clamps: not in AutoModel
        if base == "experts gate_up" and kind == "gemm" and cfg.mlp_bias and not bwd:
            counts, _, width = ops.grouped[parts[0][1]][:3]
            rows.append((g, name, kind, parts))
            gate_up_bias = expert_gate_up_bias_passes(counts, width)
            continue
        if base == "experts gate_up" and bwd and gate_up_bias is not None:
            rows.append((g, name, kind, parts))
            for label, passes in (("experts gate_up bias", gate_up_bias[0]),
                                  ("experts gate_up bias bwd", gate_up_bias[1])):
                rows.append((g, label, "elementwise", [ops._push("elts", p) for p in passes]))
            gate_up_bias = None
            continue
        if (base == "rope" and kind == "elementwise") or base == "rope (yarn, unfused)":
            if cfg.is_mla:
                r = cfg.qk_rope_head_dim
                fq, bq = complex_rope_passes(float(t * heads * r))
                fk, bk = complex_rope_passes(float(t * r))
                fwd, bwdp = fq + fk, bk + bq
            else:
                kvh = cfg.num_kv_heads // tp if cfg.num_kv_heads >= tp else 1
                half = cfg.head_dim / 2.0
                fq, bq = half_rope_passes(float(t * heads * cfg.head_dim), t, half)
                fk, bk = half_rope_passes(float(t * kvh * cfg.head_dim), t, half)
                fwd, bwdp = fq + fk, bk + bq
            rows.append((g, "rope (eager)" + (" bwd" if bwd else ""), kind,
                         [ops._push("elts", p) for p in (bwdp if bwd else fwd)]))
            if cfg.is_mla and not bwd:
                cf, _ = mla_cat_passes(t, heads, cfg.qk_nope_head_dim, cfg.qk_rope_head_dim,
                                       cfg.v_head_dim, cfg.kv_lora_rank)
                rows.append((g, "mla q/k cat", kind, [ops._push("elts", p) for p in cf]))
            if cfg.is_mla and bwd:
                _, cb = mla_cat_passes(t, heads, cfg.qk_nope_head_dim, cfg.qk_rope_head_dim,
                                       cfg.v_head_dim, cfg.kv_lora_rank)
                rows.append((g, "mla q/k cat bwd", kind, [ops._push("elts", p) for p in cb]))
            continue
        rows.append((g, name, kind, parts))
    ops.rows[:] = rows
    for key in [k for k in ops.saved_rows if k[1] in _MCORE_ONLY]:  # the clamps' saved input
        g, _, cat = key  # (quick_geglu_deepep saves its input once, as "experts act" counts)
        e = ops.saved_rows.pop(key)
        ops.saved[g] -= e
        ops.saved_by[g, cat] -= e
    ops.module_calls = {(row, bwd): n for (row, bwd, mla), n in AUTOMODEL_MODULE_CALLS.items()
                        if mla == cfg.is_mla}
