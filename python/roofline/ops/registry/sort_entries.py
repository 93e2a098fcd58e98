"""Entries of ``aten::topk`` and ``aten::sort``: aten's radix select and cub's radix sort.

**topk.**
``torch.topk`` on CUDA (``TensorTopK.cu``) runs, unless PyTorch's ``should_use_multiblock``
heuristic picks the multi-block path (many slices of >= 400 elements, or few very long ones:
:func:`roofline._core.topk_multiblock`; below), **one block per slice** of
``min(roundup(n, 32), 1024)`` threads (``sbtopk::gatherTopK``). The block radix-selects the
k-th value 2 bits at a time over the 32-bit radix type (16 passes for fp32, bf16 and fp16
alike: each pass counts the 4 digits with warp ballots, adds them in shared memory and
synchronizes), then gathers the k values with two prefix scans. With ``sorted=True`` and
``1 < k <= 32`` a second kernel sorts each slice's k values in place
(``bitonicSortKVInPlace``: 16 slices per 256-thread block, padded to 32, 15 stages). Both are
barrier-synchronized loops over shared memory: their time is instruction issue across the SMs,
or one block's step latency when few blocks run, not DRAM bytes
(:func:`roofline._core.topk_select_s`, :func:`roofline._core.topk_bitonic_sort_s`).

Evidence (H200, torch 2.11, ``data/programs/h200/session8.jsonl`` and ``session8b.jsonl``):
MoE routers' ``topk(softmax(logits.float()), k)`` over 16384 tokens x 128 experts ran a
98-104 us ``gatherTopK`` and a 14 us bitonic sort where one memory pass priced ~12 us; the
held-out grid (64-32768 slices of 8-1024 elements, k 2-16, fp32 and bf16, sorted or not)
is priced within 10 % median (p90 24 %) by this entry: ``benchmarks/session8_kernels.py``.

**Multi-block top-k.** Past the heuristic aten runs ``mbtopk`` (``TensorTopK.cu``): blocks
of 256 threads each take ``items_per_thread`` elements of a slice
(``clamp(ceil(slices x n / (SMs x 6 x 256)), 4, 64)``: 6 blocks per SM at the 40 registers
per thread aten budgets), and every 8-bit digit of the element (4 passes for fp32, 2 for
bf16) runs ``computeBlockDigitCounts`` (a shared-memory histogram per block),
``computeDigitCumSum`` (one block per slice sums its blocks' histograms and scans them) and
``computeBlockwiseWithinKCounts`` (picks the digit, counts each block's elements above it);
then ``computeBlockwiseKthCounts``, two CUB scans-by-key and ``gatherTopK`` write the top k:
``9 + 3 x passes`` launches with a fill and two memsets (21 for fp32, 15 for bf16, as the
profiles list them). These kernels are latency-bound: a block waits on a few dependent
global loads (one per item it walks) and block scans, and the SMs hold 6 of them
(:func:`roofline._core.topk_multiblock_s`: waves x (0.29 us + 0.36 us per round trip +
350 cycles per block scan), the two constants from the fp32 rows' digit-count kernel).
H200 (``session8b.jsonl``, 1024-32768 slices of 512-1024, k 2-16; one memory pass priced
them ~20x too fast): 4.3 % median error over the 60 rows; the fp32 half (whose 32768-slice
digit-count kernels gave the constants) 9.7 % (max 17 %: the 1024-4096-slice shapes are
priced 10-16 % slow, about 0.5 us per kernel of their 1-5 waves), the held-out bf16 half 3.2 %
(max 8.6 %).
Few long slices (top-k sampling over a vocabulary: several blocks per slice, the digit
cumsum walking their histograms) follow the same formula, unmeasured.

Sorts of k > 32 (``sortKeyValueInplace``'s warp merge sort up to 128 values, its block radix
sort up to 4096) are priced as the 32-key bitonic sort and its launch, a lower bound (sorting
more keys per slice is no less work): before, they added nothing, so ``sorted=True`` at k = 33
was priced up to 2x faster than at k = 32. The select's passes are data-dependent:
it stops once the k-th value's digit is unique, which spread inputs (the grid above) reach
early; near-uniform router probabilities (untrained routers: the HF Qwen3-MoE traces) run
every pass and took up to 1.8x longer than priced.

**sort.** A one-segment sort of more than 4096 keys (``torch.sort`` / ``argsort`` of a 1-d
tensor, as MoE layers sort their routed expert ids) runs cub's onesweep radix sort over keys
and int64 indices: ``ceil(key bits / 8)`` passes, each reading and writing keys and values
(:func:`roofline._core.radix_sort_bytes`), ``2 x passes + 6`` launches (histogram, onesweep
kernel and memsets per pass, exclusive sum, index fill, copy) and per pass a decoupled
look-back chain (:func:`roofline._core.radix_sort_lookback_s`). H200 (``session8b.jsonl``):
stable argsorts of 16 K-1 M int64 / int32 ids took 37-140 us (22 and 14 launches) where one
memory pass priced 2-10 us.

**Small sorts.** One slice of 129-4096 keys (``should_use_small_sort``) is sorted in place by
``sortKeyValueInplace``'s ``MediumRadixSort`` (``Sort.cu``, ``SortUtils.cuh``): one block of
``sort_size / 32`` threads with 32 items each (``radixSortKVInPlace<.., 32, 32>`` up to 1024
keys, ``<.., 128, 32>`` for 4096) runs cub's ``BlockRadixSort`` over every bit of the key
(4-bit digits: 16 passes for int64). A pass ranks each thread's items one after another
(``BlockRadixRank::RankKeys``: each item's digit counter is a shared-memory load and a store
the next item's load may alias), scans the counters between barriers and exchanges keys and
values through shared memory; :func:`roofline._core.block_radix_sort_s` prices those passes
(2 shared-memory latencies per item, one 350-cycle barrier step, the exchange's wavefronts).
H200 MoE traces (argsort of the routed expert ids, int64): 1024 keys 27.4 us measured, 4096
keys 33.6 us, where one memory pass priced 1.4 us; now 24 and 31 us. Warp sorts (<= 128 keys:
``WarpMergeSort``, unstable bitonic <= 32) and several slices stay one memory pass.
"""

