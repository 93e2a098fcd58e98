"""Explain a PyTorch profiler trace against the roofline, kernel by kernel.

>>> rep = rl.trace.explain("trace.json.gz", hardware="H100 SXM")   # doctest: +SKIP
>>> rep.measured_s, rep.predicted_s, rep.losses().head()           # doctest: +SKIP

Reading a trace file needs only the standard library; pandas is imported by the report's
table methods, matplotlib by ``plot``, torch never (a live profiler object is exported
through its own ``export_chrome_trace``).
"""

from __future__ import annotations

from ._explain import explain, from_records, synthetic_trace
from ._report import TraceReport

__all__ = ["TraceReport", "explain", "from_records", "synthetic_trace"]
