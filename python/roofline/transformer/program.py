"""The program of one transformer step: the op rows (layer group, name, kind) and the kernel
specs behind each row, recorded by the layer builders and priced later in a few array calls."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["Pass", "Program"]

#: One memory-bound kernel ``(elements, reads, writes)``, reads and writes counted in the
#: activation's 2-byte elements (an fp32 tensor is 2 of them): the unit of
#: :meth:`Program.passes` and of every pass list built for it.
Pass = tuple[float, float, float]
#: The collective a forward collective's backward runs when it is another kernel: DeepEP
#: HybridEP's ``dispatch_with_permute`` backward is its combine, ``combine_with_unpermute``'s
#: its dispatch (``deep_ep/hybrid_ep_buffer.py``).
_BWD_OP = {"hybridep_dispatch": "hybridep_combine", "hybridep_combine": "hybridep_dispatch"}
#: Bytes per element of the input a Transformer Engine linear saves for its weight gradient
#: under a low-precision recipe: the quantized input in one usage (TE 2.9
#: ``module/linear.py`` ``_Linear.forward``: ``inputmat.update_usage(rowwise_usage=False,
#: columnwise_usage=True)``, or rowwise only where the sequence-parallel all-gather needs it;
#: ``layernorm_linear.py`` saves its quantized ``ln_out`` alike), with its scales: fp8 plus a
#: per-tensor scale; MXFP8 one E8M0 byte per 32; 1x128 blocks one fp32 scale per 128; NVFP4
#: 4 bits plus one E4M3 scale per 16 (TE's NVFP4BlockScaling, Megatron-Core's modules only).
#: Other recipes (torchao's Float8Linear) save the high-precision input: 2 bytes.
TE_SAVED_BYTES = {"delayed_te": 1.0, "delayed_te_uncached": 1.0, "tensorwise_te": 1.0,
                  "tensorwise_te_sm90": 1.0, "mxfp8_te": 1.0 + 1.0 / 32.0,
                  "blockwise_te": 1.0 + 4.0 / 128.0}
_TE_MODULES_SAVED_BYTES = {"nvfp4": 0.5 + 1.0 / 16.0}

@dataclass
class Program:
    """Op rows (name, group) and the kernel specs behind them, evaluated in a few array calls."""

    train: bool
    recipe: str | None
    rows: list[tuple[int, str, str, list[tuple[str, int]]]] = field(default_factory=list)
    #: (m, k, n, batch, a_transposed): a_transposed marks a weight gradient dW = X^T dY,
    #: whose A (X^T) is a transposed view (see ``rl.gemm``)
    gemms: list[tuple[float, float, float, float, bool]] = field(default_factory=list)
    lowp: list[tuple[float, float, float, float]] = field(default_factory=list)
    f8: list[tuple[float, float, float]] = field(default_factory=list)
    elts: list[Pass] = field(default_factory=list)
    attn: list[dict[str, Any]] = field(default_factory=list)
    comms: list[tuple[str, float, float]] = field(default_factory=list)
    #: grouped GEMMs: (rows per group, k, n, layout of ``rl.grouped_gemm``, alternative): the
    #: alternative ``(rows per group, w)`` or None prices the kernel as ``(1 - w)`` times the
    #: first rows' plus ``w`` times its own (an expectation over the experts a small batch
    #: touches, :func:`.routing.touched_counts`)
    grouped: list[tuple[tuple[int, ...], float, float, str,
                        tuple[tuple[int, ...], float] | None]] = field(default_factory=list)
    #: per-expert quantize kernels of a GroupedLinear under a recipe: (rows per expert, cols)
    quant: list[tuple[tuple[int, ...], float]] = field(default_factory=list)
    #: framework ops as they run (registry Calls: ``runtime="hf"``), priced by their entries
    calls: list[Any] = field(default_factory=list)
    saved: dict[int, float] = field(default_factory=dict)  # activation elements per group
    #: saved elements per (group, category): "rep" (hidden-size tensors replicated over tp,
    #: split by sequence parallelism), "attn_core" (attention output and softmax statistics,
    #: dropped by selective recomputation), "other"
    saved_by: dict[tuple[int, str], float] = field(default_factory=dict)
    #: saved elements per (group, row name, category) of the rows that save (for what a
    #: module recomputation drops, :func:`.recompute.module_dropped_elements`)
    saved_rows: dict[tuple[int, str, str], float] = field(default_factory=dict)
    #: Megatron-Core's Transformer Engine modules in training: a column-parallel linear saves
    #: its input's local sequence shard (``cat="col"`` counts as ``"rep"``; TE 2.9 ``_Linear``
    #: saves ``inputmat`` and ``_LayerNormLinear`` ``ln_out`` before the all-gather and gather
    #: them again in the backward), else (PyTorch modules) the gathered input (``"other"``)
    te_modules: bool = False
    #: ring context-parallel exchanges: (bytes per step, ranks, attention spec index); the
    #: exposed part depends on that attention's time (see ``ring_exchange``)
    rings: list[tuple[float, int, int]] = field(default_factory=list)
    #: PyTorch ring-SDPA K/V rotations (``context_parallel``): (K/V bytes of this rank's
    #: chunk, dK/dV bytes (fp32), ranks, all-gather (else all-to-all permutes), backward,
    #: attention spec of the diagonal call, of one later call); see ``cp_rotation``
    cp_rotations: list[tuple[float, float, int, bool, bool, int, int]] = field(
        default_factory=list)
    #: expert-parallel all-to-alls spanning scale-up domains: (GPUs per domain, scale-out
    #: bytes/s per GPU); None: the group fits in one domain (the scale-up link alone)
    ep_span: tuple[int, float] | None = None
    #: host calls that launch no kernel of their own, per layer of a group (and once for the
    #: head group): (views, module calls) of the framework's Python (``runtime="hf"``); None:
    #: the runtime's wall is priced per kernel launch (``roofline.wall_time``)
    host_extra: dict[int, tuple[float, float]] | None = None
    #: weight-only recipe (weight format, group size, zero points): the linears with one
    #: weight run as ``rl.weight_only_gemm`` (``wo`` specs: (m, k, n)); inference only
    weight_only: tuple[str, int, bool] | None = None
    wo: list[tuple[float, float, float]] = field(default_factory=list)
    #: GEMMs and attention at the power limiter's settled clock (a training step; a serving
    #: step of an engine kept full), else at each kernel's clock run alone
    sustained: bool = False
    #: Megatron-Core's MoE token dispatcher in training: ``"alltoall"``, ``"hybridep"`` or
    #: ``"hybridep_2511"`` (the flex dispatcher's HybridEP backend), ``"deepep"`` (its DeepEP
    #: backend; :func:`.layers.moe_mlp`, :data:`.moe_sync.SYNC_POINTS`)
    dispatcher: str = "alltoall"
    #: DeepEP (and HybridEP) across nodes: rows a GPU sends per destination node over rows per
    #: destination rank (:func:`.deepep.node_share`; each row crosses the NIC once per node)
    deepep_node_share: float = 1.0
    #: Megatron-Core token dropping in training: ``(moe_expert_capacity_factor,
    #: moe_pad_expert_input_to_capacity)``, None: dropless (:func:`.layers.moe_mlp`,
    #: :func:`.moe_sync.sync_points`, :func:`.moe_host.moe_extra_launches`)
    moe_capacity: tuple[float, bool] | None = None
    #: Megatron-Core's MoE layer in training: ``(megatron_core, moe_permute_fusion)``
    #: (:func:`.moe_host.moe_core_options`, :func:`.layers.moe_mlp`)
    moe_core: tuple[str, bool] = ("0.15", True)
    #: the MoE router (:data:`.routing.MOE_ROUTERS`): ``"topk"``, a learned gate,
    #: ``"force_balanced"``, the same with Megatron-Core's random logits (the busiest rank's
    #: rows, :func:`.routing.sampled_counts`), or ``"fake_balanced"``, AutoModel's
    #: ``FakeBalancedGate`` (:func:`.layers.moe_mlp`)
    router: str = "topk"
    #: ranks over which Transformer Engine's Float8CurrentScaling quantizers of
    #: sequence-parallel tensors reduce their amax (the TP group under sequence parallelism;
    #: :func:`.framework_ops.amax_reductions`), 1: none
    amax_ranks: int = 1
    #: llm-foundry's flash-attn unpad / pad per layer: ``(tokens, batch, heads, kv_heads,
    #: head_dim)`` on this GPU (:func:`.framework_ops.flash_unpad_pad`), None: not run
    unpad: tuple[int, int, int, int, int] | None = None
    #: module calls a framework's layer makes beside Megatron-Core's before a row's first
    #: kernel, by ``(row name without " bwd", backward)`` (may be negative where it makes
    #: fewer; :data:`.automodel.AUTOMODEL_MODULE_CALLS`), added by
    #: :func:`.moe_host.graphed_calls`
    module_calls: dict[tuple[str, bool], float] = field(default_factory=dict)

    def _row(self, group: int, name: str, kind: str, parts: list[tuple[str, int]]) -> None:
        self.rows.append((group, name, kind, parts))

    def _save(self, group: int, elements: float, cat: str = "other", name: str = "") -> None:
        if cat == "col":
            cat = "rep" if self.te_modules else "other"
        self.saved[group] = self.saved.get(group, 0.0) + elements
        self.saved_by[group, cat] = self.saved_by.get((group, cat), 0.0) + elements
        if elements:
            key = (group, name, cat)
            self.saved_rows[key] = self.saved_rows.get(key, 0.0) + elements

    def saved_input_share(self) -> float:
        """The saved input of a low-precision linear in 2-byte elements per element:
        ``TE_SAVED_BYTES[recipe] / 2`` under a Transformer Engine recipe, else 1."""
        te = dict(TE_SAVED_BYTES, **(_TE_MODULES_SAVED_BYTES if self.te_modules else {}))
        return te.get(self.recipe, 2.0) / 2.0 if self.train and self.recipe else 1.0

    def _push(self, kind: str, spec: Any) -> tuple[str, int]:
        store: list[Any] = getattr(self, kind)
        store.append(spec)
        return kind, len(store) - 1

    def linear(self, g: int, name: str, m: float, k: float, n: float, batch: float = 1,
               cat: str = "other", lowp: bool = True) -> None:
        """x (m x k) @ w (k x n), ``batch`` independent weights (experts / heads);
        ``lowp=False`` keeps it in the model's format under a recipe. Saves its input
        (``cat``; ``"col"``: a column-parallel linear's, see :attr:`te_modules`), quantized
        under a Transformer Engine recipe (:meth:`saved_input_share`)."""
        self._save(g, batch * m * k * (self.saved_input_share() if lowp else 1.0), cat, name)
        if self.weight_only is not None and batch == 1 and lowp:
            self._row(g, name, "gemm", [self._push("wo", (m, k, n))])
            return
        if self.recipe is not None and lowp:
            if batch == 1:
                part = self._push("f8", (m, k, n))
                self._row(g, name + (" (fwd+bwd)" if self.train else ""), "linear", [part])
                return
            fwd = self._push("lowp", (m, k, n, batch))
            self._row(g, name, "gemm", [fwd])
            if self.train:
                self._row(g, name + " bwd", "gemm", [self._push("lowp", (m, n, k, batch)),
                                                     self._push("lowp", (k, m, n, batch))])
            return
        self._row(g, name, "gemm", [self._push("gemms", (m, k, n, batch, False))])
        if self.train:  # dgrad (m x n @ n x k) and wgrad (x^T: k x m, stored m x k; @ m x n)
            self._row(g, name + " bwd", "gemm", [self._push("gemms", (m, n, k, batch, False)),
                                                 self._push("gemms", (k, m, n, batch, True))])

    def grouped_linear(self, g: int, name: str, counts: tuple[int, ...], k: float,
                       n: float, alt: tuple[tuple[int, ...], float] | None = None) -> None:
        """One grouped GEMM: ``counts[i]`` rows times expert i's k x n (``alt``: the
        other rows per expert of an expectation and their weight, see :attr:`grouped`).

        Serving runs one grouped kernel (``layout="contiguous"``; the engines' Triton
        ``fused_moe``, ``"fused_moe"``, set by :func:`.engines.engine_rewrite`). Training runs
        Megatron-Core's experts through Transformer Engine's ``GroupedLinear``, which issues one
        cuBLAS GEMM per local expert for the forward, the input gradient and the weight
        gradient (``layout="looped"`` / ``"looped_wgrad"``).
        """
        self._save(g, sum(counts) * k * self.saved_input_share(), name=name)
        lay = "looped" if self.train else "contiguous"
        self._row(g, name, "gemm", [self._push("grouped", (counts, k, n, lay, alt))])
        if self.train:  # dgrad dA_g = dC_g B_g^T (m_g x n by n x k); wgrad dB_g = A_g^T dC_g
            self._row(g, name + " bwd", "gemm", [
                self._push("grouped", (counts, n, k, lay, alt)),
                self._push("grouped", (counts, k, n, "looped_wgrad", alt))])

    def grouped_quantize(self, g: int, name: str, counts: tuple[int, ...],
                         fwd: tuple[float, ...], bwd: tuple[float, ...]) -> None:
        """Transformer Engine's per-expert quantize kernels (``split_quantize``) of grouped
        linears under the recipe: ``counts[i]`` rows of expert i, one kernel per expert and
        per width of ``fwd`` (the inputs' columns) and, in training, of ``bwd`` (the output
        gradients' columns). Saves nothing of its own: the quantized inputs are what the
        grouped linears save (:meth:`grouped_linear`, TE 2.9 ``_GroupedLinear.forward`` saves
        its ``inputmats``), counted there."""
        self._row(g, name, "elementwise", [self._push("quant", (counts, c)) for c in fwd])
        if self.train:
            self._row(g, name + " bwd", "elementwise",
                      [self._push("quant", (counts, c)) for c in bwd])

    def elementwise(self, g: int, name: str, numel: float, reads: float = 1,
                    writes: int = 1, cat: str = "other", kind: str = "elementwise",
                    saved: float | None = None) -> None:
        """A memory-bound kernel over ``numel`` elements of ``reads`` inputs, ``writes`` outputs
        (``kind``: the row's kind, ``"attention"`` for a kernel of an attention op's own);
        ``saved``: elements kept for the backward (default: its inputs, ``numel·reads``)."""
        self._save(g, numel * reads if saved is None else saved, cat, name)
        self._row(g, name, kind, [self._push("elts", (numel, reads, writes))])
        if self.train:  # reads grad-out + saved inputs, writes one grad per input
            self._row(g, name + " bwd", "elementwise",
                      [self._push("elts", (numel, reads + writes, reads))])

    def passes(self, g: int, name: str, fwd: list[Pass], bwd: list[Pass], saved: float = 0.0,
               kind: str = "elementwise") -> None:
        """One row of memory-bound kernels, each ``(elements, reads, writes)`` counted in the
        activation's 2-byte elements (an fp32 tensor is 2 of them), one kernel per tuple;
        ``bwd`` the kernels autograd runs for them (a ``... bwd`` row in training).
        ``saved``: elements kept for the backward; ``kind``: both rows' kind (``"attention"``
        for kernels an attention op launches itself); no forward row when ``fwd`` is empty."""
        self._save(g, saved, name=name)
        if fwd:
            self._row(g, name, kind, [self._push("elts", k) for k in fwd])
        if self.train and bwd:
            self._row(g, name + " bwd", kind, [self._push("elts", k) for k in bwd])

    def attention(self, g: int, name: str, calls: int = 1, save: bool = True,
                  **kw: Any) -> None:
        """One attention call (forward; plus its backward when training); ``calls`` equal
        calls in the row (one kernel each); ``save=False``: their inputs are saved by
        another row (the later calls of a ring over the same local queries); ``scale``
        multiplies the calls' cost and, unless ``save_scale`` is given, their saved inputs."""
        b, q, kv = kw["batch"], kw["q_len"], kw["kv_len"]
        h, kvh = kw["heads"], kw.get("kv_heads", kw["heads"])
        d, dv = kw["head_dim"], kw.get("v_head_dim", kw["head_dim"])
        scale = kw.pop("scale", 1.0)  # context parallelism: this GPU's share of the work
        keep = kw.pop("save_scale", scale)  # (FlexAttention: all of Q, K, V, O saved)
        if save:  # q, k, v; the output (unless aliased, see below) and fp32 logsumexp
            self._save(g, keep * b * (h * q * d + kvh * kv * (d + dv)), name=name)
            # a TE Linear without a quantizing recipe saves its input tensor itself (TE 2.9
            # ``cast_if_needed`` returns it): the output projection keeps this output
            out = 0.0 if self.te_modules and self.saved_input_share() == 1.0 else h * q * dv
            self._save(g, keep * b * (out + 2 * h * q), "attn_core", name)
        self._row(g, name, "attention",
                  [self._push("attn", dict(kw, backward=False, scale=scale))
                   for _ in range(calls)])
        if self.train:
            self._row(g, name + " bwd", "attention",
                      [self._push("attn", dict(kw, backward=True, scale=scale))
                       for _ in range(calls)])

    def collective(self, g: int, name: str, op: str, nbytes: float, ranks: int,
                   bwd_op: str | None = None, backward: bool = True) -> None:
        """A collective (repeated in the backward pass when training, as ``bwd_op``, unless
        ``backward`` is False; HybridEP's dispatch runs backward as its combine kernel and
        its combine as its dispatch kernel)."""
        if ranks <= 1:
            return
        self._row(g, name, "collective", [self._push("comms", (op, nbytes, ranks))])
        if self.train and backward:
            self._row(g, name + " bwd", "collective",
                      [self._push("comms", (bwd_op or _BWD_OP.get(op, op), nbytes, ranks))])

    def exchange(self, g: int, name: str, fwd: list[tuple[str, float, int]],
                 bwd: list[tuple[str, float, int]]) -> None:
        """One row of communication kernels ``(op, bytes, ranks)`` launched one after another
        (DeepEP's notify and exchange kernels), ``bwd`` those its backward launches (a
        ``... bwd`` row in training; none when empty)."""
        self._row(g, name, "collective", [self._push("comms", c) for c in fwd])
        if self.train and bwd:
            self._row(g, name + " bwd", "collective", [self._push("comms", c) for c in bwd])

    def ring_exchange(self, g: int, name: str, nbytes: float, ranks: int) -> None:
        """Ring context parallelism around the attention call just recorded: ``ranks - 1``
        sends of this rank's ``nbytes`` K/V chunk, each overlapped with one of ``ranks``
        blocks of that attention (the backward sends K/V and their gradients: twice the
        bytes against the backward's blocks)."""
        if ranks <= 1:
            return
        n = len(self.attn)
        fwd = n - 2 if self.train else n - 1
        self._row(g, name, "collective", [self._push("rings", (nbytes, ranks, fwd))])
        if self.train:
            self._row(g, name + " bwd", "collective",
                      [self._push("rings", (2 * nbytes, ranks, n - 1))])

    def cp_rotation(self, g: int, name: str, kv_bytes: float, dkv_bytes: float, ranks: int,
                    all_gather: bool, fwd: tuple[int, int], bwd: tuple[int, int]) -> None:
        """PyTorch's ring SDPA K/V rotation (:mod:`.torch_cp`) around attention rows already
        recorded: ``kv_bytes`` this rank's K and V chunk, ``dkv_bytes`` their fp32 gradients
        (sent on to the next rank at every backward step), ``fwd`` / ``bwd`` the indices in
        ``attn`` of the diagonal call and of one later call of each pass."""
        if ranks <= 1:
            return
        self._row(g, name, "collective", [self._push(
            "cp_rotations", (kv_bytes, dkv_bytes, ranks, all_gather, False, *fwd))])
        if self.train:
            self._row(g, name + " bwd", "collective", [self._push(
                "cp_rotations", (kv_bytes, dkv_bytes, ranks, all_gather, True, *bwd))])

    def calls_row(self, g: int, name: str, kind: str, calls: list[Any], saved: float = 0.0,
                  cat: str = "other") -> None:
        """One row of registry Calls (the kernels one module launches), priced by the op
        registry exactly as ``roofline.torch`` prices them; ``saved`` activation elements."""
        if saved:
            self._save(g, saved, cat, name)
        if calls:
            self._row(g, name, kind, [self._push("calls", c) for c in calls])
