"""Serving over concurrencies: in-flight batching with chunked prefill, speculative decoding."""

from __future__ import annotations

import math
from typing import Any

from ... import _core
from ..._checks import flag, one_of
from ..._errors import ArgumentTypeError, ArgumentValueError, UnknownNameError
from ...hardware import hardware as _hardware
from ..arguments import MAX_SEQ, batch_sizes, integer, positive_number
from ..config import TransformerConfig, config
from ..engines import engine_schedule
from ..estimate import estimate
from ..serving.engine import StepPricer
from .cost import dollars_per_million_tokens

__all__ = ["ARRIVALS", "KV_ADMISSIONS", "LENGTHS", "MAX_ARRIVAL_SPAN_S", "MAX_NUM_REQUESTS",
           "MIN_REQUEST_RATE", "SERVE_RUNTIMES", "serve"]

_BATCHES = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512)
#: How the engine admits a request against the KV cache: ``reserve`` its whole context
#: (TensorRT-LLM's GUARANTEED_NO_EVICT), let it ``grow`` page by page (vLLM), or grow it
#: after SGLang's worst-case check for ``ignore_eos`` requests without a prefix cache
#: (``ignore_eos``: ``PrefillAdder.add_one_req_ignore_eos``).
KV_ADMISSIONS = ("reserve", "grow", "ignore_eos")
#: The key-length grid (tokens) a finite run prices its steps on when its KV pages are
#: smaller (SGLang's one-token pages): steps in between are interpolated linearly.
KEY_GRID_TOKENS = 32
#: How a finite run's requests arrive at ``request_rate``: evenly spaced, or with the
#: exponential gaps of a Poisson process (``sglang.bench_serving`` / ``vllm bench serve``).
ARRIVALS = ("even", "poisson")
#: A finite run's per-request lengths: every request at ``prompt_len`` / ``output_len``, or
#: spread uniformly around them (``bench_serving --dataset-name random --random-range-ratio 0``).
LENGTHS = ("fixed", "uniform")
#: Programs ``serve(runtime=...)`` prices a step with (``rl.transformer.estimate``'s runtime).
SERVE_RUNTIMES = ("megatron", "vllm", "sglang")
#: Most requests ``serve(num_requests=...)`` simulates (the run is O(engine steps) with a
#: Python-priced step time; benchmarks send hundreds to tens of thousands).
MAX_NUM_REQUESTS = 100_000
#: Slowest ``request_rate`` (requests/s; one a day is 1.2e-5): below it the steady state's
#: concurrency and throughput fall into float64's subnormal range.
MIN_REQUEST_RATE = 1e-6
#: Longest span of arrivals (``num_requests / request_rate``, seconds) a finite run takes: the
#: run's clock is a float64, whose spacing at 1e6 s is 1.2e-10 s, so step times (microseconds
#: and up) stay resolved; a slower rate would leave each request alone with no more to learn.
MAX_ARRIVAL_SPAN_S = 1e6
#: Most engine steps one finite run may take before it stops with an error.
_MAX_RUN_STEPS = 20_000_000


def _check(fn: str, name: str, value: Any, lo: float, hi: float | None = None,
           integer: bool = False) -> None:
    ok = isinstance(value, (int, float)) and not isinstance(value, bool)
    if ok and integer:
        ok = isinstance(value, int)
    if ok and not integer:
        try:
            ok = math.isfinite(value)
        except OverflowError:  # an int beyond the largest float (10**400)
            ok = False
    if not ok or value < lo or (hi is not None and value > hi):
        rng = f"[{lo}, {hi}]" if hi is not None else f">= {lo}"
        kind = "an integer" if integer else "a number"
        raise ArgumentValueError(fn, name, f"must be {kind} {rng}, got {value!r}")


def _draft(fn: str, draft_model: Any) -> TransformerConfig:
    """``draft_model`` as a config; errors name the argument ``draft_model``."""
    try:
        return config(draft_model)
    except UnknownNameError as exc:
        detail = str(exc).removeprefix("transformer.config: ")
        raise UnknownNameError(f"{fn}: draft_model: {detail}", exc.matches,
                               argument="draft_model", function=fn) from None
    except TypeError:
        raise ArgumentTypeError(fn, "draft_model", "must be a model name or a "
                                f"TransformerConfig, got {draft_model!r}") from None


