"""SGLang v0.4's extend (prefill) step, part by part, as the model prices it (task sgprefill13).

The DataCrunch SGLang rows (``datacrunch-research/h200-benchmarks`` @ c091ef5, server
``lmsysorg/sglang:latest`` of Dec 2024, ``--tp-size 4 --disable-radix-cache
--enable-torch-compile``) have TTFT ~11 ms (70B TP 4, 1-2 requests/s) and ~27 ms (405B TP 8,
1 request/s) short, and the missing time behaves like a longer prefill step
(``data/hardware-notes.md`` section 27). This script prints what the model's extend step is
made of, so that each lead can be sized against that gap:

1. the step's GPU time by kind (GEMMs, attention, all-reduces, elementwise, head) and its host
   time by call class (views, kernel calls, GEMM calls, attention calls, module calls, the
   step entry) on the H200 host terms; whether the step is host- or GPU-bound and by how much
   (the GPU slack: how far the GPU time could grow before the step's wall moves);
2. the host calls of SGLang's own extend path outside the layers, counted from the source of
   that line (``model_executor/forward_batch_info.py`` ``ForwardBatch.init_new``,
   ``layers/attention/flashinfer_backend.py`` ``init_forward_metadata`` /
   ``FlashInferIndicesUpdaterPrefill.call_begin_forward``, FlashInfer 0.1.6
   ``BatchPrefillWithPagedKVCacheWrapper.begin_forward``, ``layers/logits_processor.py``), and
   which of them lie after the plan's first blocking device-to-host copy (only those are on
   the launch's critical path: the earlier ones overlap the previous batch's GPU time),
   priced at the model's per-call host terms;
3. the number of TP synchronization points per step (each all-reduce waits for every rank's
   launch): with the step host-bound, the wall runs at the slowest rank's pace segment by
   segment, ``sum_segments max_ranks(host)``; the per-segment spread that would account for
   each millisecond of missing step time, ``1 ms / (segments * E[max of tp normals])``
   (E = 1.0294 for 4, 1.4236 for 8 standard normals; order statistics, not fitted);
4. the step at the power limiter's settled clock (``estimate(sustained=True)``), an upper
   bound on what the limiter can add to one long prefill (the H200 droop measured in
   ``data/programs/h200/clock/``: boost for ~20 ms, 5 % slower by 20-50 ms, 15 % by
   50-100 ms);
5. the same for an 8192-token extend batch (the offline rows' chunked prefill of 4096-token
   prompts: SGLang's ragged FlashInfer path at >= 4096 tokens), with attention's share.

Nothing is fitted and no job row is read. Run:
``PYTHONPATH=python python benchmarks/sglang_prefill_parts.py``.
"""

from __future__ import annotations

from typing import Any

import roofline as rl
from roofline._params.resolve import resolve
from roofline.transformer.engines import engine_host_calls

#: Expected maximum of n independent standard normal draws (order statistics tables).
_EMAX = {1: 0.0, 2: 0.5642, 4: 1.0294, 8: 1.4236}

#: SGLang's extend path outside the layers, one step (Dec 2024 line, v0.4.0 - v0.4.1), in
#: launch order: (call, host class, after the plan's first device-to-host copy?). The
#: forward thread: ``resolve_future_token_ids`` (a ``torch.compile``d function), then
#: ``ForwardBatch.init_new``: ``extend_seq_lens`` / ``extend_prefix_lens`` as
#: ``torch.tensor(...).to(device, non_blocking=True)``, ``compute_position_triton`` (two
#: ``torch.empty``, one Triton kernel); ``init_forward_metadata`` (paged wrapper below 4096
#: tokens): ``kv_indptr[1:bs+1] = torch.cumsum(seq_lens)``, ``torch.empty`` of the indices,
#: ``create_flashinfer_kv_indices_triton``, ``qo_indptr[1:bs+1] = torch.cumsum(seq_lens -
#: prefix_lens)``, ``end_forward``, then FlashInfer 0.1.6's ``begin_forward``: four
#: ``.to(device)`` of buffers already there (no copy), ``torch.empty(0)``, and the C++ plan,
#: which copies ``qo_indptr`` and ``paged_kv_indptr`` ``.to(kCPU)`` (blocking: the first
#: waits for the previous batch's GPU work) and copies its work lists to the device. After
#: the layers, the logits processor's extend path without logprobs: ``torch.cumsum
#: (extend_seq_lens) - 1`` and ``hidden_states[last_index]``.
EXTEND_STEP_CALLS: tuple[tuple[str, str, bool], ...] = (
    ("resolve_future_token_ids (compiled)", "compiled", False),
    ("extend_seq_lens tensor + H2D", "kernel", False),
    ("extend_prefix_lens tensor + H2D", "kernel", False),
    ("compute_position_triton: 2 empty", "view", False),
    ("compute_position_triton: Triton kernel", "kernel", False),
    ("kv_indptr cumsum", "kernel", False),
    ("kv_indptr slice copy", "kernel", False),
    ("kv_indices empty", "view", False),
    ("create_flashinfer_kv_indices_triton", "kernel", False),
    ("seq_lens - prefix_lens", "kernel", False),
    ("qo_indptr cumsum", "kernel", False),
    ("qo_indptr slice copy", "kernel", False),
    ("begin_forward: 4 .to(device) no-ops, empty(0)", "view", False),
    ("plan: qo_indptr .to(kCPU) [blocking, waits for the previous batch]", "kernel", False),
    ("plan: paged_kv_indptr .to(kCPU) [blocking]", "kernel", True),
    ("plan: work lists H2D", "kernel", True),
    ("logits: cumsum(extend_seq_lens) - 1", "kernel", True),
    ("logits: sub", "kernel", True),
    ("logits: hidden_states[last_index]", "kernel", True),
)


