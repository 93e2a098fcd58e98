"""Results of the fusion layer: kernels, plans (sequences of kernels) and plan comparisons."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from .._errors import table_renamed
from .._format import si
from ..estimate import Estimate

__all__ = ["Comparison", "Kernel", "Plan", "compare"]


@dataclass(frozen=True)
class Kernel:
    """One kernel of a plan: the ops it runs, its estimate and its launches."""

    name: str
    ops: tuple[str, ...]
    estimate: Estimate[Any]
    launches: int = 1

    @property
    def time_s(self) -> float:
        """Predicted time in seconds."""
        return float(self.estimate.time_s)


@dataclass(frozen=True)
class Plan:
    """A way to run some work: kernels one after another, and their totals.

    Attributes
    ----------
    name : str
        What the plan is ("unfused", "fused", "1 fused GEMM + 1 bmm", ...).
    kernels : tuple of Kernel
        In execution order.
    hardware, efficiency : str
        Where and under which efficiency model every kernel was estimated.

    Notes
    -----
    Totals are sums over kernels (they run back to back, no overlap between kernels).
    ``plan1 + plan2`` concatenates two plans estimated on the same hardware and model.
    """

    name: str
    kernels: tuple[Kernel, ...]
    hardware: str = ""
    efficiency: str = ""

    @property
    def total(self) -> Estimate[Any]:
        """Sum of the kernels' estimates."""
        return sum((k.estimate for k in self.kernels), Estimate(0.0, 0.0, 0.0, 0.0, 0.0, 0.0))

    @property
    def time_s(self) -> float:
        """Total predicted time in seconds."""
        return float(sum(k.time_s for k in self.kernels))

    @property
    def bytes(self) -> float:
        """Total DRAM traffic in bytes."""
        return float(sum(float(k.estimate.bytes) for k in self.kernels))

    @property
    def flops(self) -> float:
        """Total FLOPs."""
        return float(sum(float(k.estimate.flops) for k in self.kernels))

    @property
    def launches(self) -> int:
        """Kernel launches."""
        return sum(k.launches for k in self.kernels)

    @property
    def intensity(self) -> float:
        """FLOPs per byte of DRAM traffic over the whole plan."""
        return self.flops / self.bytes if self.bytes > 0 else float("inf")

    def __add__(self, other: Any) -> Plan:
        if not isinstance(other, Plan):
            return NotImplemented
        if (self.hardware, self.efficiency) != (other.hardware, other.efficiency):
            raise ValueError(
                f"Plan: cannot add plans on different hardware or efficiency models, got "
                f"{self.hardware}/{self.efficiency} and {other.hardware}/{other.efficiency}"
            )
        return Plan(f"{self.name} + {other.name}", self.kernels + other.kernels,
                    self.hardware, self.efficiency)

    def renamed(self, name: str) -> Plan:
        """The same plan under another name."""
        return Plan(name, self.kernels, self.hardware, self.efficiency)

    def rows(self) -> list[dict[str, Any]]:
        """One dict per kernel (SI units): kernel, ops, time_s, flops, bytes, launches, bound."""
        return [
            {
                "kernel": k.name,
                "ops": ", ".join(k.ops),
                "time_s": k.time_s,
                "flops": float(k.estimate.flops),
                "bytes": float(k.estimate.bytes),
                "launches": k.launches,
                "intensity": float(k.estimate.intensity),
                "bound": str(k.estimate.bound),
            }
            for k in self.kernels
        ]

    def table(self) -> Any:
        """Deprecated name of :meth:`to_pandas`."""
        table_renamed(self)
        return self.to_pandas()

    def to_pandas(self) -> Any:
        """A pandas DataFrame with one row per kernel (SI units)."""
        import pandas as pd

        return pd.DataFrame(self.rows())

    def _repr_html_(self) -> str:
        from .._html import result_html

        return result_html(f"plan {self.name!r} on {self.hardware} ({self.efficiency})", [
            ("time", si(self.time_s, "s")), ("kernels", len(self.kernels)),
            ("launches", self.launches), ("work", si(self.flops, "FLOP")),
            ("DRAM traffic", si(self.bytes, "B"))], self.to_pandas())

    def __repr__(self) -> str:
        return (
            f"Plan({self.name!r} on {self.hardware} ({self.efficiency}): {len(self.kernels)} "
            f"kernels, {si(self.time_s, 's')}, {si(self.flops, 'FLOP')}, {si(self.bytes, 'B')})"
        )


