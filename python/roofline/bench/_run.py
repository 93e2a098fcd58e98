"""``roofline.bench.run``: measure the selected families on the local device."""

from __future__ import annotations

import datetime
import math
import os
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from ._cases import Ctx, Family, Skip
from ._output import Output
from ._registry import PREFIXES, select

__all__ = ["BenchInterrupted", "BenchResult", "Skipped", "run"]

DEVICES = ("cuda", "cpu")
SUITES = ("quick", "full")


@dataclass(frozen=True)
class Skipped:
    """A family, or some of its cases, that did not run, and why."""

    family: str
    reason: str
    cases: int


class BenchResult(list):  # type: ignore[type-arg]
    """The measured rows (a list of dicts), plus ``skipped`` (list of :class:`Skipped`),
    ``out`` (the file written, or None) and ``seconds`` (how long the run took)."""

    skipped: list[Skipped]
    out: str | None
    seconds: float


class BenchInterrupted(KeyboardInterrupt):
    """Ctrl-C during :func:`run`: ``rows`` holds the :class:`BenchResult` measured so far
    (also written to ``out``, line by line)."""

    def __init__(self, rows: BenchResult) -> None:
        super().__init__(f"bench interrupted: kept {len(rows)} rows")
        self.rows = rows


def _progress_enabled(progress: bool | None, stream: Any) -> bool:
    """``progress`` if given, else whether ``stream`` is a terminal."""
    if progress is not None:
        return bool(progress)
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


def _plan(ctx: Ctx, families: list[Family], named: bool, skipped: list[Skipped]
          ) -> list[tuple[Family, dict[str, Any]]]:
    prefix = PREFIXES[ctx.device]
    plan = []
    for fam in families:
        shapes = fam.shapes(ctx.device, ctx.suite)
        reason = fam.requires(ctx) if fam.requires is not None else None
        if reason is None and not shapes:
            reason = f"no {ctx.suite} shapes on {ctx.device}"
        if reason is None and ctx.device == "cpu" and ctx.suite == "quick" and not fam.cpu_quick \
                and not named:
            reason = ("not in the CPU --quick suite (the first torch.compile takes ~20 s on a "
                      "small CPU); use --full or name it with --families")
        if reason is None and fam.backend == "compiled":
            reason = ctx.compile_unavailable()
        if reason is not None:
            skipped.append(Skipped(f"{prefix}_{fam.name}", reason, len(shapes)))
            continue
        for args in shapes:
            if fam.act_dtype:
                args.setdefault("dtype", ctx.act)
            plan.append((fam, args))
    return plan


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text.splitlines()[0][:200] if text else ''}".rstrip(": ")


