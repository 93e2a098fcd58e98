"""Measure this machine's achievable peaks with torch: matmul rates, copy bandwidth, launch.

``rl.calibrate(device=...)`` (without measurements) runs :func:`measure`; torch is imported
only when it measures.
"""

from __future__ import annotations

import datetime
import json
import os
import time
from collections.abc import Callable, Sequence
from typing import Any

from ..hardware import Hardware

__all__ = ["measure"]

#: torch dtype name -> (Hardware peak class, roofline dtype label).
_CLASSES = {"float64": "fp64", "float32": "fp32", "bfloat16": "bf16", "float16": "bf16",
            "float8_e4m3fn": "fp8"}
_DEFAULT_DTYPES = {"cpu": ("float32", "bfloat16"),
                   "cuda": ("float32", "bfloat16", "float16", "float8_e4m3fn")}
_DEFAULT_SIZES = {"cpu": (256, 512, 1024), "cuda": (2048, 4096, 8192)}
_DEFAULT_COPY_BYTES = {"cpu": 64 * 2**20, "cuda": 1 * 2**30}


def _sync(torch: Any, device: str) -> Callable[[], None]:
    if device == "cuda":
        return lambda: torch.cuda.synchronize()
    return lambda: None


def _best_time(fn: Callable[[], Any], sync: Callable[[], None], repeats: int,
               min_time_s: float) -> float:
    """Best-of-``repeats`` time of ``fn``, each repeat running it enough times to last
    about ``min_time_s``."""
    fn()
    sync()
    t0 = time.perf_counter()
    fn()
    sync()
    once = max(time.perf_counter() - t0, 1e-9)
    inner = max(1, min(1000, int(min_time_s / once)))
    best = float("inf")
    for _ in range(repeats):
        sync()
        t0 = time.perf_counter()
        for _ in range(inner):
            fn()
        sync()
        best = min(best, (time.perf_counter() - t0) / inner)
    return best


def _matmul_rate(torch: Any, device: str, dtype_name: str, size: int, sync: Callable[[], None],
                 repeats: int, min_time_s: float) -> float | None:
    """FLOP/s of one ``size``-cubed matmul, or None where the dtype is not supported."""
    try:
        if dtype_name == "float8_e4m3fn":
            if device != "cuda":
                return None
            a = torch.randn(size, size, device=device).to(torch.float8_e4m3fn)
            b = torch.randn(size, size, device=device).to(torch.float8_e4m3fn).t()
            one = torch.ones((), device=device)

            def run() -> Any:
                return torch._scaled_mm(a, b, one, one, out_dtype=torch.bfloat16)
        else:
            dt = getattr(torch, dtype_name)
            a = torch.randn(size, size, device=device, dtype=dt)
            b = torch.randn(size, size, device=device, dtype=dt)

            def run() -> Any:
                return a @ b
        t = _best_time(run, sync, repeats, min_time_s)
    except (RuntimeError, TypeError, NotImplementedError):
        return None
    return 2.0 * size**3 / t


