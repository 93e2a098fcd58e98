"""Finite serving runs at a rate: latency statistics are expectations over the arrival
phase (issue #25). With arrivals at fixed times, where each lands against the engine's step
boundaries set its wait, and a longer prompt could land arrivals just before a boundary and
report a shorter TTFT; the core scores each wait from the mid-point of the window the
arrival landed in (exact in expectation for an arrival uniform in it), so a bigger request
is never reported faster beyond the scheduler's own discrete steps."""

from __future__ import annotations

import pytest

import roofline as rl

T = rl.transformer
H100 = "H100 SXM"
#: Allowed dip of a latency when the problem grows: the engine's discrete steps (which step
#: a prompt's last chunk lands in, whether a step runs prompts alone) still move a run's
#: statistics by a fraction of a step; a phase artefact moved them by up to half a step.
TOL = 0.02
STATS = ("ttft_s", "ttft_median_s", "e2e_s")


def _sweep(axis: str, values: list, **kw) -> list:
    return [T.serve("Llama-3-8B", H100, **{**kw, axis: v}).iloc[0] for v in values]


@pytest.mark.parametrize("runtime", ["vllm", "sglang"])
@pytest.mark.parametrize("rate,arrivals", [(10.0, "even"), (40.0, "even"), (10.0, "poisson")])
@pytest.mark.parametrize("axis,values", [("prompt_len", [128, 192, 256, 384, 512]),
                                          ("output_len", [16, 32, 64, 128])])
def test_latency_is_monotone_in_request_size(runtime, rate, arrivals, axis, values) -> None:
    kw = dict(prompt_len=256, output_len=32, num_requests=30, request_rate=rate,
              arrivals=arrivals, runtime=runtime)
    rows = _sweep(axis, values, **kw)
    for a, b, va, vb in zip(rows[:-1], rows[1:], values[:-1], values[1:], strict=True):
        for s in STATS:
            assert b[s] >= a[s] * (1 - TOL), (s, axis, va, vb, a[s], b[s])


@pytest.mark.parametrize("runtime", ["vllm", "sglang"])
def test_latency_is_monotone_in_request_rate(runtime) -> None:
    rates = [2.0, 5.0, 10.0, 20.0, 40.0]
    rows = _sweep("request_rate", rates, prompt_len=256, output_len=32, num_requests=30,
                  runtime=runtime)
    for a, b, ra, rb in zip(rows[:-1], rows[1:], rates[:-1], rates[1:], strict=True):
        for s in STATS:
            assert b[s] >= a[s] * (1 - TOL), (s, ra, rb, a[s], b[s])



#: All requests at once: the remaining dips (<= 0.3 %) are which step a request's last chunk
#: lands in and how many requests already decode in it; the per-prompt attention floor moved
#: the median TTFT by up to 3.9 % (vllm, 100 requests, prompt 96 -> 128: 206.6 -> 198.5 ms).
TOL_AT_ONCE = 0.005


@pytest.mark.parametrize("runtime", ["vllm", "sglang"])
@pytest.mark.parametrize("num_requests", [30, 100])
def test_all_at_once_latency_is_monotone_in_prompt_len(runtime, num_requests) -> None:
    values = [64, 96, 128, 160, 192, 224, 256, 320, 384, 512]
    rows = _sweep("prompt_len", values, output_len=32, num_requests=num_requests,
                  runtime=runtime)
    for a, b, va, vb in zip(rows[:-1], rows[1:], values[:-1], values[1:], strict=True):
        for s in STATS:
            assert b[s] >= a[s] * (1 - TOL_AT_ONCE), (s, va, vb, a[s], b[s])


def test_prefill_attention_pays_the_floor_once_per_step() -> None:
    """A step's prompt tokens run one variable-length attention kernel: two whole prompts
    cost the attention of a two-prompt prefill (one floor), less than twice one prompt's;
    the price is non-decreasing in the tokens and exact at whole prompts."""
    from roofline.transformer.serving.engine import StepPricer

    p = StepPricer(T.config("Llama-3-8B"), prompt_len=256, output_len=32, q_len=1,
                   kw={"hardware": H100})
    one, two = p.prefill_attention_s(256), p.prefill_attention_s(512)
    assert one == pytest.approx(p._prompts_attention_s(1))
    assert one < two < 2 * one
    prices = [p.prefill_attention_s(t) for t in (1, 16, 64, 200, 256, 300, 512, 700, 1024)]
    assert all(b >= a for a, b in zip(prices[:-1], prices[1:], strict=True))
    assert prices[0] > 0
