"""roofline: predict how long ML operations take on accelerators.

>>> import roofline as rl
>>> e = rl.gemm(4096, 4096, 4096, dtype="bf16", hardware="H100 SXM")
>>> e.bound
'compute'
"""

from __future__ import annotations

from typing import Any

from . import collectives, float8, fusion, transformer
from ._bridge import get_num_threads, set_num_threads
from ._errors import UnknownNameError
from .attention import attention, attention_backend
from .collectives import all_gather, all_reduce, all_to_all, reduce_scatter, send_recv
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
from .host import WallTime, launch_overhead, wall_time
from .ops import (
    cross_entropy,
    elementwise,
    gemm,
    grouped_gemm,
    layernorm,
    rmsnorm,
    softmax,
)

__version__ = "0.1.0"


def calibrate(device: str = "cuda", **kwargs: Any) -> Hardware:
    """Measure this machine's peaks with torch (:func:`roofline.calibrate.calibrate`)."""
    from .calibrate import calibrate as _run

    return _run(device, **kwargs)


__all__ = [
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
    "transformer",
    "UnknownHardwareError",
    "UnknownNameError",
    "wall_time",
    "WallTime",
    "__version__",
]