def measure(
    device: str | None = None,
    *,
    name: str | None = None,
    dtypes: Sequence[str] | None = None,
    sizes: Sequence[int] | None = None,
    copy_bytes: int | None = None,
    repeats: int = 3,
    min_time_s: float = 0.02,
    path: str | os.PathLike[str] | None = None,
    rows: list[dict[str, Any]] | None = None,
) -> Hardware:
    """Measure achievable peaks on this machine with torch: the branch of
    :func:`roofline.calibration.api.calibrate` without ``measurements`` (its parameters; errors
    name ``calibrate``, the public entry)."""
    fn = "calibrate"
    if device is None:
        device = "cuda"
    if not isinstance(device, str) or device not in ("cuda", "cpu"):
        raise ValueError(f"{fn}: device must be 'cuda' or 'cpu', got {device!r}")
    for arg, value in (("repeats", repeats),):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"{fn}: {arg} must be a positive integer, got {value!r}")
    if isinstance(min_time_s, bool) or not isinstance(min_time_s, (int, float)) or not (
        min_time_s >= 0
    ):
        raise ValueError(f"{fn}: min_time_s must be a number >= 0, got {min_time_s!r}")
    dts = tuple(_DEFAULT_DTYPES[device] if dtypes is None else dtypes)
    for d in dts:
        if d not in _CLASSES:
            raise ValueError(f"{fn}: dtypes must be among {sorted(_CLASSES)}, got {d!r}")
    szs = tuple(_DEFAULT_SIZES[device] if sizes is None else sizes)
    if not szs:
        raise ValueError(f"{fn}: sizes must not be empty")
    for s in szs:
        if isinstance(s, bool) or not isinstance(s, int) or s < 1:
            raise ValueError(f"{fn}: sizes must be positive integers, got {s!r}")
    nbytes = _DEFAULT_COPY_BYTES[device] if copy_bytes is None else copy_bytes
    if isinstance(nbytes, bool) or not isinstance(nbytes, int) or nbytes < 1024:
        raise ValueError(f"{fn}: copy_bytes must be an integer >= 1024, got {copy_bytes!r}")
    if name is not None and (not isinstance(name, str) or not name.strip()):
        raise ValueError(f"{fn}: name must be a non-empty string, got {name!r}")
    try:
        import torch
    except ImportError as exc:  # pragma: no cover - torch is in the test extra
        raise RuntimeError(f"{fn}: needs torch (pip install torch)") from exc
    if device == "cuda" and not torch.cuda.is_available():
        raise RuntimeError(f"{fn}: device='cuda' but torch sees no GPU; use device='cpu'")

    sync = _sync(torch, device)
    rates: dict[str, float] = {}
    notes: list[str] = []
    for d in dts:
        timed = [(r, s) for s in szs
                 if (r := _matmul_rate(torch, device, d, s, sync, repeats, min_time_s))]
        if not timed:
            notes.append(f"{d} matmul: not supported, skipped")
            continue
        rate, size = max(timed)
        if rows is not None:
            rows.append(_row(f"local_gemm_{_LABELS[d]}", "gemm",
                             {"m": size, "k": size, "n": size, "dtype": _LABELS[d]},
                             2.0 * size**3 / rate, device, torch))
        notes.append(f"{d} matmul: {rate / 1e12:.4g} TFLOP/s (best of n={list(szs)})")
        cls = _CLASSES[d]
        rates[cls] = max(rates.get(cls, 0.0), rate)
    if not rates:
        raise RuntimeError(f"{fn}: no matmul dtype could be timed on {device} ({dts})")

    n = nbytes // 4
    src = torch.empty(n, dtype=torch.float32, device=device).fill_(1.0)
    dst = torch.empty_like(src)
    t_copy = _best_time(lambda: dst.copy_(src), sync, repeats, min_time_s)
    bandwidth = 2.0 * n * 4 / t_copy
    notes.append(f"copy: {bandwidth / 1e9:.4g} GB/s ({n * 4} bytes read and written)")
    tiny = torch.zeros(1, device=device)
    latency = _best_time(lambda: tiny.add_(1), sync, repeats, min_time_s)
    notes.append(f"launch latency: {latency * 1e6:.3g} us (1-element add_)")
    if rows is not None:
        rows.append(_row("local_copy", "elementwise",
                         {"numel": n, "reads": 1, "writes": 1, "dtype": "fp32"}, t_copy, device,
                         torch))
        rows.append(_row("local_launch", "launch", {"kernels": 1}, latency, device, torch))

    if device == "cuda":
        props = torch.cuda.get_device_properties(0)
        dev_name = torch.cuda.get_device_name(0)
        sms: int | None = int(props.multi_processor_count)
        vendor = "AMD" if getattr(torch.version, "hip", None) else "NVIDIA"
    else:
        import platform

        dev_name = platform.processor() or platform.machine() or "CPU"
        sms = None
        vendor = "CPU"
    when = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    peaks: dict[str, Any] = {f"{cls}_flops_per_s": rate for cls, rate in rates.items()}
    hw = Hardware(
        name=name or f"calibrated {dev_name}",
        full_name=dev_name,
        vendor=vendor,
        **peaks,
        mem_bytes_per_s=bandwidth,
        sms=sms,
        sources=f"roofline.calibrate on {device} ({dev_name}), torch {torch.__version__}, "
                f"{when}",
        notes="; ".join(notes),
    )
    if path is not None:
        with open(path, "w", encoding="utf-8") as f:
            json.dump(hw.to_dict(), f, indent=2)
    return hw



#: torch dtype name -> roofline dtype label of the measurement rows.
_LABELS = {"float64": "fp64", "float32": "fp32", "bfloat16": "bf16", "float16": "fp16",
           "float8_e4m3fn": "fp8"}


def _row(family: str, op: str, args: dict[str, Any], seconds: float, device: str,
         torch: Any) -> dict[str, Any]:
    """One measurement in the shared schema (best-of timing, this machine)."""
    dev = torch.cuda.get_device_name(0) if device == "cuda" else "cpu"
    return {"family": family, "op": op, "args": args, "measured": seconds,
            "method": "roofline.calibrate best-of timing", "device": dev,
            "source": f"measured on {dev}, torch {torch.__version__}",
            "software": {"torch": str(torch.__version__),
                         "cuda": str(getattr(torch.version, "cuda", "") or "")}}