def _class_s(terms: Any) -> dict[str, float]:
    """Host seconds per call of each class on the resolved host terms."""
    e = float(terms.eager_launch_s)
    return {"view": e * terms.op_view_launches, "kernel": e * terms.op_kernel_launches,
            "gemm": e * terms.op_gemm_launches, "attention": e * terms.op_attention_launches,
            "module": e * terms.module_call_launches, "step": e * terms.step_call_launches,
            "compiled": float(terms.compiled_call_s)}


def _kernels(name: str, kind: str) -> tuple[str, int]:
    """(host class, kernels) of one op row of an SGLang step (``engines.engine_rewrite``:
    the KV-cache write is two index copies)."""
    if kind == "gemm":
        return "gemm", 1
    if kind == "attention":
        return "attention", 1
    return "kernel", 2 if name == "kv cache write" else 1


def extend_parts(model: str, tp: int, prompts: int, prompt_len: int) -> None:
    """Print one extend batch's parts (``prompts`` prompts of ``prompt_len`` tokens)."""
    est = rl.transformer.estimate(model, "prefill", prompts, seq_len=prompt_len,
                                  hardware="H200", tp=tp, runtime="sglang")
    terms = resolve("H200", "default")[2].host
    per = _class_s(terms)
    cfg = est.config
    extra = engine_host_calls(cfg, est.groups)
    gpu: dict[str, float] = {}
    calls: dict[str, float] = {}
    segments = 0
    for (g, name, kind), t in zip(est.rows, est.columns["time_s"], strict=True):
        gkind, layers = est.groups[g]
        reps = 1 if gkind == "head" else len(layers)
        key = "head" if gkind == "head" else kind
        gpu[key] = gpu.get(key, 0.0) + float(t) * reps
        cls, n = _kernels(name, kind)
        calls[cls] = calls.get(cls, 0.0) + n * reps
        if kind == "collective" and "all_reduce" in name:
            segments += reps
    for g, (gkind, layers) in enumerate(est.groups):
        reps = 1 if gkind == "head" else len(layers)
        views, modules = extra.get(g, (0.0, 0.0))
        calls["view"] = calls.get("view", 0.0) + views * reps
        calls["module"] = calls.get("module", 0.0) + modules * reps
    calls["step"] = 1.0
    host_by = {k: n * per[k] for k, n in calls.items()}
    wall = est.wall
    assert wall is not None
    tokens = prompts * prompt_len
    print(f"{model} TP {tp}: extend batch of {prompts} x {prompt_len} = {tokens} tokens "
          f"({'ragged' if tokens >= 4096 else 'paged'} FlashInfer path in SGLang of Dec 2024; "
          f"the model prices FA3), launch {wall.mode}")
    print(f"  GPU {wall.gpu_s * 1e3:.2f} ms: " + ", ".join(
        f"{k} {v * 1e3:.2f}" for k, v in sorted(gpu.items(), key=lambda kv: -kv[1])))
    print(f"  attention {gpu.get('attention', 0.0) / wall.gpu_s:.1%} of the GPU time")
    print(f"  host {wall.host_s * 1e3:.2f} ms (model); by class, calls x per-call us = ms: "
          + ", ".join(f"{k} {calls[k]:.0f} x {per[k] * 1e6:.1f} = {host_by[k] * 1e3:.2f}"
                      for k in ("module", "gemm", "kernel", "attention", "view", "step")))
    layer_s = sum(v for k, v in host_by.items() if k != "step") / cfg.num_layers
    print(f"  per layer {layer_s * 1e3:.3f}"
          f" ms; class sum {sum(host_by.values()) * 1e3:.2f} ms")
    slack = wall.host_s - wall.gpu_s
    print(f"  wall {wall.wall_s * 1e3:.2f} ms, {'host' if slack > 0 else 'GPU'}-bound; "
          f"GPU slack {slack * 1e3:+.2f} ms (the GPU time could grow by this much before the "
          f"step's wall moves; attention x2, an FA2-class kernel at half FA3's rate, adds "
          f"{gpu.get('attention', 0.0) * 1e3:.2f} ms)")
    settled = rl.transformer.estimate(model, "prefill", prompts, seq_len=prompt_len,
                                      hardware="H200", tp=tp, runtime="sglang", sustained=True)
    assert settled.wall is not None
    print(f"  at the power limiter's settled clock (estimate(sustained=True), an upper bound "
          f"for one step after decode steps): GPU {settled.wall.gpu_s * 1e3:.2f} ms "
          f"({(settled.wall.gpu_s - wall.gpu_s) * 1e3:+.2f}), wall {settled.wall_s * 1e3:.2f} "
          f"ms ({(settled.wall_s - wall.wall_s) * 1e3:+.2f})")
    pre = sum(per[c] for _, c, after in EXTEND_STEP_CALLS if not after)
    post = sum(per[c] for _, c, after in EXTEND_STEP_CALLS if after)
    print(f"  SGLang's extend path outside the layers ({len(EXTEND_STEP_CALLS)} calls, source "
          f"count): {pre * 1e3:.3f} ms before the plan's first blocking copy (overlaps the "
          f"previous batch), {post * 1e3:.3f} ms after it (on the launch's critical path; the "
          f"model's step entry is {per['step'] * 1e3:.3f} ms)")
    emax = _EMAX.get(tp)
    if emax:
        seg = wall.host_s / max(segments, 1)
        sigma = 1e-3 / (segments * emax)
        print(f"  TP synchronization: {segments} all-reduces per step, {seg * 1e6:.0f} us of "
              f"host per segment; each ms of missing step time needs a per-segment host "
              f"spread across the {tp} ranks of {sigma * 1e6:.1f} us "
              f"({sigma / seg:.1%} of a segment) if the step is host-bound")


