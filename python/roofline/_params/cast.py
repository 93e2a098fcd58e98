"""Fitted CastTerms for an accelerator from the cast terms document.

The terms are bandwidth fractions of access patterns of Inductor-generated Triton cast
kernels (split reductions, transposed writes through shared memory, looped row reductions,
strided column reads). They are universal: the kernels and their access patterns are the same
code on every GPU Triton targets, and each fraction multiplies that GPU's own streaming
bandwidth. ``per_architecture`` in the fitted document, keyed by ``architecture(hw)``
(``"hopper"``, ``"ampere"``, ``"rocm"``, ...), may override them for an architecture
whose memory system treats a pattern differently. ``mxfp8_quantize_fraction`` (MXFP8
quantize kernels: Transformer Engine's ``quantize_mxfp8``, torchao's MX casts) is 1 (the
streaming rate) everywhere but on Blackwell, where MXFP8 runs natively and nine published
B200 kernel times of two implementations put it at 0.77 of the streaming rate
(``data/hardware-notes.md`` §11); it is not fitted by ``benchmarks/fit_cast.py``.
"""

from __future__ import annotations

from typing import Any

from .. import _core
from .architecture import architecture
from .fields import fill

FIELDS = ("amax_fraction", "transpose_fraction", "dual_fraction", "row_fraction",
          "column_fraction", "column_sm_bytes_per_s", "mxfp8_quantize_fraction")


def core_terms(hw: Any, doc: dict[str, Any]) -> Any:
    """The core CastTerms for hw from the fitted document doc (empty doc: idealized), with
    hw's SM count (Inductor splits a row amax over fewer than 2 x SMs rows)."""
    terms = _core.CastTerms()
    values = dict(doc.get("universal", {}))
    values.update(doc.get("per_architecture", {}).get(architecture(hw), {}))
    terms = fill(terms, {name: values[name] for name in FIELDS if name in values})
    terms.sms = float(getattr(hw, "sms", None) or 0)
    return terms
