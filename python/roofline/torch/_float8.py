"""Which linears of a PyTorch model should run in float8, and what the whole step gains."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import Any

import torch

from .._errors import table_renamed
from .._format import si
from ..float8.layer import linear as float8_linear
from ..hardware import HardwareLike
from ._estimate import TorchEstimate, run

#: Columns of :meth:`Float8Speedup.table`.
COLUMNS = ("name", "M", "K", "N", "calls", "bf16_s", "fp8_gemm_s", "fp8_overhead_s", "fp8_s",
           "speedup", "convert", "reason")


@dataclasses.dataclass(frozen=True, eq=False)
class Float8Speedup:
    """Per-linear bf16 vs float8 time, the conversion decision and the whole-step speedup.

    Attributes
    ----------
    rows : list of dict
        One per linear (see :data:`COLUMNS`); times cover every call of the linear in the
        step.
    step : TorchEstimate
        The bf16 step the speedup is relative to.
    recipe, mode : str
        The float8 recipe and ``"training"`` / ``"inference"``.

    Notes
    -----
    ``step_fp8_s = step_bf16_s - Σ_converted (bf16_s - fp8_s)``: converted linears swap their
    bf16 GEMMs for float8 GEMMs plus casts; every other op of the step is unchanged.
    """

    rows: list[dict[str, Any]]
    step: TorchEstimate
    recipe: str
    mode: str
    hardware: str

    @property
    def step_bf16_s(self) -> float:
        """The step in bf16 (every op, not only the linears)."""
        return self.step.time_s

    @property
    def saved_s(self) -> float:
        """Time the converted linears save."""
        return float(sum(r["bf16_s"] - r["fp8_s"] for r in self.rows if r["convert"]))

    @property
    def step_fp8_s(self) -> float:
        """The step with the recommended linears in float8."""
        return self.step_bf16_s - self.saved_s

    @property
    def speedup(self) -> float:
        """Whole-step speedup: ``step_bf16_s / step_fp8_s``."""
        return self.step_bf16_s / self.step_fp8_s

    @property
    def convert(self) -> list[str]:
        """Fully qualified names of the linears worth converting."""
        return [r["name"] for r in self.rows if r["convert"]]

    def module_filter_fn(self) -> Callable[[torch.nn.Module, str], bool]:
        """A ``module_filter_fn(module, fqn)`` for torchao's ``convert_to_float8_training``."""
        keep = set(self.convert)
        return lambda mod, fqn: fqn in keep

    def table(self) -> Any:
        """Deprecated name of :meth:`to_pandas`."""
        table_renamed(self)
        return self.to_pandas()

    def _repr_html_(self) -> str:
        from .._html import result_html

        return result_html(f"float8 {self.recipe} {self.mode} on {self.hardware}", [
            ("linears converted", f"{len(self.convert)} of {len(self.rows)}"),
            ("step", f"{si(self.step_bf16_s, 's')} bf16 -> {si(self.step_fp8_s, 's')} float8"),
            ("speedup", f"{self.speedup:.3f}x"),
        ], self.to_pandas())

    def to_pandas(self) -> Any:
        """One row per linear (pandas DataFrame with :data:`COLUMNS`)."""
        import pandas as pd

        return pd.DataFrame(self.rows, columns=list(COLUMNS))

    def __repr__(self) -> str:
        return (
            f"Float8Speedup({self.recipe}, {self.mode}, on {self.hardware}: "
            f"{len(self.convert)}/{len(self.rows)} linears converted, step "
            f"{si(self.step_bf16_s, 's')} -> {si(self.step_fp8_s, 's')}, "
            f"speedup {self.speedup:.3f}x)"
        )


