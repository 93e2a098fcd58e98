"""What a benchmark family is: an op, its shapes per device and suite, and how to time it."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ._timing import Timer

__all__ = ["Ctx", "Family", "Measure", "Skip", "simple"]

#: A measurement: given the timer, the row's measured fields (``measured`` in seconds, and
#: optional extras such as ``fwd_bwd_s`` or ``graph_s``).
Measure = Callable[[Timer], dict[str, Any]]

#: roofline dtype label -> torch dtype attribute.
_TORCH_DTYPES = {"bf16": "bfloat16", "fp16": "float16", "fp32": "float32", "tf32": "float32"}


class Skip(Exception):
    """A case (or family) cannot run here; the message says why."""


@dataclass
class Ctx:
    """The torch module, the device and the suite a run measures on, plus helpers."""

    torch: Any
    device: str
    suite: str
    _compile_reason: list[str | None] = field(default_factory=list)

    @property
    def act(self) -> str:
        """Activation dtype label: bf16 on a GPU, fp32 on the CPU (bf16 is emulated there)."""
        return "bf16" if self.device == "cuda" else "fp32"

    def dtype(self, label: str) -> Any:
        """The torch dtype of a roofline dtype label."""
        return getattr(self.torch, _TORCH_DTYPES[label])

    def randn(self, *shape: int, dtype: str | None = None, requires_grad: bool = False) -> Any:
        """Random normal data (never zeros) on the device."""
        t = self.torch.randn(*shape, device=self.device,
                             dtype=self.dtype(dtype or self.act))
        return t.requires_grad_(requires_grad)

    def compiled(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        """``torch.compile(fn)`` with static shapes and a fresh Dynamo cache (no recompile
        limit is reached across cases)."""
        reason = self.compile_unavailable()
        if reason:
            raise Skip(reason)
        self.torch._dynamo.reset()
        return self.torch.compile(fn, dynamic=False)  # type: ignore[no-any-return]

    def compile_unavailable(self) -> str | None:
        """Why torch.compile cannot run here (None when it can); checked once per run."""
        if not self._compile_reason:
            reason = None
            if self.device == "cuda":
                try:
                    import triton  # noqa: F401
                except ImportError:
                    reason = "torch.compile needs triton on a GPU (not installed)"
            if reason is None:
                try:
                    f = self.torch.compile(lambda x: x * 2 + 1, dynamic=False)
                    f(self.torch.ones(4, device=self.device))
                except Exception as exc:  # noqa: BLE001 - any compiler failure means skip
                    reason = f"torch.compile does not work here ({type(exc).__name__}: " \
                             f"{str(exc).splitlines()[0][:160] if str(exc) else ''})"
            self._compile_reason.append(reason)
        return self._compile_reason[0]

    def sync(self) -> None:
        """Wait for the device."""
        if self.device == "cuda":
            self.torch.cuda.synchronize()


def simple(fn: Callable[[], Any], flush: bool = True) -> Measure:
    """The measurement of one callable: its median time per call."""
    def measure(timer: Timer) -> dict[str, Any]:
        return {"measured": timer(fn, flush=flush)}

    return measure


@dataclass(frozen=True)
class Family:
    """One family of measurement rows.

    Attributes
    ----------
    name : str
        Base name without the device prefix, e.g. ``"gemm_bf16"`` (rows carry
        ``"gpu_gemm_bf16"`` or ``"cpu_gemm_bf16"``).
    op : str
        The row's ``op``: the public API function that predicts it.
    method : str
        What ran, for the row's ``method`` field.
    shapes : callable
        ``(device, suite) -> list of args dicts`` (public-API argument names).
    build : callable
        ``(ctx, args) -> Measure``; raises :class:`Skip` when a case cannot run.
    backend : str, optional
        The row's ``backend`` field.
    requires : callable, optional
        ``ctx -> reason or None``: why the family cannot run on this device/build.
    cpu_quick : bool
        False for families too slow to prepare on a small CPU in ``--quick`` (compiled).
    act_dtype : bool
        The runner adds ``dtype`` (bf16 on a GPU, fp32 on the CPU) to args lacking one.
    """

    name: str
    op: str
    method: str
    shapes: Callable[[str, str], list[dict[str, Any]]]
    build: Callable[[Ctx, dict[str, Any]], Measure]
    backend: str | None = None
    requires: Callable[[Ctx], str | None] | None = None
    cpu_quick: bool = True
    act_dtype: bool = True