@dataclass(frozen=True)
class Comparison:
    """Two plans for the same work, side by side: ``baseline`` and ``candidate``.

    Notes
    -----
    ``saving = 1 - candidate.time_s / baseline.time_s`` (the fraction of the baseline's time
    saved; 0.4 is "40 % faster" in the sense of 40 % less time) and
    ``speedup = baseline.time_s / candidate.time_s``.
    """

    baseline: Plan
    candidate: Plan
    title: str = ""

    @property
    def saving_s(self) -> float:
        """Seconds saved by the candidate (negative when it is slower)."""
        return self.baseline.time_s - self.candidate.time_s

    @property
    def saving(self) -> float:
        """Fraction of the baseline's time saved."""
        return self.saving_s / self.baseline.time_s

    @property
    def speedup(self) -> float:
        """Baseline time over candidate time."""
        return self.baseline.time_s / self.candidate.time_s

    @property
    def bytes_saved(self) -> float:
        """DRAM bytes the candidate does not move."""
        return self.baseline.bytes - self.candidate.bytes

    def rows(self) -> list[dict[str, Any]]:
        """One dict per plan plus a ``saving`` row (SI units; the saving row holds
        differences, and its ``speedup`` the ratio)."""
        out = []
        for p in (self.baseline, self.candidate):
            out.append({"plan": p.name, "time_s": p.time_s, "bytes": p.bytes, "flops": p.flops,
                        "launches": p.launches, "intensity": p.intensity,
                        "speedup": self.baseline.time_s / p.time_s})
        out.append({"plan": "saving", "time_s": self.saving_s, "bytes": self.bytes_saved,
                    "flops": self.baseline.flops - self.candidate.flops,
                    "launches": self.baseline.launches - self.candidate.launches,
                    "intensity": float("nan"), "speedup": self.speedup})
        return out

    def table(self) -> Any:
        """Deprecated name of :meth:`to_pandas`."""
        table_renamed(self)
        return self.to_pandas()

    def to_pandas(self) -> Any:
        """A pandas DataFrame: the two plans and the saving (SI units)."""
        import pandas as pd

        return pd.DataFrame(self.rows())

    def _repr_html_(self) -> str:
        from .._html import result_html

        return result_html(
            f"{self.title or 'comparison'} ({self.baseline.hardware}, efficiency "
            f"{self.baseline.efficiency})",
            [("candidate", f"{100 * (1 - self.saving):.1f} % of the baseline's time "
                           f"({100 * self.saving:.1f} % saved, {self.speedup:.2f}x)")],
            self.to_pandas())

    def to_dict(self) -> dict[str, Any]:
        """Plain values for JSON: both plans' totals and kernels, the saving and speedup."""
        def plan(p: Plan) -> dict[str, Any]:
            return {"name": p.name, "time_s": p.time_s, "bytes": p.bytes, "flops": p.flops,
                    "launches": p.launches, "kernels": p.rows()}

        return {"title": self.title, "hardware": self.baseline.hardware,
                "efficiency": self.baseline.efficiency, "baseline": plan(self.baseline),
                "candidate": plan(self.candidate), "saving_s": self.saving_s,
                "saving": self.saving, "speedup": self.speedup}

    def __str__(self) -> str:
        head = f"{'plan':<34} {'time':>11} {'bytes':>11} {'FLOPs':>11} {'launches':>8}"
        lines = [self.title or "comparison",
                 f"({self.baseline.hardware}, efficiency {self.baseline.efficiency})", head]
        for p in (self.baseline, self.candidate):
            lines.append(f"{p.name[:34]:<34} {si(p.time_s, 's'):>11} {si(p.bytes, 'B'):>11} "
                         f"{si(p.flops, 'FLOP'):>11} {p.launches:>8}")
        lines.append(f"{'saving':<34} {si(self.saving_s, 's'):>11} "
                     f"{si(self.bytes_saved, 'B'):>11} {'':>11} "
                     f"{self.baseline.launches - self.candidate.launches:>8}")
        lines.append(f"candidate takes {100 * (1 - self.saving):.1f} % of the baseline's time "
                     f"({100 * self.saving:.1f} % saved, {self.speedup:.2f}x)")
        return "\n".join(lines)

    def __repr__(self) -> str:
        return (f"Comparison({self.title or 'plans'}: {self.baseline.name} "
                f"{si(self.baseline.time_s, 's')} -> {self.candidate.name} "
                f"{si(self.candidate.time_s, 's')}, {100 * self.saving:.1f} % saved)")


def compare(baseline: Plan, candidate: Plan, title: str = "") -> Comparison:
    """Put two plans side by side (they must share hardware and efficiency model)."""
    for arg, p in (("baseline", baseline), ("candidate", candidate)):
        if not isinstance(p, Plan):
            raise TypeError(f"compare: {arg} must be a Plan, got {p!r}")
    if (baseline.hardware, baseline.efficiency) != (candidate.hardware, candidate.efficiency):
        raise ValueError(
            "compare: both plans must be estimated on the same hardware and efficiency model, "
            f"got {baseline.hardware}/{baseline.efficiency} and "
            f"{candidate.hardware}/{candidate.efficiency}"
        )
    return Comparison(baseline, candidate, title)


def concat(name: str, plans: Iterable[Plan]) -> Plan:
    """Plans run one after another, as one plan called ``name``."""
    out: Plan | None = None
    for p in plans:
        out = p if out is None else out + p
    if out is None:
        raise ValueError("concat: plans must not be empty")
    return out.renamed(name)
