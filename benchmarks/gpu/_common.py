"""Shared helpers of the GPU program scripts: timing, tracing, versions, output rows.

Timing: ``time_step(step)`` warms up, then times ``repeats`` calls, each bracketed by CUDA
events (``gpu_s``: the median, the stream time from the first kernel's launch point to the last
kernel's end) and the whole loop by ``time.perf_counter`` with one synchronize at the end
(``wall_s``: loop time / repeats, the host-inclusive time per step a user sees). L2 is not
flushed: these are programs whose steps follow each other, as in a real run.

Tracing: ``trace(step, path)`` runs ``torch.profiler`` (CPU + CUDA activities,
``record_shapes=True``) over ``steps`` calls after warm-up and writes a gzip Kineto trace.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import platform
import statistics
import time
import traceback
from collections.abc import Callable
from typing import Any

import torch

__all__ = ["Out", "do_bench", "kernel_time", "script_parser", "time_step", "trace", "versions"]


def versions() -> dict[str, Any]:
    """Versions of what ran: torch, CUDA, driver, triton, transformers, torchao, python."""
    out: dict[str, Any] = {"torch": torch.__version__, "cuda": torch.version.cuda,
                           "python": platform.python_version()}
    for mod in ("triton", "transformers", "torchao"):
        try:
            out[mod] = __import__(mod).__version__
        except Exception:  # noqa: BLE001
            out[mod] = None
    if torch.cuda.is_available():
        out["device_name"] = torch.cuda.get_device_name()
        try:
            import pynvml  # type: ignore[import-not-found]

            pynvml.nvmlInit()
            out["driver"] = pynvml.nvmlSystemGetDriverVersion()
        except Exception:  # noqa: BLE001
            out["driver"] = None
    return out


def kernel_time(fn: Callable[[], Any], calls: int = 20, warmup: int = 3
                ) -> tuple[float, float, list[list[Any]]]:
    """CUDA kernel seconds per call of ``fn`` (sum of every kernel's duration from
    ``torch.profiler`` over ``calls`` calls after ``warmup``; host time excluded), kernel
    launches per call, and the kernels as [name, µs per call, launches per call], longest
    first."""
    from collections import defaultdict

    from torch.profiler import ProfilerActivity, profile

    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(calls):
            fn()
        torch.cuda.synchronize()
    per: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0])
    for evt in prof.events():
        if evt.device_type == torch.autograd.DeviceType.CUDA:
            per[evt.name][0] += evt.time_range.elapsed_us()
            per[evt.name][1] += 1
    kernels = sorted(([n[:120], round(t / calls, 3), c / calls] for n, (t, c) in per.items()),
                     key=lambda r: -r[1])
    total = sum(t for t, _ in per.values()) * 1e-6 / calls
    return total, sum(c for _, c in per.values()) / calls, kernels


def script_parser(doc: str | None) -> argparse.ArgumentParser:
    """The command line every GPU script shares: its docstring as help, ``--out DIR``."""
    ap = argparse.ArgumentParser(description=doc,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True, help="folder for the rows (and traces)")
    return ap


def do_bench(fn: Callable[[], Any], warmup_ms: int = 25, rep_ms: int = 100) -> float:
    """Median seconds per call: ``triton.testing.do_bench`` (L2 flushed) on a GPU, else a
    plain mean of three calls after one warm-up (CPU smoke tests)."""
    if torch.cuda.is_available():
        from triton.testing import do_bench as triton_bench

        return float(triton_bench(fn, warmup=warmup_ms, rep=rep_ms,
                                  return_mode="median")) * 1e-3
    fn()
    t0 = time.perf_counter()
    for _ in range(3):
        fn()
    return (time.perf_counter() - t0) / 3


def _sync() -> None:
    if torch.cuda.is_available():
        torch.cuda.synchronize()


def time_step(step: Callable[[], Any], *, warmup: int = 3, repeats: int | None = None,
              target_s: float = 1.0, max_repeats: int = 50,
              after: Callable[[], Any] | None = None) -> dict[str, float]:
    """Median CUDA-event time and host-inclusive wall time per call of ``step``.

    ``after`` (optional) runs after every call, outside the event bracket but inside the wall
    loop (e.g. cropping a DynamicCache back to its length).
    """
    for _ in range(warmup):
        step()
        if after is not None:
            after()
    _sync()
    t0 = time.perf_counter()
    step()
    if after is not None:
        after()
    _sync()
    once = max(time.perf_counter() - t0, 1e-6)
    n = repeats or int(min(max_repeats, max(5, target_s / once)))
    cuda = torch.cuda.is_available()
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(n)] if cuda else []
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(n)] if cuda else []
    _sync()
    t0 = time.perf_counter()
    for i in range(n):
        if cuda:
            starts[i].record()
        step()
        if cuda:
            ends[i].record()
        if after is not None:
            after()
    _sync()
    wall = (time.perf_counter() - t0) / n
    gpu = (statistics.median(s.elapsed_time(e) for s, e in zip(starts, ends, strict=True)) * 1e-3
           if cuda else wall)
    return {"gpu_s": gpu, "wall_s": wall, "repeats": n}


def trace(step: Callable[[], Any], path: str, *, steps: int = 2,
          after: Callable[[], Any] | None = None) -> str:
    """Profile ``steps`` calls of ``step`` (after one warm-up) into ``path`` (.json.gz)."""
    from torch.profiler import ProfilerActivity, profile

    step()
    if after is not None:
        after()
    _sync()
    acts = [ProfilerActivity.CPU]
    if torch.cuda.is_available():
        acts.append(ProfilerActivity.CUDA)
    with profile(activities=acts, record_shapes=True) as prof:
        for _ in range(steps):
            step()
            if after is not None:
                after()
        _sync()
    raw = path[:-3] if path.endswith(".gz") else path
    prof.export_chrome_trace(raw)
    if path.endswith(".gz"):
        with open(raw, "rb") as f, gzip.open(path, "wb", compresslevel=9) as g:
            g.write(f.read())
        os.remove(raw)
    return os.path.basename(path)


class Out:
    """Rows to ``DIR/<name>.jsonl`` (flushed per row) and traces to ``DIR/traces/``."""

    def __init__(self, folder: str, name: str) -> None:
        self.folder = folder
        self.traces = os.path.join(folder, "traces")
        os.makedirs(self.traces, exist_ok=True)
        self._f = open(os.path.join(folder, f"{name}.jsonl"), "a")  # noqa: SIM115
        self.versions = versions()

    def row(self, **fields: Any) -> None:
        fields.setdefault("versions", self.versions)
        self._f.write(json.dumps(fields) + "\n")
        self._f.flush()
        shown = {k: v for k, v in fields.items() if k not in ("versions", "config")}
        print(json.dumps(shown), flush=True)

    def trace_path(self, name: str) -> str:
        return os.path.join(self.traces, f"{name}.json.gz")

    def guarded(self, name: str, fn: Callable[[], None]) -> None:
        """Run one measurement; on any error write an ``error`` row and go on."""
        t0 = time.perf_counter()
        try:
            fn()
        except Exception as exc:  # noqa: BLE001 - a failed case must not stop the run
            tb = traceback.format_exc(limit=6)
            self.row(name=name, error=f"{type(exc).__name__}: {str(exc)[:400]}",
                     traceback=tb[-1500:])
        finally:
            if torch.cuda.is_available():
                torch.cuda.empty_cache()
            print(f"# {name}: {time.perf_counter() - t0:.1f} s", flush=True)
