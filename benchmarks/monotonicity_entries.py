"""Monotonicity of the registry entries sessions 7-8 added, as a trace prices them.

A violation is a pair of recorded calls that differ in one size (the larger one a bigger
value) whose priced time goes *down*: ``topk`` (slices, slice length, k; sorted or not),
``sort`` (keys), full ``sum`` / ``mean`` (elements), ``cat`` / ``stack`` (rows of one
input), ``nonzero`` (elements), ``index_put_`` with ``accumulate`` (rows, indices),
``nll_loss`` forward / backward (rows), ``_log_softmax_backward_data`` (rows, columns) and
the grouped 2-D x 2-D weight gradient (K, M, N). Steps onto a multiple of 8 are listed apart
(aligned kernels may be faster), and so are steps across one of aten's own launch heuristics,
where the bigger call runs a different, more parallel kernel (the model prices what runs):

- topk: ``should_use_multiblock`` (``TensorTopK.cu``) moves long slices from one block per
  slice to the multi-block radix select once there are enough of them, and the multi-block
  path sizes its items per thread from all slices' elements, so more slices mean fewer
  blocks per slice and a shorter digit cumsum over them;
- full sum / mean: ``setReduceConfig`` splits the input over many blocks once a thread of the
  single block would add 256 values or more (``_core.full_reduce_blocks``);
- nll_loss: the block's threads are ``clamp(2**round(log2(rows / 16)), 32, 1024)``
  (``nll_loss_threads`` in ``LossNLL.cu``), so a few more rows can mean twice the threads and
  fewer serial steps;
- index_put_ (accumulate): more destination rows at the same indices spread the duplicates,
  shortening the serial chains that add them (less contention, not more work).

Usage::

    PYTHONPATH=python python benchmarks/monotonicity_entries.py [--hardware "H100 SXM" ...]
"""

from __future__ import annotations

import argparse
import math
import sys
from collections import Counter
from collections.abc import Callable, Iterator

from roofline import _core, hardware
from roofline.ops.registry import Call, Impl, Pricer, TensorArg, price

SIZES = [1, 2, 7, 8, 9, 31, 32, 33, 100, 127, 128, 129, 400, 1000, 1024, 1025, 4095, 4096, 4097,
         8192, 16384, 65536, 262144]
KS = [0, 1, 2, 8, 16, 31, 32, 33, 64, 128]


def _t(shape: tuple[int, ...], dt: str = "bf16", size: int = 2) -> TensorArg:
    return TensorArg(shape, dt, size)


def _switch(name: str, g: tuple[int, ...], up: tuple[int, ...], sms: float) -> bool:
    """Whether ``g`` -> ``up`` crosses one of aten's launch heuristics (see the module)."""
    if name.startswith("topk"):
        multi = [bool(_core.topk_multiblock(float(x[0]), float(x[1]))) for x in (g, up)]
        blocks = [_core.topk_multiblock_blocks_per_slice(float(x[0]), float(x[1]), sms)
                  for x in (g, up)]
        return multi[0] != multi[1] or (multi[0] and blocks[0] != blocks[1])
    if name.startswith("full"):
        return (_core.full_reduce_blocks(float(g[0]), 8.0, sms) > 1) != (
            _core.full_reduce_blocks(float(up[0]), 8.0, sms) > 1)
    if name.startswith("nll"):
        return _core.nll_loss_threads(float(g[0])) != _core.nll_loss_threads(float(up[0]))
    if name.startswith("index_put"):
        return g[0] != up[0]  # more destination rows: fewer duplicates per row
    return False


def _time(call: Call, p: Pricer) -> float:
    costs, _ = price(call, p)
    return math.fsum(float(e.time_s) for _, e in costs or [])


