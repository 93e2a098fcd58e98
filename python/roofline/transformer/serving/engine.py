"""Engine steps of in-flight (continuous) batching, priced from the op models.

A serving engine (vLLM, TensorRT-LLM, SGLang) runs one *step* at a time over every running
request: the decoding requests add one token each (``k+1`` with speculative decoding) and
prompts waiting for their prefill add chunks of up to what the step's token budget leaves
(chunked prefill), so the prompts' GEMMs are batched with the decode tokens. This module prices
the two kinds of step the steady state is made of:

- a *decode step*: ``d`` requests against their KV caches, launched as one CUDA graph
  (``rl.transformer.estimate(phase="decode", launch="graph")``);
- a *mixed step*: the same plus ``p`` prefill tokens. Every op outside attention (norms,
  projections, MLP / experts, collectives) runs over ``d·q + p`` tokens; decode attention is
  the decode step's; the prefill tokens' attention is one variable-length causal kernel
  over the step's ``n = p / prompt`` prompts (a prompt's chunks attend to their prefix:
  summed over its chunks that is the causal prefill's work), priced as the attention of a
  prefill of ``n`` prompts: exact at whole ``n``, linear in ``n`` between (and below one
  prompt, along the step from one to two), so the kernel's floor is paid once per step and
  the work is summed over the prompts; the logits stay the decode step's (a prefill chunk computes
  logits for its last token only). Mixed steps are launched as the decode steps are (vLLM
  V1 captures piecewise CUDA graphs for mixed batches; TensorRT-LLM's PyTorch backend runs
  them eagerly, which only matters when the host's launches outlast the GPU work, i.e. at
  low load): their wall time is at least the host's launch time in that mode. An engine
  whose prompt batches run eagerly (SGLang's extend batches, ``runtime="sglang"``) spends
  its eager prefill's host time (the ``nn.Module`` forward in Python) on every step that
  carries prompt tokens, whatever their number.

Assumptions: attention of a decode step is priced at the mean context of the decoding
requests (memory-bound decode attention reads the sum of their contexts, which the mean
times the count gives); the prefill tokens of an MLA model run through the decode-form
(absorbed) projections; chunked prefill's re-read of the prefix KV per chunk is not charged.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..._params.memo import Memo, pricing_token
from ..config import TransformerConfig
from ..engines import ENGINE_RUNTIMES, engine_step_gap_s
from ..estimate import estimate
from ..report import ModelEstimate

__all__ = ["StepPricer", "split_time"]

#: Step terms priced so far, across pricers (a serving validation prices the same model,
#: engine and hardware in many runs): key = (the pricer's :attr:`StepPricer.memo_key`, what,
#: sizes) -> floats. Each entry is what :func:`~roofline.transformer.estimate` gives for those
#: inputs, so reading it changes no figure.
_TERMS = Memo(50_000)
#: A number per distinct pricer input (``_TERMS`` keys carry it, not the inputs, which hash
#: slowly); numbers are never reused, so entries of a forgotten input are never read again.
_INPUTS: dict[tuple[Any, ...], int] = {}
_NUMBERS = itertools.count()


def split_time(est: ModelEstimate) -> tuple[float, float, float]:
    """GPU seconds of a step estimate split into (attention, head, every other op).

    ``head`` is the embedding, final norm and LM head (run once per step); ``attention``
    is every op of kind ``"attention"`` over all layers.
    """
    counts = [len(layers) if kind != "head" else 1 for kind, layers in est.groups]
    times = np.asarray(est.columns["time_s"], dtype=float)
    attn = head = rest = 0.0
    for (g, _name, kind), t in zip(est.rows, times, strict=True):
        share = float(t) * counts[g]
        if est.groups[g][0] == "head":
            head += share
        elif kind == "attention":
            attn += share
        else:
            rest += share
    return attn, head, rest


@dataclass
class StepPricer:
    """Prices decode and mixed engine steps of one model on one GPU group (estimates cached).

    Parameters
    ----------
    cfg : TransformerConfig
        The served model.
    prompt_len, output_len : int
        Tokens per request in and out.
    q_len : int
        Tokens per decoding request per step (``spec_k + 1``).
    kw : dict
        Keyword arguments of :func:`~roofline.transformer.estimate` shared by every step
        (hardware, tp, ep, linear_recipe, kv_dtype, efficiency, ...).
    cuda_graphs : bool
        Decode steps launched as one CUDA graph (else eagerly).
    """

    cfg: TransformerConfig
    prompt_len: int
    output_len: int
    q_len: int
    kw: dict[str, Any]
    cuda_graphs: bool = True
    _decode: dict[tuple[int, int], ModelEstimate] = field(default_factory=dict, repr=False)
    _tokens: dict[int, ModelEstimate] = field(default_factory=dict, repr=False)
    _prefill: ModelEstimate | None = field(default=None, repr=False)
    _prefill_attn: dict[int, float] = field(default_factory=dict, repr=False)
    _memo_key: int | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        try:  # every input of the step estimates, the hardware and efficiency as resolved now
            kw = tuple(sorted(self.kw.items()))
            hash(kw)
        except TypeError:  # an unhashable argument: priced every time
            return
        token = pricing_token(self.kw.get("hardware"), self.kw.get("efficiency", "default"))
        if token is not None:
            key = (self.cfg, self.q_len, self.cuda_graphs, kw, token)
            if key not in _INPUTS:
                if len(_INPUTS) >= 4096:
                    _INPUTS.clear()
                _INPUTS[key] = next(_NUMBERS)
            self._memo_key = _INPUTS[key]

    def _memo(self, what: str, size: tuple[int, ...], price: Any) -> Any:
        """``price()`` memoized across pricers under (this pricer's inputs, ``what``, ``size``)."""
        if self._memo_key is None:
            return price()
        key = (self._memo_key, what, size)
        hit = _TERMS.get(key)
        return hit if hit is not None else _TERMS.put(key, price())

    @property
    def kv_len(self) -> int:
        """Mean keys per decoding request: the prompt plus half the output (contexts spread
        evenly over ``[prompt, prompt + output]`` in steady state), plus the ``q_len``
        tokens of the step."""
        return self.prompt_len + max(self.output_len // 2, 1) + self.q_len - 1

    def decode_estimate(self, d: int, kv_len: int | None = None) -> ModelEstimate:
        """The decode step of ``d`` requests at ``kv_len`` keys each (default: the mean
        context :attr:`kv_len`)."""
        kv = self.kv_len if kv_len is None else kv_len
        if (d, kv) not in self._decode:
            self._decode[d, kv] = estimate(self.cfg, "decode", d, kv_len=kv, q_len=self.q_len,
                                           launch="graph" if self.cuda_graphs else "eager",
                                           **self.kw)
        return self._decode[d, kv]

    def _token_estimate(self, tokens: int) -> ModelEstimate:
        if tokens not in self._tokens:
            self._tokens[tokens] = estimate(self.cfg, "decode", tokens, kv_len=1,
                                            launch="graph" if self.cuda_graphs else "eager",
                                            **self.kw)
        return self._tokens[tokens]

    def prefill_estimate(self) -> ModelEstimate:
        """One causal prefill of a whole prompt (its attention prices the prompt's chunks)."""
        if self._prefill is None:
            self._prefill = estimate(self.cfg, "prefill", 1, seq_len=self.prompt_len,
                                     **self.kw)
        return self._prefill

    def _prompts_attention_s(self, prompts: int) -> float:
        """Attention GPU seconds of one causal prefill of ``prompts`` whole prompts."""
        if prompts not in self._prefill_attn:
            def price() -> float:
                est = self.prefill_estimate() if prompts == 1 else \
                    estimate(self.cfg, "prefill", prompts, seq_len=self.prompt_len, **self.kw)
                return split_time(est)[0]
            self._prefill_attn[prompts] = self._memo("prefill_attention",
                                                     (prompts, self.prompt_len), price)
        return self._prefill_attn[prompts]

    def _prefill_terms(self) -> tuple[float, float]:
        """(head GPU seconds, eager host seconds or 0) of the prefill of one whole prompt."""
        def price() -> tuple[float, float]:
            est = self.prefill_estimate()
            pre = est.wall
            eager = pre is not None and pre.mode == "eager"
            return split_time(est)[1], float(pre.host_s) if eager and pre is not None else 0.0
        terms: tuple[float, float] = self._memo("prefill", (self.prompt_len,), price)
        return terms

    def _decode_terms(self, d: int, kv_len: int | None) -> tuple[float, float, float, float]:
        """(wall, GPU, head, every op but attention and the head) seconds of the decode step
        of ``d`` requests at ``kv_len`` keys each."""
        kv = self.kv_len if kv_len is None else kv_len

        def price() -> tuple[float, float, float, float]:
            est = self.decode_estimate(d, kv)
            _, head, rest = split_time(est)
            gpu = float(est.wall.gpu_s if est.wall is not None else est.time_s)
            wall = float(est.wall_s)
            if est.wall is not None and est.wall.mode == "graph":  # the engine's step loop
                wall += engine_step_gap_s(str(self.kw.get("runtime")), d,
                                          self.kw.get("hardware"),
                                          self.kw.get("efficiency", "default"))
            return wall, gpu, head, rest
        terms: tuple[float, float, float, float] = self._memo("decode", (d, kv), price)
        return terms

    def _token_terms(self, tokens: int) -> tuple[float, float]:
        """(every op but attention and the head, host launch seconds) of a step of
        ``tokens`` tokens (:meth:`_token_estimate`)."""
        def price() -> tuple[float, float]:
            est = self._token_estimate(tokens)
            host = est.wall.host_s if est.wall is not None else 0.0
            return split_time(est)[2], float(host)
        terms: tuple[float, float] = self._memo("tokens", (tokens,), price)
        return terms

    def prefill_attention_s(self, prefill_tokens: int) -> float:
        """Attention GPU seconds of ``prefill_tokens`` prompt tokens in one step.

        A real engine runs one variable-length attention kernel per step over all its
        prompts (vLLM's and SGLang's varlen FlashAttention / FlashInfer calls): the kernel's
        floor once, the work summed. With ``n = prefill_tokens / prompt_len`` and ``A(b)``
        the attention of a causal prefill of ``b`` whole prompts, this is ``A(b) + (n - b) *
        (A(b + 1) - A(b))`` with ``b = max(floor(n), 1)``: exact at whole ``n``, continuous
        and non-decreasing in ``n`` (``A`` is), and below one prompt the floor plus ``n``
        times one prompt's marginal work (never below 0).
        """
        if prefill_tokens <= 0:
            return 0.0
        n = prefill_tokens / self.prompt_len
        b = max(int(np.floor(n)), 1)
        lo = self._prompts_attention_s(b)
        if n == b:
            return lo
        hi = self._prompts_attention_s(b + 1)
        return max(lo + (n - b) * max(hi - lo, 0.0), 0.0)

    def decode_step_s(self, d: int, kv_len: int | None = None) -> float:
        """Wall seconds of a decode step of ``d`` requests at ``kv_len`` keys each (default
        :attr:`kv_len`; graph launch included, and under a graph the engine's gap between two
        steps, :func:`~roofline.transformer.engines.engine_step_gap_s`: SGLang's FlashInfer
        plan reads its indptr back before each replay)."""
        return self._decode_terms(d, kv_len)[0]

    def launch_s(self, d: int, prefill_tokens: int, kv_len: int | None = None) -> float:
        """Host seconds the engine spends launching the step of :meth:`mixed_step_s` before
        the step counts as launched: 0 for a decode step replayed as one CUDA graph (its
        replay gap is in the step time), its eager host time for a decode step launched
        eagerly (above the capture sizes, or without CUDA graphs), and for a step carrying
        prompt tokens the host term :meth:`mixed_step_s` takes (an engine's eager prefill's
        host time, SGLang's extend batches).

        What it times: SGLang's overlap scheduler hands out a step's results only once the
        next step's launch is done (``managers/tp_worker_overlap_thread.py``,
        ``resolve_batch_result`` waits for ``launch_done``, which the forward thread sets
        when ``forward_batch_generation`` has launched the model's forward), see
        ``serve(num_requests=...)``. The sampler's kernels after ``launch_done`` are not
        counted. Assumes the launch queue never fills (the host is not throttled by the GPU),
        so for a GPU-bound eager step this is its host time, not its GPU time.
        """
        if prefill_tokens <= 0:
            if d <= 0:
                return 0.0
            kv = self.kv_len if kv_len is None else kv_len

            def price() -> float:
                wall = self.decode_estimate(d, kv).wall
                return float(wall.host_s) if wall is not None and wall.mode == "eager" else 0.0
            decode: float = self._memo("decode_launch", (d, kv), price)
            return decode
        _, host = self._token_terms(d * self.q_len + prefill_tokens)
        if self.kw.get("runtime") in ENGINE_RUNTIMES or not self.cuda_graphs:
            host = max(host, self._prefill_terms()[1])  # prompt batches launched eagerly
        return host

    def mixed_step_s(self, d: int, prefill_tokens: int, kv_len: int | None = None) -> float:
        """Wall seconds of a step of ``d`` decoding requests plus ``prefill_tokens`` prompt
        tokens: the decode step, plus the non-attention ops' extra time over
        ``d·q_len + prefill_tokens`` tokens, plus the prompt tokens' attention in one
        variable-length kernel (:meth:`prefill_attention_s`); at least the host's launches
        of the step's kernels (and, for an engine whose prompt batches run eagerly or a run
        without CUDA graphs, its eager
        prefill's host time). The decoding
        requests attend to ``kv_len`` keys each (default :attr:`kv_len`)."""
        if prefill_tokens <= 0:
            return self.decode_step_s(d, kv_len) if d > 0 else 0.0
        rest_mixed, host = self._token_terms(d * self.q_len + prefill_tokens)
        attn_pre = self.prefill_attention_s(prefill_tokens)
        head_pre, host_pre = self._prefill_terms()
        if d > 0:
            _, gpu, head, rest_dec = self._decode_terms(d, kv_len)
            gpu += max(rest_mixed - rest_dec, 0.0) + attn_pre
        else:  # prefill only: logits of the last prompt token, priced with the prefill's head
            gpu = rest_mixed + head_pre + attn_pre
        if self.kw.get("runtime") in ENGINE_RUNTIMES or not self.cuda_graphs:
            host = max(host, host_pre)  # prompt batches launched eagerly (0 otherwise)
        return max(gpu, host)
