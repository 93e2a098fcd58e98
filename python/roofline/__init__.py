"""roofline: predict how long ML operations take on accelerators.

>>> import roofline as rl
>>> e = rl.gemm(4096, 4096, 4096, dtype="bf16", hardware="H100 SXM")
>>> e.bound
'compute'
"""

from __future__ import annotations

from typing import Any

from . import float8, fusion, transformer
from ._errors import RooflineDeprecationWarning, UnknownNameError
from ._params.threads import get_num_threads, set_num_threads
from ._version import __version__
from .efficiency import Efficiency, default_efficiency, set_default_efficiency
from .estimate import Estimate, HardwareMismatchWarning
from .explain import Explanation, explain
from .hardware import (
    Hardware,
    UnknownHardwareError,
    hardware,
    list_hardware,
    set_default_hardware,
)
from .ops import (
    WallTime,
    all_gather,
    all_reduce,
    all_to_all,
    attention,
    attention_backend,
    collectives,
    cross_entropy,
    elementwise,
    gemm,
    grouped_gemm,
    launch_overhead,
    layernorm,
    reduce_scatter,
    rmsnorm,
    send_recv,
    softmax,
    wall_time,
    weight_only_gemm,
)


def calibrate(device: str | None = None, **kwargs: Any) -> Hardware:
    """Fit a profile to measurements (``measurements=``), or measure this machine's peaks
    with torch (:func:`roofline.calibration.api.calibrate`)."""
    from .calibration.api import calibrate as _run

    return _run(device, **kwargs)


def validate(measurements: Any, hardware: Any = None, efficiency: Any = "default") -> Any:
    """Per-family error of the model on measurement files
    (:func:`roofline.validation.report.validate`), or per family and source on a whole-job
    file (:func:`roofline.validation.jobs.validate_jobs`; detected by its schema)."""
    from .validation.jobs import is_jobs_input, validate_jobs
    from .validation.report import validate as _run

    if is_jobs_input(measurements):
        if hardware is not None:
            raise ValueError("validate: a jobs file names each row's hardware; hardware= "
                             f"must be None, got {hardware!r}")
        return validate_jobs(measurements, efficiency=efficiency)
    return _run(measurements, hardware=hardware, efficiency=efficiency)


def __getattr__(name: str) -> Any:
    """``rl.bench`` and ``rl.trace`` are imported on first use (neither is needed to price
    ops; bench imports torch only when it runs)."""
    if name in ("bench", "trace"):
        import importlib

        return importlib.import_module(f".{name}", __name__)
    raise AttributeError(f"module 'roofline' has no attribute {name!r}")


__all__ = [
    "bench",
    "default_efficiency",
    "set_default_efficiency",
    "Efficiency",
    "Estimate",
    "Explanation",
    "Hardware",
    "HardwareMismatchWarning",
    "all_gather",
    "all_reduce",
    "all_to_all",
    "attention",
    "attention_backend",
    "calibrate",
    "collectives",
    "cross_entropy",
    "elementwise",
    "explain",
    "float8",
    "fusion",
    "gemm",
    "grouped_gemm",
    "get_num_threads",
    "hardware",
    "launch_overhead",
    "layernorm",
    "list_hardware",
    "reduce_scatter",
    "rmsnorm",
    "send_recv",
    "set_default_hardware",
    "set_num_threads",
    "softmax",
    "trace",
    "transformer",
    "UnknownHardwareError",
    "RooflineDeprecationWarning",
    "UnknownNameError",
    "validate",
    "wall_time",
    "WallTime",
    "weight_only_gemm",
    "__version__",
]