from __future__ import annotations

import dataclasses

from ... import _core
from .call import Call, flag
from .memory_entries import memory_at_least, memory_pricer
from .pricer import Pricer
from .table import Entry, Priced, add

__all__ = ["sort_price", "topk_price"]

#: Longest slice aten sorts in place in one block (``sortKeyValueInplace``); longer ones go to
#: cub's segmented / onesweep radix sort.
_SMALL_SORT_MAX = 4096

#: Longest slice aten sorts in a warp (``WarpMergeSort<128>``, or a bitonic sort up to 32
#: unstable keys) rather than with the block radix sort.
_BLOCK_SORT_MIN = 128

_PLAIN = memory_pricer("pointwise", "memory")

#: Largest k the in-place bitonic sort handles (larger k run other sort kernels).
_BITONIC_MAX_K = 32


def topk_price(call: Call, p: Pricer) -> Priced:
    """One block per slice radix-selects the top k, or aten's multi-block radix select past
    its heuristic (see the module); the in-place bitonic sort when ``sorted`` and
    ``1 < k <= 32``."""
    x = call.tensor(0)
    hw = p.hardware
    sms = getattr(hw, "sms", None)
    clock = getattr(hw, "clock_hz", None)
    if x is None or not x.shape or not sms or not clock:
        return _PLAIN(call, p)
    try:
        k = int(call.scalar("k", 1))
        dim_arg = call.scalar("dim", 2)
        dim = -1 if dim_arg in (None, "") else int(dim_arg)
    except (TypeError, ValueError, OverflowError):  # unreadable (or infinite) k / dim
        return _PLAIN(call, p)
    if not -len(x.shape) <= dim < len(x.shape):
        return _PLAIN(call, p)
    n = int(x.shape[dim])
    if n <= 0 or x.numel == 0 or not 0 <= k <= n:  # torch refuses k outside [0, n]
        return _PLAIN(call, p)
    slices = x.numel // n
    sort = flag(call.scalar("sorted", 4), True) and k > 1 and slices * k > 1
    multi = _core.topk_multiblock(float(slices), float(n))
    written = slices * k * (x.itemsize + 8)  # values and int64 indices
    if multi:
        busy = _core.topk_multiblock_s(float(slices), float(n), float(x.itemsize), float(sms),
                                       float(clock))
        launches = int(_core.topk_multiblock_launches(float(x.itemsize)))
        read = x.nbytes * int(_core.topk_multiblock_passes(float(x.itemsize)) + 1)
        blocks = int(_core.topk_multiblock_blocks_per_slice(float(slices), float(n), float(sms)))
        how = (f"{call.name}: {slices} slices of {n}, multi-block radix select "
               f"({blocks} block(s) per slice, {launches} launches) of the top {k}")
    else:
        radix_bits = 64.0 if x.itemsize == 8 else 32.0
        busy = _core.topk_select_s(float(slices), float(n), radix_bits, float(sms), float(clock))
        launches, read = 1, x.nbytes
        warps = int(_core.topk_block_warps(float(n)))
        how = (f"{call.name}: {slices} slices of {n}, one block of {warps} warp(s) each radix-"
               f"selects the top {k}")
    if sort:  # k > 32: a warp-merge or block radix sort, at least the 32-key network's time
        busy += _core.topk_bitonic_sort_s(float(slices), float(sms), float(clock))
        launches += 1
        how += (" and a bitonic sort orders them" if k <= _BITONIC_MAX_K else
                f" and a warp-merge / radix sort orders the {k} values (priced as at least the "
                "32-key sorting network)")
    e = p.traffic(read, written, 0.0, call.base, kernels=launches)
    e = p.cached(("topk", slices, n, k, sort, x.itemsize), lambda: memory_at_least(e, busy))
    return [("reduction", e)], how