def _cases() -> Iterator[tuple[str, Callable[..., Call], list[list[int]]]]:
    """(name, call builder, value list per argument)."""
    c = ("",)
    yield ("topk sorted", lambda s, n, k: Call("aten::topk", (_t((s, n)),),
                                                concrete=c + (str(k), "-1", "1", "1")),
           [SIZES, SIZES, KS])
    yield ("topk unsorted", lambda s, n, k: Call("aten::topk", (_t((s, n)),),
                                                  concrete=c + (str(k), "-1", "1", "0")),
           [SIZES, SIZES, KS])
    yield ("sort", lambda n: Call("aten::sort", (_t((n,), None, 8),)), [SIZES + [10**6]])
    for op in ("sum", "mean"):
        yield (f"full {op}", lambda n, op=op: Call(f"aten::{op}", (_t((n,)),),
                                                   concrete=("", "")), [SIZES + [10**7]])
    for op in ("cat", "stack"):
        yield (op, lambda a, b, w, op=op: Call(f"aten::{op}", ((_t((a, w)), _t((b, w))),),
                                               concrete=("", "0")), [SIZES, SIZES, SIZES])
    yield ("nonzero", lambda a, b: Call("aten::nonzero", (_t((a, b), None, 1),)), [SIZES, SIZES])
    yield ("index_put accumulate", lambda r, n, w: Call(
        "aten::_index_put_impl_", (_t((r, w)), (_t((n,), None, 8),), _t((n, w))),
        concrete=("", "", "", "True", "False")), [SIZES, SIZES, [1, 64, 2048]])
    yield ("nll_loss forward", lambda r, v: Call(
        "aten::nll_loss_forward", (_t((r, v), "fp32", 4), _t((r,), None, 8)),
        concrete=("", "", "", "1", "-100")), [SIZES, [128, 32000]])
    yield ("nll_loss backward", lambda r, v: Call(
        "aten::nll_loss_backward", (_t(()), _t((r, v), "fp32", 4), _t((r,), None, 8)),
        concrete=("", "", "", "", "1", "-100", "")), [SIZES, [128, 32000]])
    yield ("log_softmax backward", lambda r, v: Call(
        "aten::_log_softmax_backward_data", (_t((r, v), "fp32", 4), _t((r, v), "fp32", 4)),
        concrete=("", "", "1", "6")), [SIZES, SIZES])
    yield ("grouped wgrad", lambda k, m, n: Call(
        "aten::_grouped_mm", (_t((k, m)), _t((m, n)), _t((8,), None, 4)),
        impl=Impl(kernel="x")), [[64, 127, 128, 129, 1024, 2048], SIZES[4:], [64, 128, 129, 2048]])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--hardware", nargs="+", default=["H100 SXM", "B200", "MI300X"])
    args = ap.parse_args(argv)
    pairs: Counter[str] = Counter()
    bad: Counter[str] = Counter()
    aligned: Counter[str] = Counter()
    switch: Counter[str] = Counter()
    worst: dict[str, tuple[float, str]] = {}
    for hw in args.hardware:
        p = Pricer(hardware(hw), "default")
        sms = float(p.hardware.sms)
        for name, build, values in _cases():
            grid: list[list[int]] = [[]]
            for vals in values:
                grid = [g + [v] for g in grid for v in vals]
            times = {tuple(g): _time(build(*g), p) for g in grid}
            for g, t in times.items():
                for i, vals in enumerate(values):
                    j = vals.index(g[i])
                    if j + 1 >= len(vals):
                        continue
                    up = g[:i] + (vals[j + 1],) + g[i + 1:]
                    if name.startswith("topk") and up[2] > up[1]:
                        continue  # k > n: torch refuses it
                    pairs[name] += 1
                    t2 = times[up]
                    if t2 < t * (1 - 1e-9):
                        key = (switch if _switch(name, g, up, sms) else
                               aligned if vals[j + 1] % 8 == 0 else bad)
                        key[name] += 1
                        drop = 1 - t2 / t
                        if key is bad and drop > worst.get(name, (0.0, ""))[0]:
                            worst[name] = (drop, f"{hw} {g} -> {up}: {t * 1e6:.2f} -> "
                                                 f"{t2 * 1e6:.2f} us")
    print(f"{', '.join(args.hardware)}")
    print(f"{'entry':22s} {'pairs':>7s} {'faster':>7s} {'onto x8':>8s} {'switch':>7s}  "
          "worst of 'faster'")
    for name in pairs:
        print(f"{name:22s} {pairs[name]:7,d} {bad[name]:7,d} {aligned[name]:8,d} "
              f"{switch[name]:7,d}  {worst.get(name, (0.0, ''))[1]}")
    return 1 if sum(bad.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