def serve(model: TransformerConfig | str, hardware: Any = None, *, prompt_len: int = 2048,
          output_len: int = 512, batches: Any = _BATCHES, tp: int = 1, ep: int = 1,
          chunk_tokens: int | None = None, spec_k: int = 0, spec_alpha: float = 0.7,
          draft_model: TransformerConfig | str | None = None,
          linear_recipe: str | None = None, kv_dtype: str | None = None,
          memory_fraction: float = 0.9, price_per_gpu_hour: float | None = None,
          gpus_per_node: int | None = None, routing_skew: float = 0.0,
          efficiency: Any = "default", token_budget: int = 8192,
          kv_admission: str = "reserve", page_tokens: int = 32,
          cuda_graphs: bool = True, request_rate: float | None = None,
          runtime: str = "megatron", num_requests: int | None = None,
          decode_kv_reads: str = "per_kv_head", mixed_prefill: bool | None = None,
          overlap_schedule: bool | None = None, sustained_clock: bool | None = None,
          arrivals: str = "even", gated_mlp: str = "fused",
          allreduce: str = "custom", attention_plugin: bool = False,
          lengths: str = "fixed") -> Any:
    """Serve a model with in-flight (continuous) batching: one row per concurrency.

    Parameters
    ----------
    model : TransformerConfig or str
        The served model.
    hardware : Hardware or str
        Accelerator.
    prompt_len, output_len : int
        Tokens per request in and out (every request alike; their means with
        ``lengths="uniform"``).
    batches : sequence of int
        Concurrencies to tabulate: requests in the engine at once, each holding its KV cache
        (per GPU with ``ep > 1``). ``df.attrs["max_batch"]`` is the largest that fits.
    tp, ep : int
        Tensor / expert parallelism of one replica (``tp`` GPUs, or ``ep`` GPUs with data-
        parallel attention).
    chunk_tokens : int, optional
        Most prompt tokens one step may take (default: whatever ``token_budget`` leaves
        after the decode tokens).
    spec_k, spec_alpha, draft_model : int, float, model
        Speculative decoding: draft length ``k`` (0 = off), per-token acceptance ``alpha``,
        draft model (default: none, i.e. a free draft such as n-gram lookup; DeepSeek-V3's
        MTP module is close to one extra layer).
    linear_recipe, kv_dtype : str, optional
        Low-precision linears (e.g. ``"tensorwise"`` FP8, ``"nvfp4"``) and KV cache format
        (``"fp8"``: paged FP8 cache, read at one byte per element).
    memory_fraction : float
        Share of GPU memory usable for weights and KV cache.
    price_per_gpu_hour : float, optional
        Adds ``usd_per_m_tokens`` (output tokens).
    token_budget : int
        Most tokens one engine step processes, decode and prefill together (vLLM's
        ``max_num_batched_tokens``, TensorRT-LLM's ``max_num_tokens``).
    kv_admission : {"reserve", "grow", "ignore_eos"}
        ``"reserve"``: a request is admitted only with pages for its whole context
        ``prompt + output`` (TensorRT-LLM's default scheduler); ``"grow"``: pages are taken as
        the context grows, so the cache holds the mean context per request (vLLM, which
        preempts when it runs out); ``"ignore_eos"``: pages grow, and a finite run admits a
        request only when every running request and it can still generate all their output
        in the free pages plus what the earlier finishers free, then stops a pass once the
        free tokens less the running requests' remaining outputs at SGLang's
        ``new_token_ratio`` and the pass's admitted outputs are used up (SGLang v0.4's
        ``PrefillAdder.add_one_req_ignore_eos`` / ``budget_state``, which it takes for
        requests sent with ``ignore_eos`` when the radix cache is disabled; the C++ core's
        ``inflight_run(worst_case_admission=True)``); the steady state prices it as
        ``"grow"``.
    page_tokens : int
        Tokens per KV-cache page (block); a request holds whole pages.
    cuda_graphs : bool
        Decode steps run as one CUDA graph (one launch per step) instead of eagerly.
    runtime : {"megatron", "vllm", "sglang"}
        The program each engine step runs (``rl.transformer.estimate``'s ``runtime``):
        ``"megatron"`` (default) is the idealized fused program; ``"vllm"`` / ``"sglang"`` the
        engines' kernels (FA3 / FlashMLA on a paged cache on Hopper, fused add + RMSNorm,
        decode CUDA graphs at the engine's capture sizes: ``cuda_graphs`` is then the
        engine's choice). ``df.attrs["runtime"]`` says which one a table assumed.
    decode_kv_reads : {"per_kv_head", "per_query_head"}
        How the decode attention kernel reads a GQA model's KV cache
        (``rl.transformer.estimate``'s argument: ``"per_query_head"`` for TensorRT-LLM's
        masked multi-head attention kernel before XQA).
    gated_mlp : {"fused", "separate"}
        A gated MLP's gate and up projections as one GEMM or two (``rl.transformer.estimate``'s
        argument: ``"separate"`` for TensorRT-LLM's ``GatedMLP``, its ``fc`` and ``gate``
        linears, before ``FusedGatedMLP``).
    allreduce : {"custom", "nccl"}
        Who carries the steps' collectives (``rl.transformer.estimate``'s argument:
        ``"nccl"`` at NCCL's share of the NVLink line rate, for TensorRT-LLM's 2023 engines
        and their NCCL all-reduce plugin).
    attention_plugin : bool
        Prefill steps as TensorRT-LLM's GPT attention plugin runs them
        (``rl.transformer.estimate``'s argument: one more kernel per layer building the
        decoder info, the RoPE kernel writing K and V into the cache).
    request_rate : float, optional
        Requests per second arriving (per replica; per GPU with ``ep > 1``; at least
        :data:`MIN_REQUEST_RATE`, 1e-6): one row at the
        concurrency that rate sustains, ``N = rate · (TTFT + decode steps · step)`` (Little's
        law, solved by bisection), instead of one row per ``batches``. ValueError when the
        rate exceeds what the KV-admitted concurrency serves. With ``num_requests``: request
        ``i`` arrives at ``i / request_rate`` (``arrivals="even"``) or after exponential
        gaps of mean ``1 / request_rate`` (``"poisson"``), and ``num_requests /
        request_rate`` must be at most :data:`MAX_ARRIVAL_SPAN_S` (1e6 s: the run's float
        clock still resolves a step).
    num_requests : int, optional
        Simulate a finite benchmark run instead of the steady state (``vllm bench serve``,
        ``sglang.bench_serving``): ``num_requests`` requests, all sent at once (default) or
        at ``request_rate``, scheduled step by step until the last one finishes (see Notes).
        At most :data:`MAX_NUM_REQUESTS`; not with ``spec_k > 0`` or ``ep > 1``. Every
        request has ``prompt_len`` in and ``output_len`` out (no length distribution);
        ``batches`` is then ignored.
    mixed_prefill, overlap_schedule : bool, optional
        Scheduler policies of a finite run (``num_requests``; default: the ``runtime``'s,
        ``engines.engine_schedule``: SGLang ``False`` / ``True``, others ``True`` /
        ``False``). ``mixed_prefill=False``: a step with prompt work runs only prompt
        chunks (up to ``chunk_tokens``, else ``token_budget``) while the decoding requests
        wait. ``overlap_schedule=True``: the next batch is formed while the current step
        runs, so a request arriving during step ``k`` starts no earlier than step ``k+2``,
        and a step's tokens reach the client only once the next step has been launched
        (:meth:`~roofline.transformer.serving.StepPricer.launch_s`: at once after a graph
        replay, after the host time of an eager launch such as SGLang's prefill batches).
        The steady-state rows (without ``num_requests``) assume mixed steps: passing either
        without ``num_requests`` raises ValueError.
    arrivals : {"even", "poisson"}
        Finite run at ``request_rate``: evenly spaced arrivals (default), or a Poisson
        process as the serving benchmarks draw it, made deterministic: gap ``i`` is
        ``-ln(1 - u_i) / rate`` with ``u_i = frac(0.5 + i·0.618...)`` (the core's
        ``poisson_arrival_s``), so bursts queue prompts behind each other. ``"poisson"``
        needs ``num_requests`` and ``request_rate`` (ValueError otherwise).
    lengths : {"fixed", "uniform"}
        Finite run's per-request lengths: every request has ``prompt_len`` in and
        ``output_len`` out (default), or request ``i`` has ``1 + floor(u_i (2·prompt_len -
        1))`` in and ``1 + floor(v_i (2·output_len - 1))`` out, ``(u_i, v_i)`` the R2
        low-discrepancy sequence: integers uniform on ``[1, 2·len - 1]`` whose means are the
        given lengths, as ``bench_serving``'s random dataset draws ``randint(1, N + 1)`` with
        ``--random-range-ratio 0`` (pass the run's mean lengths). Long prompts cross the custom
        all-reduce's size limit and take longer prefills; long outputs stay longer in the
        running batch. ``"uniform"`` needs ``num_requests`` (ValueError otherwise).
    sustained_clock : bool, optional
        Price every step's GEMMs and attention at the power limiter's settled clock
        (``rl.transformer.estimate(sustained=True)``), as in an engine kept full for
        minutes. Default: ``True`` for a finite run sent all at once (``num_requests``
        without ``request_rate``: the engine is full until the drain), else ``False`` (each
        kernel at its own clock run alone).

    Returns
    -------
    pandas.DataFrame
        One row per concurrency: ``batch`` (the concurrency), ``decode_seqs`` (requests
        decoding per step), ``kv_len`` (their mean context), ``decode_step_s``,
        ``mixed_step_s`` and ``mixed_fraction`` (steps carrying prefill chunks and their
        share), ``prefill_tokens_per_step``, ``step_s`` (mean step), ``tokens_per_step``,
        ``tpot_s`` (= ITL: mean step over tokens per step), ``ttft_s``, ``tokens_per_s``
        (output tokens/s of one replica), ``tokens_per_s_per_gpu``, ``weights_gb``,
        ``kv_cache_gb``, ``memory_gb``, ``fits``; ``df.attrs``: ``max_batch`` (the
        concurrency the KV cache admits), ``prefill_s`` (one prompt's prefill alone).
        With ``num_requests``: one row, ``num_requests``, ``makespan_s`` (first arrival to
        last token), ``tokens_per_s`` (``num_requests · output_len / makespan_s``, what
        the benchmarks report), ``tokens_per_s_per_gpu``, ``ttft_s`` / ``ttft_median_s``,
        ``tpot_s`` (mean inter-token latency over every gap) / ``itl_median_s``, ``e2e_s``
        (mean request latency), ``steps``, ``mixed_steps``, ``peak_running``,
        ``decode_seqs`` (mean per step), ``preemptions``, ``kv_pages``, ``weights_gb``,
        ``mixed_prefill`` and ``overlap_schedule`` (the scheduler simulated); ``df.attrs``
        as above plus ``steady_tokens_per_s`` (the steady state at ``max_batch``). Every
        table's ``df.attrs["sustained_clock"]`` says whether the steps were priced at the
        settled clock.

    Notes
    -----
    Steady state of ``N`` concurrent requests, each with ``I = prompt_len`` prefill tokens
    and ``O = output_len`` output tokens (the first from its prefill, then ``O-1`` decode
    steps; ``(O-1)/e`` steps emitting ``e`` tokens each with speculative decoding). Every
    step carries the ``d`` decoding requests and up to ``c = min(B - d·q, chunk_tokens)``
    prompt tokens (``B = token_budget``, ``q = spec_k + 1``). Requests finish at
    ``r = d·e/(O-1)`` per step, each leaving a slot that a new prompt fills, so prefill needs
    ``r·I`` tokens per step; a prompt spends ``max(1, I/c)`` steps in prefill, hence
    ``N = d + r·max(1, I/c)`` (solved for ``d`` in the core; when ``r·I`` would exceed ``c``
    the budget, not ``N``, sets ``d``). A prompt's ``ceil(I/c)`` chunks ride in mixed steps,
    a share ``φ = min(1, r·ceil(I/c))`` of all steps, each with ``r·I/φ`` prefill tokens.
    Tokens/s = ``r·O / ((1-φ)·t_decode + φ·t_mixed)``; ITL = that mean step over ``e``;
    TTFT = ``ceil(I/c)·t_mixed`` (the request is admitted at once: no queue). Step times
    come from :class:`~roofline.transformer.serving.StepPricer` (decode under a CUDA graph,
    KV read = the decoding requests' contexts; mixed steps batch the prompt tokens' GEMMs
    with the decode tokens'). Speculative decoding: each step also runs ``k`` draft decode
    steps of the ``d`` requests and verifies ``k+1`` tokens per request, emitting
    ``e = (1-α^(k+1))/(1-α)``. KV cache per request: whole pages of ``I + O`` tokens
    (``reserve``) or of the mean context ``I + O/2`` (``grow``); capacity
    ``floor((capacity·fraction - weights) / kv_per_request)``.

    Finite run (``num_requests = N``, the C++ core's ``inflight_run``): the cache holds
    ``P = floor((capacity·fraction - weights) / page_bytes)`` pages. Request ``i`` arrives
    at ``i/rate`` (0 offline) into a FIFO queue. Each step: the ``d`` requests past their
    prefill decode one token each; the room ``c = min(B - d, chunk_tokens)`` goes to
    prompts in admission order, running prefills first, then queued requests admitted while
    room is left and their pages fit: ``ceil((I+O)/page)`` pages from admission
    (``reserve``), or pages that follow the context (``grow``), where a decode token that
    finds no free page preempts the most recently admitted request, which frees its pages
    and recomputes its prompt and generated tokens as prefill later (vLLM's recompute
    preemption). The step takes ``t(d, p, k)``: the decode step of ``d`` requests at their
    mean keys ``k`` (rounded up to a page), plus the ``p`` prefill tokens as in a mixed
    step (the StepPricer above, cached per ``(d, p, k)``). A prefill's last chunk emits the
    first token at the step's end (TTFT and e2e from arrival, as expectations over its phase:
    every arrival within one step joins the same batch, so the wait is scored from that
    step's mid-point), each decode step the next (ITL = the time since the request's
    previous token); a request with ``O`` tokens retires and frees
    its pages. Tokens/s = ``N·O / makespan``: the ramp (prompts prefilled under the budget
    while few decode), admission waits on a full cache and the drain (a shrinking last
    batch) are all in it. Without mixed prefill (SGLang) a step with prompt work is priced
    as ``t(0, p, 0)`` (the prompt chunks alone, the last tokens' logits) and the decoding
    requests' next gap spans it; with the overlap scheduler a request arriving during a
    step waits for the end of the next one before its prefill starts. SGLang's overlap loop
    (``event_loop_overlap``) processes step ``k``'s results only after launching step
    ``k+1`` (``resolve_batch_result`` waits for the forward thread's ``launch_done``), so
    step ``k``'s tokens are timed at ``start(k+1) + launch(k+1)``: ``launch`` is 0 for a
    CUDA-graph decode step (whose FlashInfer plan waits for step ``k`` anyway) and the host
    time of an eager step (a prefill batch; a decode batch above the capture sizes). The
    batch of step ``k+2`` is formed at that same instant, so it sees the arrivals until
    then (after an idle spell the second batch is formed as the first starts). A first
    token whose prefill is followed by another prefill batch thus waits for that batch's
    eager launch.
    """
    import pandas as pd

    fn = "transformer.serve"
    cfg = config(model)
    hw = _hardware(hardware)
    _check(fn, "prompt_len", prompt_len, 1, MAX_SEQ, integer=True)
    _check(fn, "output_len", output_len, 1, MAX_SEQ, integer=True)
    if prompt_len + output_len > MAX_SEQ:  # the last decode step's context
        raise ArgumentValueError(fn, "output_len", f"must keep prompt_len + output_len within "
                                 f"{MAX_SEQ} (2**24) tokens, got prompt_len={prompt_len} + "
                                 f"output_len={output_len}")
    _check(fn, "spec_k", spec_k, 0, 16, integer=True)
    _check(fn, "spec_alpha", spec_alpha, 0.0, 1.0)
    _check(fn, "memory_fraction", memory_fraction, 0.05, 1.0)
    _check(fn, "token_budget", token_budget, 1, integer=True)
    _check(fn, "page_tokens", page_tokens, 1, MAX_SEQ, integer=True)
    tp = integer(fn, "tp", tp)
    ep = integer(fn, "ep", ep)
    if price_per_gpu_hour is not None:
        price_per_gpu_hour = positive_number(fn, "price_per_gpu_hour", price_per_gpu_hour)
    draft = None if draft_model is None else _draft(fn, draft_model)
    admission = one_of(fn, "kv_admission", kv_admission, {a: a for a in KV_ADMISSIONS})
    graphs = flag(fn, "cuda_graphs", cuda_graphs)
    runtime = one_of(fn, "runtime", runtime, {r: r for r in SERVE_RUNTIMES})
    mix_default, overlap_default = engine_schedule(runtime)
    mixed = mix_default if mixed_prefill is None else flag(fn, "mixed_prefill", mixed_prefill)
    arrival = one_of(fn, "arrivals", arrivals, {a: a for a in ARRIVALS})
    spread = one_of(fn, "lengths", lengths, {a: a for a in LENGTHS})
    overlap = overlap_default if overlap_schedule is None else flag(fn, "overlap_schedule",
                                                                     overlap_schedule)
    if chunk_tokens is not None:
        _check(fn, "chunk_tokens", chunk_tokens, 1, MAX_SEQ, integer=True)
    if request_rate is not None:
        _check(fn, "request_rate", request_rate, 0.0)
        if request_rate < MIN_REQUEST_RATE:
            raise ArgumentValueError(fn, "request_rate", "must be a positive number of at "
                                     f"least {MIN_REQUEST_RATE:g} requests/s, got "
                                     f"{request_rate!r}")
    if num_requests is not None:
        _check(fn, "num_requests", num_requests, 1, MAX_NUM_REQUESTS, integer=True)
        if spec_k:
            raise ArgumentValueError(fn, "num_requests", "a finite run is simulated without "
                                     f"speculative decoding; got spec_k={spec_k!r}")
        if ep > 1:
            raise ArgumentValueError(fn, "num_requests", "a finite run is simulated for one "
                                     f"tensor-parallel replica; got ep={ep!r}")
        if request_rate is not None and num_requests / request_rate > MAX_ARRIVAL_SPAN_S:
            raise ArgumentValueError(fn, "request_rate", "must keep a finite run's arrivals "
                                     f"within {MAX_ARRIVAL_SPAN_S:g} s (num_requests / "
                                     f"request_rate), got request_rate={request_rate!r} for "
                                     f"num_requests={num_requests!r}")
    elif mixed_prefill is not None or overlap_schedule is not None:
        name, value = (("mixed_prefill", mixed_prefill) if mixed_prefill is not None
                       else ("overlap_schedule", overlap_schedule))
        raise ArgumentValueError(fn, name, "must be left unset without num_requests (it sets "
                                 "the scheduler of a finite run; "
                                 f"the steady-state rows assume mixed steps), got {value!r}")
    if arrival != "even" and (num_requests is None or request_rate is None):
        raise ArgumentValueError(fn, "arrivals", f"{arrival!r} needs a finite run at a rate "
                                 "(num_requests=... and request_rate=...), got num_requests="
                                 f"{num_requests!r}, request_rate={request_rate!r}")
    if spread != "fixed" and num_requests is None:
        raise ArgumentValueError(fn, "lengths", f"{spread!r} needs a finite run "
                                 "(num_requests=...), got num_requests=None")
    bs = batch_sizes(fn, "batches", batches)
    if sustained_clock is None:
        sustained_clock = num_requests is not None and request_rate is None
    sustained = flag(fn, "sustained_clock", sustained_clock)
    q = spec_k + 1
    if token_budget <= q:
        raise ArgumentValueError(fn, "token_budget", "must exceed the tokens of one decoding "
                                 f"request per step (spec_k + 1 = {q}), got {token_budget!r}")
    kw: dict[str, Any] = dict(hardware=hw, tp=tp, ep=ep, linear_recipe=linear_recipe,
                              kv_dtype=kv_dtype, routing_skew=routing_skew,
                              gpus_per_node=gpus_per_node, efficiency=efficiency,
                              runtime=runtime, decode_kv_reads=decode_kv_reads,
                              gated_mlp=gated_mlp, allreduce=allreduce,
                              attention_plugin=attention_plugin,
                              sustained=sustained)
    replica = ep if ep > 1 else tp
    per_replica = ep if ep > 1 else 1  # with ep, `batch` is per GPU
    pricer = StepPricer(cfg, prompt_len, output_len, q, kw, cuda_graphs=graphs)
    prefill = pricer.prefill_estimate()
    held = prompt_len + output_len if admission == "reserve" else pricer.kv_len
    held = -(-held // page_tokens) * page_tokens
    full = estimate(cfg, "decode", 1, kv_len=held, **kw)
    kv_per_seq = full.memory["kv_cache_bytes"]
    weights = full.memory["weights_bytes"]
    if hw.mem_capacity_bytes is None:
        raise ValueError(f"{fn}: {hw.name} has no mem_capacity_bytes in the database; pass "
                         "hardware=hw.replace(mem_capacity_bytes=...)")
    max_batch = int(_core.kv_capacity_sequences(hw.mem_capacity_bytes, memory_fraction,
                                                weights, kv_per_seq))
    emitted = float(_core.speculative_tokens_per_step(spec_k, spec_alpha)) if spec_k else 1.0
    chunk = float(chunk_tokens) if chunk_tokens is not None else math.inf
    def row(b: float) -> dict[str, Any]:
        st = _core.inflight_state(b, prompt_len, (output_len - 1) / emitted, token_budget, q,
                                  chunk)
        d = max(int(round(st["decode_seqs"])), 1)
        pre = int(round(st["prefill_tokens_per_mixed_step"]))
        draft_s = 0.0
        if spec_k and draft is not None:
            draft_s = spec_k * estimate(draft, "decode", d, kv_len=pricer.kv_len, hardware=hw,
                                        tp=tp, efficiency=efficiency, launch="graph",
                                        runtime=runtime, sustained=sustained).wall_s
        dec_s = pricer.decode_step_s(d) + draft_s
        mix_s = pricer.mixed_step_s(d, pre) + draft_s
        phi = st["mixed_fraction"]
        step = (1 - phi) * dec_s + phi * mix_s
        tok_s = per_replica * float(_core.inflight_tokens_per_s(
            st["completions_per_step"], output_len, dec_s, mix_s, phi))
        ttft = st["prefill_steps"] * pricer.mixed_step_s(
            d, max(pre, min(prompt_len, int(st["prefill_chunk"]))))
        mem = weights + kv_per_seq * b
        return {"batch": b, "decode_seqs": st["decode_seqs"], "kv_len": pricer.kv_len,
                "decode_step_s": dec_s, "mixed_step_s": mix_s, "mixed_fraction": phi,
                "prefill_tokens_per_step": st["prefill_tokens_per_step"],
                "step_s": step, "tokens_per_step": emitted, "tpot_s": step / emitted,
                "ttft_s": ttft, "e2e_s": ttft + (output_len - 1) / emitted * step,
                "tokens_per_s": tok_s, "tokens_per_s_per_gpu": tok_s / replica,
                "weights_gb": weights / 1e9, "kv_cache_gb": kv_per_seq * b / 1e9,
                "memory_gb": mem / 1e9,
                "fits": mem <= (hw.mem_capacity_bytes or 0.0) * memory_fraction}

    def frame(rows: list[dict[str, Any]], **attrs: Any) -> pd.DataFrame:
        """The result table: the rows, their cost per million tokens, the run's settings."""
        df = pd.DataFrame(rows)
        if price_per_gpu_hour is not None:
            df["usd_per_m_tokens"] = dollars_per_million_tokens(price_per_gpu_hour, replica,
                                                                df["tokens_per_s"])
        df.attrs.update(max_batch=max_batch, model=cfg.name, hardware=hw.name, tp=tp, ep=ep,
                        gpus=replica, prefill_s=prefill.time_s, token_budget=token_budget,
                        kv_admission=admission, kv_bytes_per_request=kv_per_seq,
                        runtime=runtime, sustained_clock=sustained, **attrs)
        return df

    if num_requests is not None:
        free = hw.mem_capacity_bytes * memory_fraction - weights
        page_bytes = kv_per_seq * page_tokens / held
        run = _run(fn, pricer, num_requests, request_rate, prompt_len, output_len,
                   token_budget, chunk, max(free, 0.0) / page_bytes, page_tokens,
                   admission == "reserve", mixed, overlap, arrival == "poisson",
                   spread == "uniform", admission == "ignore_eos")
        run.update(mixed_prefill=mixed, overlap_schedule=overlap, arrivals=arrival,
                   lengths=spread)
        steady = row(float(max_batch))["tokens_per_s"] if max_batch >= 1 else 0.0
        run.update(weights_gb=weights / 1e9, tokens_per_s_per_gpu=run["tokens_per_s"] / replica)
        return frame([run], steady_tokens_per_s=steady)
    if request_rate is None:
        return frame([row(b) for b in bs])
    return frame([_at_rate(fn, row, float(request_rate) / per_replica, max_batch)])


def _at_rate(fn: str, row: Any, rate: float, max_batch: int) -> dict[str, Any]:
    """The row at the concurrency ``N`` where ``rate · e2e(N) = N`` (bisection on ``N``)."""
    if max_batch < 1:
        raise ValueError(f"{fn}: no request's KV cache fits next to the weights")
    top = row(float(max_batch))
    if rate * top["e2e_s"] > max_batch:
        cap = max_batch / top["e2e_s"]
        raise ValueError(f"{fn}: request_rate {rate:g}/s exceeds what the engine sustains "
                         f"(about {cap:.4g} requests/s at the {max_batch} concurrent requests "
                         "its KV cache admits)")
    # e2e grows with N, so N <= rate · e2e(max_batch): the bracket scales with the rate and
    # the tolerance is relative (an absolute 1e-3 floor held every rate below ~1e-5 /s at
    # N = 6e-4, 0.099 tokens/s at 1e-300 requests/s).
    lo, hi = 0.0, rate * top["e2e_s"]
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        if rate * row(mid)["e2e_s"] > mid:
            lo = mid
        else:
            hi = mid
        if hi - lo < 1e-3 * hi:
            break
    out: dict[str, Any] = row(hi)
    out["request_rate"] = rate
    return out


def _run(fn: str, pricer: StepPricer, n: int, rate: float | None, prompt_len: int,
         output_len: int, token_budget: int, chunk: float, pages: float, page_tokens: int,
         reserve: bool, mixed: bool, overlap: bool, poisson: bool,
         uniform: bool, worst_case: bool = False) -> dict[str, Any]:
    """One finite run through the core's ``inflight_run``, steps priced by ``pricer``."""
    def memo(price: Any) -> Any:
        """``price(decodes, prefill tokens, kv_len=)`` per step, the keys rounded up to whole
        pages (no keys without decodes), each distinct step priced once. Pages smaller than
        :data:`KEY_GRID_TOKENS` are priced on that grid and interpolated linearly in the keys
        (a step's time is linear in its keys within a grid cell; pricing every key length
        of one-token pages would price ~30x as many steps)."""
        seen: dict[tuple[int, int, int], float] = {}

        def priced(d: int, p: int, k: int) -> float:
            if (d, p, k) not in seen:
                seen[(d, p, k)] = price(d, p, kv_len=k or None)
            return seen[(d, p, k)]

        def at(d: float, p: float, keys: float) -> float:
            k = -(-int(math.ceil(keys)) // page_tokens) * page_tokens if d > 0 else 0
            lo = k // KEY_GRID_TOKENS * KEY_GRID_TOKENS
            if page_tokens >= KEY_GRID_TOKENS or lo == 0 or lo == k:
                return priced(int(d), int(p), k)
            w = (k - lo) / KEY_GRID_TOKENS
            return (1.0 - w) * priced(int(d), int(p), lo) + w * priced(
                int(d), int(p), lo + KEY_GRID_TOKENS)
        return at

    step_s, launch_s = memo(pricer.mixed_step_s), memo(pricer.launch_s)

    try:
        out = _core.inflight_run(n, 0.0 if rate is None else 1.0 / rate, prompt_len,
                                 output_len, token_budget, min(chunk, float(token_budget)),
                                 math.floor(pages), page_tokens, reserve, step_s,
                                 _MAX_RUN_STEPS, mixed, overlap, poisson, uniform,
                                 launch_s if overlap else None, worst_case)
    except (ValueError, RuntimeError) as e:
        what = str(e).removeprefix("inflight_run: ")
        if "KV-cache pages" in what:
            what += ("; shorten prompt_len / output_len, or give the cache more memory "
                     "(memory_fraction, tp)")
        raise ValueError(f"{fn}: a finite run of num_requests={n}: {what}") from e
    res: dict[str, Any] = {
        "num_requests": n, "request_rate": math.inf if rate is None else rate,
        "makespan_s": out["makespan_s"], "tokens_per_s": out["tokens_per_s"],
        "ttft_s": out["ttft_mean_s"], "ttft_median_s": out["ttft_median_s"],
        "tpot_s": out["itl_mean_s"], "itl_median_s": out["itl_median_s"],
        "e2e_s": out["e2e_mean_s"], "steps": int(out["steps"]),
        "mixed_steps": int(out["mixed_steps"]), "peak_running": int(out["peak_running"]),
        "decode_seqs": out["mean_decode_seqs"], "preemptions": int(out["preemptions"]),
        "kv_pages": int(math.floor(pages))}
    return res