def decode_step(model: str, tp: int, batch: int, kv_len: int) -> None:
    """Print the graph decode step the online rows interleave with the prefills."""
    est = rl.transformer.estimate(model, "decode", batch, kv_len=kv_len, hardware="H200",
                                  tp=tp, runtime="sglang", launch="graph")
    print(f"  for scale: {model} TP {tp} graph decode step of {batch} requests at {kv_len} "
          f"keys {est.wall_s * 1e3:.2f} ms (without SGLang's replay gap)")


def length_sweep(model: str, tp: int, lengths: tuple[int, ...]) -> None:
    """Print host, GPU (own and settled clock) and wall of one prompt's extend by length: the
    online rows draw prompts uniformly from [1, 2 x mean - 1], so some of their prefills are
    host-bound and some GPU-bound."""
    print(f"  {model} TP {tp}, one prompt, ms: length: host / GPU / GPU settled / wall")
    for n in lengths:
        own = rl.transformer.estimate(model, "prefill", 1, seq_len=n, hardware="H200", tp=tp,
                                      runtime="sglang")
        hot = rl.transformer.estimate(model, "prefill", 1, seq_len=n, hardware="H200", tp=tp,
                                      runtime="sglang", sustained=True)
        assert own.wall is not None and hot.wall is not None
        print(f"    {n}: {own.wall.host_s * 1e3:.1f} / {own.wall.gpu_s * 1e3:.1f} / "
              f"{hot.wall.gpu_s * 1e3:.1f} / {own.wall_s * 1e3:.1f}")


def main() -> None:
    extend_parts("Llama-3-70B", 4, 1, 509)
    decode_step("Llama-3-70B", 4, 8, 800)
    length_sweep("Llama-3-70B", 4, (128, 256, 509, 640, 768, 1017))
    print()
    extend_parts("Llama-3.1-405B", 8, 1, 509)
    decode_step("Llama-3.1-405B", 8, 8, 800)
    length_sweep("Llama-3.1-405B", 8, (128, 256, 384, 509, 1017))
    print()
    extend_parts("Llama-3-70B", 4, 4, 2048)


if __name__ == "__main__":
    main()
