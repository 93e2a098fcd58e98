"""The result of ``rl.transformer.estimate``: per-op rows, totals and memory per GPU."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .._errors import table_renamed
from .._format import si
from ..estimate import Estimate
from ..ops.host import StepWall, WallTime
from .config import TransformerConfig

__all__ = ["COLUMNS", "ModelEstimate"]

#: Numeric columns of every op row, in the core's order.
COLUMNS = ("time_s", "compute_s", "memory_s", "overhead_s", "flops", "bytes")


@dataclass(frozen=True, eq=False)
class ModelEstimate(StepWall):
    """One step of a model on one GPU: ops of each layer kind, totals and memory.

    Attributes
    ----------
    config : TransformerConfig
        The model.
    phase, hardware : str
        ``decode`` / ``prefill`` / ``train`` and the accelerator.
    batch, q_len, kv_len, tp, ep, tokens : int
        The step's shape; ``tokens = batch·q_len`` processed per step.
    groups : list of (kind, layer indices)
        Layer kinds (``dense``, ``moe``) with their layers, then ``head`` (embedding,
        final norm, LM head), whose ops run once.
    memory : dict
        Bytes per GPU: ``weights_bytes``, ``kv_cache_bytes``, ``gradients_bytes``,
        ``optimizer_bytes``, ``activations_bytes``, ``total_bytes``, plus
        ``params_per_gpu`` and the hardware's ``capacity_bytes``.
    launch : str
        How the kernels are launched (``"eager"``, ``"compiled"``, ``"graph"``).
    wall : roofline.WallTime or None
        Wall time of the step with the host's launch overhead (:func:`roofline.wall_time`).
    step : roofline.transformer.layout_step.TrainStep or None
        Training: the parallel step (micro-batches, bubble, recomputation, exposed
        communication, memory); ``time_s``, ``tokens_per_s`` and ``mfu`` are the step's.

    Notes
    -----
    Op rows of a layer kind are computed once; totals multiply them by the kind's layer
    count, and :meth:`to_pandas` repeats them per layer, so the table sums to the totals.
    Collective rows hold link bytes (not DRAM bytes) in ``bytes``; their ``memory_s`` is the
    transfer time and ``overhead_s`` the latency. ``bytes`` totals therefore mix the two.
    """

    config: TransformerConfig
    phase: str
    hardware: str
    batch: int
    q_len: int
    kv_len: int
    tp: int
    ep: int
    tokens: int
    groups: list[tuple[str, list[int]]]
    rows: list[tuple[int, str, str]]
    columns: dict[str, np.ndarray]
    memory: dict[str, float]
    peak_flops_per_s: float
    linear_recipe: str | None = None
    _cache: dict[str, Any] = field(default_factory=dict, repr=False)
    launch: str = "eager"
    wall: WallTime | None = None
    step: Any = None  # roofline.transformer.layout_step.TrainStep for phase="train"

    # ------------------------------------------------------------------ totals

    def _multiplicity(self) -> np.ndarray:
        if "mult" not in self._cache:
            counts = [len(layers) if kind != "head" else 1 for kind, layers in self.groups]
            self._cache["mult"] = np.array([counts[g] for g, _, _ in self.rows], dtype=float)
        out: np.ndarray = self._cache["mult"]
        return out

    def _sum(self, column: str) -> float:
        return float(np.dot(self._multiplicity(), self.columns[column]))

    @property
    def time_s(self) -> float:
        """Predicted time of the step (every op in sequence, no overlap; training: the
        parallel step of :attr:`step`, the table's sum with default parallel arguments)."""
        if self.step is not None:
            return float(self.step.time_s)
        return self._sum("time_s")

    @property
    def flops(self) -> float:
        """FLOPs of the step on one GPU."""
        return self._sum("flops")

    @property
    def total(self) -> Estimate[Any]:
        """The step as one :class:`~roofline.Estimate` (sum of every op)."""
        vals: dict[str, Any] = {c: self._sum(c) for c in COLUMNS}
        return Estimate(**vals, label=f"{self.config.name} {self.phase}",
                        hardware=self.hardware)

    @property
    def tokens_per_s(self) -> float:
        """Tokens processed per second by the GPUs sharing this batch (one tp group;
        training: the whole job, ``step.tokens / time_s``)."""
        if self.step is not None:
            return float(self.step.tokens) / self.time_s
        return self.tokens / self.time_s

    @property
    def mfu(self) -> float:
        """Model FLOPs utilisation: the step's FLOPs / (time · dense peak of the linears' dtype).

        FLOPs are the table's (attention included, per GPU); the peak is bf16, or fp8 / fp4
        with a low-precision ``linear_recipe``. Training: ``step.mfu`` (per GPU, every
        micro-batch, recomputation excluded).
        """
        if self.step is not None:
            return float(self.step.mfu)
        return self.flops / (self.time_s * self.peak_flops_per_s)

    @property
    def totals(self) -> dict[str, float]:
        """``time_s``, ``tokens_per_s``, ``mfu``, ``flops``, ``bytes`` of the step, and its
        ``wall_s`` with the host's launch overhead (``launch_bound``: 1.0 when launching is
        most of it, else 0.0)."""
        return {"time_s": self.time_s, "tokens_per_s": self.tokens_per_s, "mfu": self.mfu,
                "flops": self.flops, "bytes": self._sum("bytes"), "wall_s": self.wall_s,
                "launch_bound": float(self.launch_bound)}

    # ------------------------------------------------------------------ tables

    def _bound(self) -> np.ndarray:
        terms = np.stack([self.columns["compute_s"], self.columns["memory_s"],
                          self.columns["overhead_s"]])
        names = np.array(["compute", "memory", "overhead"])
        bound = names[np.argmax(terms, axis=0)]
        comm = np.array([kind == "collective" for _, _, kind in self.rows])
        bound[comm] = np.where(terms[1, comm] >= terms[2, comm], "network", "latency")
        return np.asarray(bound)

    def ops(self) -> Any:
        """pandas DataFrame with one row per op of each layer kind (not repeated per layer)."""
        import pandas as pd

        df = pd.DataFrame({
            "block": [self.groups[g][0] for g, _, _ in self.rows],
            "layers": [len(self.groups[g][1]) or 1 for g, _, _ in self.rows],
            "op": [name for _, name, _ in self.rows],
            "kind": [kind for _, _, kind in self.rows],
            **{c: self.columns[c] for c in COLUMNS},
        })
        df["bound"] = self._bound()
        return df

    def table(self) -> Any:
        """Deprecated name of :meth:`to_pandas`."""
        table_renamed(self)
        return self.to_pandas()

    def to_pandas(self) -> Any:
        """pandas DataFrame, one row per (layer, op): layer, block, op, kind, FLOPs, bytes,
        times, bound. Embedding is layer -1, final norm / LM head layer ``num_layers``."""
        import pandas as pd

        ops = self.ops()
        frames = []
        head = ops[ops["block"] == "head"]
        embed = head[head["op"] == "embedding"]
        frames.append(embed.assign(layer=-1))
        for kind, layers in self.groups:
            if kind == "head":
                continue
            block = ops[ops["block"] == kind]
            for layer in layers:
                frames.append(block.assign(layer=layer))
        frames.append(head[head["op"] != "embedding"].assign(layer=self.config.num_layers))
        df = pd.concat(frames, ignore_index=True)
        df = df.sort_values("layer", kind="stable", ignore_index=True)
        return df[["layer", "block", "op", "kind", *COLUMNS, "bound"]]

    def summary(self) -> Any:
        """pandas DataFrame per op name summed over layers, with its share of the step time."""
        ops = self.ops()
        for c in COLUMNS:
            ops[c] = ops[c] * ops["layers"]
        out = ops.groupby(["op", "kind"], sort=False)[list(COLUMNS)].sum().reset_index()
        out["share"] = out["time_s"] / self.time_s
        return out.sort_values("time_s", ascending=False, ignore_index=True)

    @property
    def title(self) -> str:
        """One line naming the step: model, phase, hardware and shape (tables' title)."""
        return (f"{self.config.name} {self.phase} on {self.hardware}: batch {self.batch}, "
                f"q_len {self.q_len}, kv_len {self.kv_len}, tp {self.tp}, ep {self.ep}")

    def _repr_html_(self) -> str:
        from .._html import result_html

        m = self.memory
        return result_html(self.title, [
            ("time per step (GPU)", si(self.time_s, "s")),
            ("wall time", f"{si(self.wall_s, 's')} ({self.launch}"
                          f"{', launch-bound' if self.launch_bound else ''})"),
            ("tokens/s", f"{self.tokens_per_s:,.0f}"),
            ("MFU", f"{self.mfu:.1%}"),
            ("memory per GPU", f"{si(m['total_bytes'], 'B')} (weights "
                               f"{si(m['weights_bytes'], 'B')}, KV cache "
                               f"{si(m['kv_cache_bytes'], 'B')})"),
        ], self.summary())

    def __repr__(self) -> str:
        m = self.memory
        return (
            f"ModelEstimate({self.config.name} {self.phase} on {self.hardware}, batch "
            f"{self.batch}, q_len {self.q_len}, kv_len {self.kv_len}, tp {self.tp}, ep "
            f"{self.ep}: {si(self.time_s, 's')} per step (GPU; wall {si(self.wall_s, 's')} "
            f"{self.launch}{', launch-bound' if self.launch_bound else ''}), "
            f"{self.tokens_per_s:,.0f} tokens/s, "
            f"MFU {self.mfu:.1%}; memory per GPU {si(m['total_bytes'], 'B')} (weights "
            f"{si(m['weights_bytes'], 'B')}, KV cache {si(m['kv_cache_bytes'], 'B')}))"
        )
