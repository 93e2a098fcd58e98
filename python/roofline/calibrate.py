"""Calibrate the model to a device: fit a profile to measurements, or measure peaks with torch.

>>> import roofline as rl
>>> prof = rl.calibrate(measurements="m.jsonl", hardware="H100 SXM", path="h100.json")
>>> rl.gemm(8192, 8192, 8192, hardware=prof)        # the default model with the fitted terms
>>> rl.hardware(profile="h100.json")                 # loads it back (or Hardware.from_file)
>>> hw = rl.calibrate(device="cuda", path="my_gpu.json")     # measured peaks, no fit
>>> rl.gemm(8192, 8192, 8192, hardware=hw, efficiency="peak")  # the measured roofline

torch is imported only when :func:`calibrate` measures.
"""

from __future__ import annotations

import datetime
import json
import os
import sys
import time
import types
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from .hardware import Hardware

__all__ = ["calibrate"]

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


def calibrate(
    device: str | None = None,
    *,
    measurements: str | os.PathLike[str] | Iterable[dict[str, Any]] | None = None,
    hardware: Any = None,
    terms: Sequence[str] | None = None,
    save: bool = False,
    name: str | None = None,
    dtypes: Sequence[str] | None = None,
    sizes: Sequence[int] | None = None,
    copy_bytes: int | None = None,
    repeats: int = 3,
    min_time_s: float = 0.02,
    path: str | os.PathLike[str] | None = None,
    rows: list[dict[str, Any]] | None = None,
) -> Hardware:
    """Fit the default model to measurements, or measure achievable peaks on this machine.

    With ``measurements``: fit the default model's terms for one accelerator and return a
    calibrated ``roofline.calibration.Profile`` (a Hardware every op accepts; under
    ``efficiency="default"`` it uses the fitted terms). Without: measure matmul rates, copy
    bandwidth and launch latency with torch and return them as a plain Hardware.

    Parameters
    ----------
    device : {"cuda", "cpu"}, optional
        Where to measure (``"cuda"``, the default, is the current GPU; ROCm builds also answer
        to it). Not used with ``measurements``.
    measurements : path or iterable of dict, optional
        A JSON-lines file in the shared measurement schema (``roofline bench`` writes them), or
        its rows. Rows of ops the model covers fit the terms they decide: achievable fraction
        per peak class (GEMM rows per dtype), GEMM latency / memory fraction / grouped rate,
        streaming bandwidth and latency (elementwise and row ops), row-op re-read terms,
        attention rate, call time and backward / decode ratios per SDPA backend, float8 cast
        bandwidth fractions, launch overheads. A term is fitted only when at least 4 rows of 2
        distinct shapes (in families of at least 4 rows) inform it and the move improves
        held-out families (see ``roofline.calibration.fit``); other terms keep their base
        values.
    hardware : Hardware, str or Profile, optional
        The base the profile is fitted for (peaks, bandwidth, SMs): default the rows'
        ``hardware`` field (all rows must agree), else ``rl.hardware()``. A Profile as base is
        refined (its fitted terms are the starting point).
    terms : sequence of str, optional
        Restrict the fit to these areas of ``roofline.calibration.terms.AREAS``
        (``streaming``, ``compute``, ``gemm``, ``row_ops``, ``attention``, ``cast``, ``host``).
    save : bool
        Also save the profile in the user's cache for the device and software the rows name
        (``rl.hardware()`` then returns it on that machine; see
        ``roofline.calibration.cache``).
    name : str, optional
        Name of the returned Hardware; default ``"calibrated <device name>"``.
    dtypes : sequence of str, optional
        torch dtype names to time matmuls in (default: float32, bfloat16 on the CPU; also
        float16 and float8_e4m3fn via ``torch._scaled_mm`` on a GPU). Unsupported ones are
        skipped and noted.
    sizes : sequence of int, optional
        Square matmul sizes (default 256, 512, 1024 on the CPU; 2048, 4096, 8192 on a GPU);
        the best rate over the sizes is the achievable peak.
    copy_bytes : int, optional
        Size of the tensor copied to measure bandwidth (default 64 MiB on the CPU, 1 GiB on a
        GPU; make it larger than the last-level cache).
    repeats : int
        Best of this many timed repeats per measurement.
    min_time_s : float
        Each repeat runs the op enough times to last about this long.
    path : str or PathLike, optional
        Also write the result as JSON (``Hardware.from_file(path)`` loads it back).
    rows : list, optional
        When measuring, receives the measurements as rows of the shared schema: one row per
        term (best matmul per dtype, one copy, one launch). ``roofline calibrate`` (no ``-i``)
        fits a profile on them; ``calibrate(measurements=rows)`` needs at least 4 rows of 2
        shapes per term, so use ``roofline.calibration.fit.fit_profile(rows, hw, min_rows=1,
        min_shapes=1)`` for these.

    Returns
    -------
    Hardware
        With ``measurements``: the fitted Profile (``profile.fit`` holds each term's base and
        fitted value, each family's median error before and after, and the families no term
        uses, with the reason). Otherwise measured achievable peaks per class (``bf16``
        holds the better of bfloat16 and float16), ``mem_bytes_per_s`` from the copy, the
        device's SM count on a GPU, and in ``notes`` every measurement, the launch latency
        and what was skipped.

    Raises
    ------
    ValueError
        An unknown device, an unknown dtype name, a non-positive size or count; measurements
        that are malformed (file and line named), of several accelerators without
        ``hardware=``, or with no row any term can use (the families and reasons named).
    RuntimeError
        ``device="cuda"`` without a GPU, or torch is not installed.

    Notes
    -----
    matmul rate = 2·n³ / best time; bandwidth = 2·copy_bytes / best time of ``dst.copy_(src)``
    (read + write); launch latency = best time of ``x.add_(1)`` on a 1-element tensor
    (synchronised; includes the synchronisation on a GPU). The peaks are *achieved* values:
    use ``efficiency="peak"`` to get the measured roofline, since the default model applies
    its own achievable fractions on top of a datasheet-like peak.
    """
    fn = "calibrate"
    if measurements is not None:
        return _fit(measurements, hardware, terms, save, path)
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


def _fit(measurements: Any, hardware: Any, terms: Sequence[str] | None, save: bool,
         path: str | os.PathLike[str] | None) -> Hardware:
    """The measurement branch of :func:`calibrate`: fit, then write / save as asked."""
    from .calibration.fit import fit_profile
    from .hardware.cache import profile_path
    from .hardware.profile import save_profile

    if not isinstance(save, bool):
        raise TypeError(f"calibrate: save must be a bool, got {save!r}")
    prof = fit_profile(measurements, hardware, terms=terms)
    if path is not None:
        save_profile(prof, path)
    if save:
        meta = prof.fit.to_dict()
        if not meta.get("device"):
            raise ValueError("calibrate: save=True needs the device the rows were measured on "
                             "(a 'device' field or 'measured on <device>, torch <v>' source)")
        save_profile(prof, profile_path(meta["device"], meta.get("software", {})))
    return prof


class _CallableModule(types.ModuleType):
    """``roofline.calibrate`` stays callable even after ``import roofline.calibrate``."""

    def __call__(self, *args: Any, **kwargs: Any) -> Hardware:
        return calibrate(*args, **kwargs)


sys.modules[__name__].__class__ = _CallableModule