def _block_sort(call: Call, p: Pricer, n: int, key_bytes: int) -> Priced:
    """aten's in-place block radix sort of one slice of 129-4096 keys (see the module)."""
    sms = getattr(p.hardware, "sms", None)
    clock = getattr(p.hardware, "clock_hz", None)
    if not sms or not clock:
        return _PLAIN(call, p)
    busy = _core.block_radix_sort_s(1.0, float(n), float(key_bytes), 8.0, float(sms),
                                    float(clock))
    threads = int(_core.block_radix_sort_threads(float(n)))
    items = int(_core.block_radix_sort_items(float(n)))
    e = p.traffic(n * key_bytes, n * (key_bytes + 8), 0.0, call.base, kernels=1)
    e = p.cached(("block_sort", n, key_bytes), lambda: memory_at_least(e, busy))
    return [("sort", e)], (f"{call.name}: one block of {threads} threads x {items} keys radix-"
                           f"sorts {n} keys with int64 indices in place: "
                           f"{8 * key_bytes // 4} passes of 4 bits")


def sort_price(call: Call, p: Pricer) -> Priced:
    """cub's onesweep radix sort of one segment of > 4096 keys, aten's in-place block radix
    sort of one slice of 129-4096 (see the module); one memory pass otherwise."""
    x = call.tensor(0)
    if x is None or max(x.shape, default=1) != x.numel:
        return _PLAIN(call, p)
    if _BLOCK_SORT_MIN < x.numel <= _SMALL_SORT_MAX:
        return _block_sort(call, p, x.numel, x.itemsize)
    if x.numel <= _SMALL_SORT_MAX:
        return _PLAIN(call, p)
    n = x.numel
    passes = _core.radix_sort_passes(8.0 * x.itemsize)
    moved = _core.radix_sort_bytes(float(n), float(x.itemsize))
    launches = int(_core.radix_sort_launches(passes))
    e = p.traffic(int(moved / 2), int(moved / 2), 0.0, call.base, kernels=launches)
    chain = _core.radix_sort_lookback_s(passes)
    e = p.cached(("sort", n, x.itemsize), lambda: dataclasses.replace(
        e, time_s=float(e.time_s) + chain))
    return [("sort", e)], (f"{call.name}: cub onesweep radix sort of {n} keys with int64 "
                           f"indices: {int(passes)} passes, {launches} launches")


add("aten::topk", entry=lambda n: Entry(n, "memory", "reduction", topk_price))
add("aten::sort", entry=lambda n: Entry(n, "memory", "reduction", sort_price))
