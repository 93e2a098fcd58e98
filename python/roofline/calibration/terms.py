"""The parameters ``rl.calibrate`` fits, each bounded and tied to the rows that decide it.

A row of the measurement schema falls in one *group* by its op, dtype and backend
(:func:`group`); each :class:`Term` is one parameter of the default model (a path into a
profile's ``fitted`` patch, see ``roofline._params.documents``) with physical bounds and
the groups whose error it minimises. Terms are physics (fractions of a peak or of the
bandwidth, fixed times per call or kernel, ratios of rates), never per-shape values; bounds
keep fractions in (0, 1] and times >= 0, so the fitted model stays monotone in every size.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..hardware import PEAK_CLASSES
from ..ops.registry import row_entry

__all__ = ["FIT_AREAS", "Term", "group", "terms_for"]

#: Names accepted by ``rl.calibrate(terms=...)``, in fitting order.
FIT_AREAS = ("streaming", "compute", "gemm", "row_ops", "attention", "cast", "host")

_US = 1e-6


@dataclass(frozen=True)
class Term:
    """One fitted parameter: where it lives, its bounds, what decides it."""

    area: str
    path: tuple[str, ...]
    lo: float
    hi: float
    groups: tuple[str, ...]

    @property
    def label(self) -> str:
        """Dotted name, e.g. ``gemm.terms.latency_s``."""
        return ".".join(self.path)


def group(row: dict[str, Any]) -> str | None:
    """The group of a measurement row (None: no model for its op), as the op registry's entry
    for the row's op says (:func:`roofline.ops.registry.row_entry`)."""
    entry = row_entry(row["op"])
    if entry is None or entry.group is None:
        return None
    return entry.group(row)


#: Streaming kernels: every one reads and writes DRAM at the streaming bandwidth.
_STREAMING = ("elementwise", "row_eager", "row_compiled")
_GEMMS = tuple(f"gemm_{c}" for c in PEAK_CLASSES)


def _fixed() -> list[Term]:
    t = Term
    fl, fl_b, cu, cu_b = "attention_flash", "attention_flash_bwd", "attention_cudnn", \
        "attention_cudnn_bwd"
    return [
        t("streaming", ("params", "memory_fraction"), 0.2, 1.0, _STREAMING),
        t("streaming", ("params", "memory_latency_s"), 0.0, 20 * _US, _STREAMING),
        t("streaming", ("row_ops", "universal", "small_kernel_ramp_s"), 0.0, 10 * _US,
          ("elementwise",)),
        t("streaming", ("row_ops", "universal", "follow_on_s"), 0.0, 10 * _US,
          ("elementwise", "row_eager")),
        t("gemm", ("gemm", "terms", "latency_s"), 0.0, 50 * _US, _GEMMS),
        t("gemm", ("gemm", "terms", "memory_fraction"), 0.2, 1.0, _GEMMS),
        t("gemm", ("gemm", "terms", "rowwise_latency_s"), 0.0, 20 * _US, ("gemm_fp8",)),
        t("gemm", ("gemm", "terms", "grouped_compute_fraction"), 0.2, 1.0, ("grouped_gemm",)),
        t("gemm", ("gemm", "terms", "grouped_latency_s"), 0.0, 100 * _US, ("grouped_gemm",)),
        t("row_ops", ("row_ops", "universal", "aten_reread"), 0.0, 2.0, ("row_eager",)),
        t("row_ops", ("row_ops", "universal", "cta_sm_fraction"), 0.05, 1.0, ("row_eager",)),
        t("row_ops", ("row_ops", "universal", "inductor_reread"), 0.0, 2.0, ("row_compiled",)),
        t("attention", ("attention", "flash_fraction"), 0.05, 1.0, (fl, "decode_flash")),
        t("attention", ("attention", "universal", "flash", "call_s"), 0.0, 100 * _US,
          (fl, "decode_flash")),
        t("attention", ("attention", "universal", "flash", "bwd_ratio_mma_on_wgmma"), 0.2, 1.5,
          (fl_b,)),
        t("attention", ("attention", "universal", "flash", "bwd_call_s"), 0.0, 100 * _US,
          (fl_b,)),
        t("attention", ("attention", "paths", "wgmma", "fraction"), 0.05, 1.0, (cu,)),
        t("attention", ("attention", "universal", "cudnn", "call_s"), 0.0, 100 * _US,
          (cu, "decode_cudnn")),
        t("attention", ("attention", "universal", "cudnn", "bwd_ratio"), 0.2, 1.5, (cu_b,)),
        t("attention", ("attention", "universal", "cudnn", "bwd_call_s"), 0.0, 100 * _US,
          (cu_b,)),
        t("attention", ("attention", "universal", "cudnn", "decode_ratio"), 0.05, 1.5,
          ("decode_cudnn",)),
        t("attention", ("attention", "universal", "efficient", "ratio"), 0.05, 1.5,
          ("attention_efficient", "attention_efficient_bwd")),
        t("attention", ("attention", "universal", "efficient", "decode_ratio"), 0.05, 1.5,
          ("decode_efficient",)),
        t("attention", ("attention", "universal", "efficient", "call_s"), 0.0, 100 * _US,
          ("decode_efficient", "attention_efficient")),
        *[t("cast", ("cast", "universal", f), 0.05, 1.0, ("float8_linear",))
          for f in ("amax_fraction", "transpose_fraction", "dual_fraction", "row_fraction",
                    "column_fraction")],
        t("host", ("host", "terms", "eager_launch_s"), 0.0, 200 * _US, ("launch",)),
        t("host", ("host", "terms", "kernel_latency_s"), 0.0, 50 * _US, ("launch",)),
        t("host", ("host", "terms", "graph_launch_s"), 0.0, 50 * _US, ("launch",)),
        t("host", ("host", "terms", "kernel_gap_s"), 0.0, 20 * _US, ("launch",)),
        t("host", ("host", "terms", "compiled_call_s"), 0.0, 5e-3, ("float8_linear",)),
    ]


def terms_for(groups: set[str], areas: tuple[str, ...] = FIT_AREAS) -> list[Term]:
    """The terms of ``areas`` that some row of ``groups`` decides, in fitting order."""
    compute = [Term("compute", ("compute_fraction", g[len("gemm_"):]), 0.02, 1.0, (g,))
               for g in _GEMMS if g in groups]
    every = [*_fixed()[:3], *compute, *_fixed()[3:]]
    return [t for t in every if t.area in areas and groups.intersection(t.groups)]