def float8_speedup(
    module: Any,
    example_inputs: Any,
    recipe: str = "tensorwise",
    hardware: HardwareLike = None,
    mode: str = "training",
    *,
    kwargs: Mapping[str, Any] | None = None,
    min_speedup: float = 1.0,
    efficiency: Any = "default",
) -> Float8Speedup:
    """Estimate what converting a model's linears to float8 gains, linear by linear.

    Parameters
    ----------
    module : torch.nn.Module
        The model (not modified, never run on real data).
    example_inputs : Tensor or tuple
        Inputs of the real shapes (meta tensors are fine).
    recipe : str
        Any recipe of :func:`roofline.float8.linear` (``tensorwise``, ``rowwise``,
        ``mxfp8_cublas``, ...).
    hardware : Hardware or str, optional
        Accelerator.
    mode : {"training", "inference"}
        Training: forward and backward GEMMs plus casts; inference: forward only.
    kwargs : mapping, optional
        Keyword inputs of ``module.forward``.
    min_speedup : float
        Convert a linear only where its estimated speedup exceeds this (default 1.0).
    efficiency : str or Efficiency
        Efficiency model.

    Returns
    -------
    Float8Speedup
        ``rows`` / ``table()`` per linear, ``convert`` (names), ``module_filter_fn()``,
        ``step_bf16_s``, ``step_fp8_s`` and ``speedup``.

    Notes
    -----
    Every ``nn.Linear`` call is seen by a forward hook while the module runs on meta tensors
    in bf16: ``M`` = input elements / in_features, ``K`` = in_features, ``N`` =
    out_features. Each is costed by :func:`roofline.float8.linear` (bf16 GEMMs against
    float8 GEMMs plus the recipe's cast kernels); a call whose input needs no gradient (the
    model's first linear) has no grad_input GEMM in either precision. As torchao's float8
    training does, a linear is skipped when K or N is not a multiple of 16 (the float8 GEMM's
    requirement) or when it is too small to benefit (speedup <= ``min_speedup``). The step
    itself comes from :func:`roofline.torch.estimate` in bf16.
    """
    fn = "float8_speedup"
    if isinstance(min_speedup, bool) or not isinstance(min_speedup, (int, float)) or not (
        min_speedup > 0
    ):
        raise ValueError(f"{fn}: min_speedup must be a positive number, got {min_speedup!r}")
    if not isinstance(mode, str) or mode.strip().lower() not in ("training", "train",
                                                                   "inference"):
        raise ValueError(f"{fn}: mode must be 'training' or 'inference', got {mode!r}")
    f8mode = "inference" if mode.strip().lower() == "inference" else "training"
    # unknown recipe / hardware names raise KeyError with close matches, before any work
    float8_linear(16, 16, 16, recipe=recipe, hardware=hardware, mode=f8mode,
                     efficiency=efficiency)
    calls: dict[str, list[tuple[int, bool]]] = {}
    dims: dict[str, tuple[int, int]] = {}

    def hooks(root: torch.nn.Module) -> list[Any]:
        handles = []
        for name, mod in root.named_modules():
            if isinstance(mod, torch.nn.Linear):
                def pre(m: Any, args: Any, name: str = name) -> None:
                    x = args[0]
                    k = int(m.in_features)
                    calls.setdefault(name, []).append(
                        (int(x.numel()) // max(k, 1), bool(x.requires_grad)))
                    dims[name] = (k, int(m.out_features))
                handles.append(mod.register_forward_pre_hook(pre))
        return handles

    step = run(fn, module, example_inputs, hardware=hardware,
               mode="train" if f8mode == "training" else "inference", dtype=torch.bfloat16,
               efficiency=efficiency, kwargs=kwargs, fused_attention=True, ranks=None,
               hooks=hooks)
    rows: list[dict[str, Any]] = []
    for name, seen in calls.items():
        k, n = dims[name]
        ms = [m for m, _ in seen]
        bf16 = gemm = ovhd = 0.0
        for m, needs_grad_input in seen:
            if m == 0:
                continue
            r = float8_linear(m, k, n, recipe=recipe, hardware=hardware, mode=f8mode,
                                 efficiency=efficiency)
            bf16 += float(r.bf16_s)
            gemm += float(r.fp8_gemm_s)
            ovhd += float(r.fp8_overhead_s)
            if f8mode == "training" and not needs_grad_input:
                # the step computes no grad_input for this call (its input needs no grad)
                kern = r.kernels()
                skip = kern[kern["kernel"].str.startswith("grad_input")]
                bf16 -= float(skip.loc[skip["role"] == "bf16_gemm", "time_s"].sum())
                gemm -= float(skip.loc[skip["role"] == "lowp_gemm", "time_s"].sum())
        fp8 = gemm + ovhd
        speedup = bf16 / fp8 if fp8 > 0 else 1.0
        if k % 16 or n % 16:
            convert, reason = False, "K or N not a multiple of 16"
        elif speedup <= min_speedup:
            convert, reason = False, f"too small: speedup {speedup:.2f}x <= {min_speedup:g}x"
        else:
            convert, reason = True, f"speedup {speedup:.2f}x"
        rows.append({"name": name, "M": ms[0] if len(set(ms)) == 1 else max(ms), "K": k,
                     "N": n, "calls": len(ms), "bf16_s": bf16, "fp8_gemm_s": gemm,
                     "fp8_overhead_s": ovhd, "fp8_s": fp8, "speedup": speedup,
                     "convert": convert, "reason": reason})
    return Float8Speedup(rows, step, recipe, f8mode, step.hardware)
