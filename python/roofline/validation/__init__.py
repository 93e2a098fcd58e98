"""Compare the model with measured kernel times (files in the shared measurement schema).

A measurement file has one JSON object per line: ``family``, ``hardware``, ``op``, ``args``
(public-API argument names), ``measured`` (seconds), ``method``, ``source`` and optional
``backend``, ``kernels``, ``wall_s``, ``graph_s``. :func:`compare` predicts every row it can
model with the public API; :func:`summary` gives the median and 90th-percentile absolute
relative error per family.
"""

from __future__ import annotations

from .compare import Comparison, compare, summary
from .read import read_measurements
from .report import ValidationResult, validate

__all__ = ["Comparison", "ValidationResult", "compare", "read_measurements", "summary",
           "validate"]