def run(
    device: str = "cuda",
    suite: str = "quick",
    families: str | Iterable[str] | None = None,
    out: str | os.PathLike[str] | None = None,
    *,
    append: bool = False,
    force: bool = False,
    progress: bool | None = None,
    on_row: Callable[[dict[str, Any]], None] | None = None,
) -> BenchResult:
    """Measure real kernels with torch on this machine, in the shared measurement schema.

    Parameters
    ----------
    device : {"cuda", "cpu"}
        Where to measure (the current GPU, or the CPU).
    suite : {"quick", "full"}
        ``"quick"``: a few shapes per family (~2 minutes on an H100, well under a minute on a
        small CPU); ``"full"``: many more.
    families : str or list of str, optional
        Families to run: full names (``gpu_gemm_bf16``), names without the device prefix
        (``gemm_bf16``) or shell patterns (``gemm_*``); default every family of the suite.
    out : str or PathLike, optional
        JSON-lines file the rows are written to, one flushed line per row as it is measured.
    append, force : bool
        An existing non-empty ``out`` is refused unless ``append`` (add rows) or ``force``
        (replace it).
    progress : bool, optional
        Show a progress bar with ETA on stderr; default: when stderr is a terminal.
    on_row : callable, optional
        Called with each row as soon as it is measured.

    Returns
    -------
    BenchResult
        The rows (a list of dicts: ``id``, ``family``, ``hardware``, ``device_name``, ``op``,
        ``args``, ``measured`` in seconds, ``unit``, ``method``, ``source``, ``backend``
        where relevant, ``versions``), with ``.skipped``: what did not run and why.

    Raises
    ------
    ValueError
        Unknown device, suite or family (the message lists the valid ones).
    FileExistsError
        ``out`` exists and neither ``append`` nor ``force`` is set.
    RuntimeError
        torch is missing, or ``device="cuda"`` without a usable GPU.
    BenchInterrupted
        Ctrl-C (a ``KeyboardInterrupt``): its ``rows`` are what was measured and written.

    Notes
    -----
    Each case: random normal inputs, warm-up, then the median of enough timed repeats;
    on a GPU CUDA events (or ``triton.testing.do_bench``) with L2 flushed before every run,
    on the CPU ``time.perf_counter``. Backward rows are (forward + backward) - forward.
    """
    if not isinstance(device, str) or device not in DEVICES:
        raise ValueError(f"bench: device must be one of {DEVICES}, got {device!r}")
    if not isinstance(suite, str) or suite not in SUITES:
        raise ValueError(f"bench: suite must be one of {SUITES}, got {suite!r}")
    chosen, named = select(families, device)
    output = Output(out, append=append, force=force) if out is not None else None
    try:
        import torch
    except ImportError as exc:  # pragma: no cover - torch is in the test extra
        raise RuntimeError("bench: needs torch (pip install torch)") from exc
    if device == "cuda" and not torch.cuda.is_available():
        raise RuntimeError("bench: device='cuda' but torch sees no GPU "
                           "(torch.cuda.is_available() is False); use device='cpu'")

    import time

    from ._env import environment
    from ._timing import make_timer

    t0 = time.perf_counter()
    ctx = Ctx(torch, device, suite)
    result = BenchResult()
    result.skipped = []
    result.out = None if out is None else str(out)
    plan = _plan(ctx, chosen, named, result.skipped)
    timer = make_timer(device, suite)
    env = environment(torch, device)
    when = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d")
    source = (f"measured with roofline bench --{suite} on {env['device_name']}, torch "
              f"{torch.__version__}, {timer.method}, {when}")
    prefix = PREFIXES[device]
    start = output.existing if output is not None else 0
    case_skips: dict[tuple[str, str], int] = {}
    show = _progress_enabled(progress, sys.stderr)
    from ._progress import Bar

    try:
        with Bar(len(plan), show) as bar:
            for fam, args in plan:
                family = f"{prefix}_{fam.name}"
                bar.update(family)
                try:
                    fields = fam.build(ctx, args)(timer)
                except Skip as exc:
                    key = (family, str(exc))
                    case_skips[key] = case_skips.get(key, 0) + 1
                    bar.advance()
                    continue
                except Exception as exc:  # noqa: BLE001 - one failed case (an Inductor or
                    # Triton error, an out-of-memory) is reported in `skipped`; the run goes on
                    key = (family, _first_line(exc))
                    case_skips[key] = case_skips.get(key, 0) + 1
                    if device == "cuda":
                        torch.cuda.empty_cache()
                    bar.advance()
                    continue
                measured = fields.get("measured")
                if not (isinstance(measured, float) and math.isfinite(measured)
                        and measured > 0):
                    key = (family, f"measured time not positive and finite: {measured!r}")
                    case_skips[key] = case_skips.get(key, 0) + 1
                    bar.advance()
                    continue
                row: dict[str, Any] = {
                    "id": f"{family}-{start + len(result)}", "family": family,
                    "hardware": env["hardware"], "device_name": env["device_name"],
                    "op": fam.op, "args": args, **fields, "unit": "s",
                    "method": fam.method, "source": source,
                }
                if fam.backend is not None:
                    row["backend"] = fam.backend
                row["versions"] = env["versions"]
                if output is not None:
                    output.write(row)
                if on_row is not None:
                    on_row(row)
                result.append(row)
                bar.advance()
    except KeyboardInterrupt:
        result.seconds = time.perf_counter() - t0
        result.skipped.extend(Skipped(f, r, n) for (f, r), n in case_skips.items())
        raise BenchInterrupted(result) from None
    finally:
        if output is not None:
            output.close()
    result.skipped.extend(Skipped(f, r, n) for (f, r), n in case_skips.items())
    result.seconds = time.perf_counter() - t0
    return result
