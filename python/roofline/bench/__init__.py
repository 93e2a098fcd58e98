"""Measure real kernels with torch on this machine, in the shared measurement schema.

>>> import roofline as rl
>>> rows = rl.bench.run(device="cpu", suite="quick", out="m.jsonl")   # doctest: +SKIP
>>> rl.validate("m.jsonl", hardware=my_cpu)                            # doctest: +SKIP

Rows carry the op names and public-API argument names of the shared schema
(``data/measurements/README.md``), so :func:`roofline.validation.compare` predicts
them. torch is imported only when :func:`run` runs.
"""

from __future__ import annotations

from ._registry import family_names
from ._run import BenchInterrupted, BenchResult, Skipped, run

__all__ = ["BenchInterrupted", "BenchResult", "Skipped", "family_names", "run"]
