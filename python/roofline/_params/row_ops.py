"""Fitted RowOpTerms for an accelerator from the row_ops terms document.

Universal terms (fitted once on H100 SXM by ``benchmarks/fit_row_ops.py``, stored as
dimensionless fractions or seconds) become per-accelerator values through the hardware entry:

- ``small_kernel_ramp_s`` (s): the part of the streaming latency a kernel too small to fill the
  DRAM pipeline does not pay; it tapers linearly to 0 at half an L2 of DRAM traffic;
- ``follow_on_s`` (s): the latency a kernel launched right after another kernel of the same call
  hides behind its predecessor's drain;
- ``aten_reread`` / ``inductor_reread``: cost of a re-read that hits L2, per DRAM pass;
- ``cta_sm_fraction``: bytes/s one SM moves with one 1024-thread CTA per row (aten softmax),
  as a fraction of its share of the DRAM bandwidth (``mem_bytes_per_s / sms``);
- ``transcendental_flops``: fp32 FLOP-equivalents of one exp / log / division, per vendor
  (an architecture constant: 2 x fp32 lanes / special-function lanes per SM or CU);
- ``l2_bytes``: the entry's L2 size (0 when unknown: re-reads are assumed to hit, and the ramp
  ends at its own traffic time).
"""

from __future__ import annotations

from typing import Any

from .. import _core


def core_terms(hw: Any, doc: dict[str, Any]) -> Any:
    """The core RowOpTerms for hw from the fitted document doc (all zero when doc is empty)."""
    terms = _core.RowOpTerms()
    if not doc:
        return terms
    u = doc.get("universal", {})
    terms.small_kernel_ramp_s = float(u.get("small_kernel_ramp_s", 0.0))
    terms.follow_on_s = float(u.get("follow_on_s", 0.0))
    terms.aten_reread = float(u.get("aten_reread", 0.0))
    terms.inductor_reread = float(u.get("inductor_reread", 0.0))
    terms.cta_sm_bytes_per_s = _core.per_sm_bandwidth(
        float(u.get("cta_sm_fraction", 0.0)), hw.mem_bytes_per_s, getattr(hw, "sms", None) or 0)
    per_vendor = doc.get("transcendental_flops", {})
    terms.transcendental_flops = float(
        per_vendor.get(getattr(hw, "vendor", ""), per_vendor.get("default", 0.0))
    )
    terms.l2_bytes = float(getattr(hw, "l2_bytes", None) or 0.0)
    return terms
