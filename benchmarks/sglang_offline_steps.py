"""Where the model's time goes in SGLang v0.4's offline bursts, step class by step class (task
sgdecode14).

The DataCrunch SGLang offline rows (Llama 3.3 70B, TP 4, H200, ``bench_serving`` with every
prompt sent at once, ``data/hardware-notes.md`` sections 32, 33, 35) are priced 19-33 % too
fast. This script runs the same finite bursts through ``transformer.serve(num_requests=...)``
(the rows' configurations, built here, not read from the jobs file) and splits each run's
makespan by step class:

- ``graph``: decode steps of at most 160 requests, replayed as SGLang v0.4's CUDA graphs
  (``cuda_graph_max_bs`` 160, ``engines._CAPTURE``), plus the FlashInfer plan's replay gap;
- ``eager``: decode steps above 160 requests, the ``nn.Module`` forward launched from Python
  (host time ``engines.engine_host_calls`` on the H200 host terms) against their GPU time;
- ``prefill``: extend batches (SGLang runs them alone; the decoding requests wait).

For each class: steps, seconds, mean step, mean decoding requests and mean prompt tokens;
for the eager decode steps also their mean GPU and host time, i.e. how close to balanced
their launch is. With ``--serial`` it prices, as a diagnostic only (no source mechanism
found, section 39), every eager decode step at host + GPU time instead of
``max(host, GPU)``.

Nothing is fitted and no measured figure is read. Run:
``PYTHONPATH=python python benchmarks/sglang_offline_steps.py [--serial]``.
"""

from __future__ import annotations

import importlib
import sys
from typing import Any

import roofline.transformer.serving.engine as engine_mod
from roofline.transformer.engines import capture_sizes

serve_mod = importlib.import_module("roofline.transformer.planner.serve")

#: The five offline runs: (name, mean prompt, mean output, requests), bench_serving's
#: ``--random-input`` / ``--random-output`` / ``--num-prompts`` with the runs' mean lengths.
RUNS = (("1024/1024", 508, 515, 3000), ("1024/512", 509, 257, 4000),
        ("4096/2048", 2047, 1023, 800), ("4096/1024", 2065, 507, 1500),
        ("256/512", 130, 255, 6000))
#: The server's settings as the rows price them (section 32 / 33 and the launch script).
SERVE = dict(tp=4, runtime="sglang", memory_fraction=0.85, kv_admission="ignore_eos",
             page_tokens=1, token_budget=8192, lengths="uniform")


def _serial_decode_terms() -> None:
    """Price an eager decode step at host + GPU (diagnostic)."""
    orig = engine_mod.StepPricer._decode_terms

    def terms(self: Any, d: int, kv_len: int | None) -> tuple[float, float, float, float]:
        wall, gpu, head, rest = orig(self, d, kv_len)
        est = self.decode_estimate(d, self.kv_len if kv_len is None else kv_len)
        if est.wall is not None and est.wall.mode == "eager":
            wall = float(est.wall.gpu_s) + float(est.wall.host_s)
        return wall, gpu, head, rest

    engine_mod.StepPricer._decode_terms = terms  # type: ignore[method-assign]
    engine_mod.StepPricer._memo = (  # type: ignore[method-assign]
        lambda self, what, size, price: price())


def main() -> None:
    serial = "--serial" in sys.argv[1:]
    if serial:
        _serial_decode_terms()
    top = capture_sizes("sglang")[-1]
    acc: dict[str, list[float]] = {}
    core = serve_mod._core
    inner = core.inflight_run

    def run(*args: Any) -> Any:
        step_s = args[9]

        def timed(d: float, p: float, k: float) -> float:
            t = float(step_s(d, p, k))
            cls = "prefill" if p > 0 else ("graph" if d <= top else "eager")
            row = acc.setdefault(cls, [0.0, 0.0, 0.0, 0.0])
            row[0] += 1
            row[1] += t
            row[2] += d
            row[3] += p
            return t
        return inner(*args[:9], timed, *args[10:])

    core.inflight_run = run
    try:
        print(f"Llama-3-70B TP 4 on H200, SGLang v0.4 (graphs up to {top} requests)"
              + (", eager decode priced at host + GPU (diagnostic)" if serial else ""))
        for name, prompt, output, n in RUNS:
            acc.clear()
            x = serve_mod.serve("Llama-3-70B", "H200", prompt_len=prompt, output_len=output,
                                num_requests=n, **SERVE).iloc[0]
            print(f"\n{name}: {x.tokens_per_s:7.1f} output tokens/s, makespan "
                  f"{x.makespan_s:6.1f} s, peak {x.peak_running} running, median ITL "
                  f"{x.itl_median_s * 1e3:6.1f} ms, median TTFT {x.ttft_median_s:6.1f} s")
            for cls in ("graph", "eager", "prefill"):
                c, t, d, p = acc.get(cls, [0.0, 0.0, 0.0, 0.0])
                if not c:
                    continue
                print(f"  {cls:8s} {c:5.0f} steps {t:6.1f} s  mean {t / c * 1e3:6.1f} ms  "
                      f"decoding {d / c:6.0f}  prompt tokens {p / c:6.0f}")
            mean_d = int(round(acc.get("eager", [1.0, 0.0, 0.0, 0.0])[2]
                               / max(acc.get("eager", [1.0])[0], 1.0)))
            if mean_d > top:
                est = engine_mod.estimate("Llama-3-70B", "decode", mean_d,
                                          kv_len=prompt + output // 2, hardware="H200",
                                          tp=4, runtime="sglang")
                assert est.wall is not None
                print(f"  eager decode of {mean_d} at {prompt + output // 2} keys: GPU "
                      f"{est.wall.gpu_s * 1e3:6.1f} ms, host {est.wall.host_s * 1e3:6.1f} ms")
    finally:
        core.inflight_run = inner


if __name__ == "__main__":
    main()
