"""Fitted HostTerms for an accelerator from the host terms document.

The host terms are CPU, driver and PyTorch costs (time to dispatch and launch a kernel, to
call a compiled region, to replay a CUDA graph) and the GPU front end's minimum time per
launched kernel. They do not depend on the GPU's peaks, so every accelerator gets the same
fitted values (``terms`` of ``data/terms/host.json``); ``per_hardware`` may override single
terms for one canonical accelerator name. When the file is absent every term falls back to
:data:`DEFAULTS` (the H100 measurements of 2026-11-23, rounded), never to zero, so the default
model always has launch overhead; the constant presets ("peak", "constant", "torchao") do not
call this and keep zero terms (wall time = sum of kernel times).
"""

from __future__ import annotations

from typing import Any

from .. import _core
from .fields import fill

#: Field names of HostTerms, in the core's order.
FIELDS = ("eager_launch_s", "compiled_launch_s", "compiled_call_s", "compiled_region_s",
          "compiled_forward_s", "torchao_call_s", "graph_launch_s",
          "kernel_gap_s", "kernel_latency_s", "op_view_launches", "op_kernel_launches",
          "op_gemm_launches", "op_attention_launches", "module_call_launches",
          "op_backward_launches", "step_call_launches")

#: Sane values for any GPU when no fitted file is there (seconds; ``*_launches`` in
#: units of ``eager_launch_s``).
DEFAULTS = {
    "eager_launch_s": 12e-6,
    "compiled_launch_s": 17e-6,
    "compiled_call_s": 0.97e-3,
    "compiled_region_s": 20e-6,
    "compiled_forward_s": 0.2e-3,
    "torchao_call_s": 0.1e-3,
    "graph_launch_s": 5e-6,
    "kernel_gap_s": 1.4e-6,
    "kernel_latency_s": 4.2e-6,
    # eager program host time per call by class, in eager_launch_s (H200 HF Llama traces
    # ratios, scaled by one process's 1-2 layer decode walls; benchmarks/fit_host_programs.py)
    "op_view_launches": 0.17,
    "op_kernel_launches": 0.8,
    "op_gemm_launches": 2.5,
    "op_attention_launches": 6.4,
    "module_call_launches": 2.6,
    "op_backward_launches": 0.9,
    "step_call_launches": 45.0,
}


def values(hw: Any, doc: dict[str, Any]) -> dict[str, float]:
    """The host terms for ``hw`` (seconds): fitted, per-hardware overrides, else defaults."""
    out = dict(DEFAULTS)
    out.update({k: float(v) for k, v in doc.get("terms", {}).items() if k in FIELDS})
    name = getattr(hw, "name", None)
    override = doc.get("per_hardware", {}).get(name, {}) if name else {}
    out.update({k: float(v) for k, v in override.items() if k in FIELDS})
    return out


def core_terms(hw: Any, doc: dict[str, Any]) -> Any:
    """The core HostTerms for hw from the fitted document doc."""
    return fill(_core.HostTerms(), values(hw, doc))
