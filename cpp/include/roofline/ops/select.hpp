#pragma once
// aten's top-k selection kernels (torch.topk on CUDA): the single-block radix select and the
// in-place bitonic sort of its results. Both are barrier-synchronized loops over shared
// memory whose time is set by instruction issue and barrier latency, not by DRAM bytes.

namespace roofline {

/// Warp instructions one warp issues per barrier-synchronized step of these kernels (a radix
/// pass of the select: load, convert, mask test, 4 ballots and popcounts, lane-0 shared
/// atomics, 2 barriers, the 4-digit decision; a bitonic stage: 2 key/value pairs loaded from
/// shared memory, compared, swapped and stored, 1 barrier), counted from the kernels' loops.
inline constexpr double kSelectStepWarpInstructions = 90.0;

/// Latency of one barrier-synchronized step when its block runs alone on an SM (shared-memory
/// atomics and loads, 2 barriers): ~350 cycles.
inline constexpr double kSelectStepLatencyCycles = 350.0;

/// Warp instructions an SM issues per cycle (4 schedulers).
inline constexpr double kWarpIssuePerSmCycle = 4.0;

/// Whether aten runs the multi-block top-k (`mbtopk`, CUB scan-by-key builds) rather than one
/// block per slice: PyTorch's `should_use_multiblock(num_slices, slice_size)` heuristic.
bool topk_multiblock(double slices, double slice_len) noexcept;

/// Warps per block of the single-block top-k: `min(roundup(slice_len, 32), 1024) / 32`.
double topk_block_warps(double slice_len) noexcept;

/// Busy time of aten's single-block top-k (`sbtopk::gatherTopK`): one block per slice radix-
/// selects the k-th value in `radix_bits / 2` passes of 2 bits (32 for every 8-32-bit type:
/// the radix type is 32 bits wide) plus one pass-equivalent of prefix scans that gathers the
/// top k. `max(issue, latency)` with issue = slices x warps x loops x steps x
/// `kSelectStepWarpInstructions` / (sms x 4 x clock) and latency (one block alone) = steps x
/// (`kSelectStepLatencyCycles` + warps x loops x instructions / 4) / clock; `loops` =
/// ceil(slice_len / block threads). 0 without slices, SMs or clock.
double topk_select_s(double slices, double slice_len, double radix_bits, double sms,
                     double clock_hz) noexcept;

/// Busy time of aten's in-place bitonic sort of k <= 32 selected values per slice
/// (`bitonicSortKVInPlace<2, -1, 16, 16>`: 16 slices per block of 16 x 16 threads, each slice
/// padded to 32 items, 2 per thread, sorted in log2(32)(log2(32)+1)/2 = 15 stages): `max(issue,
/// latency)` as for `topk_select_s`, with ceil(slices / 2) warps of 15 steps and 8 warps per
/// block. 0 without slices, SMs or clock.
double topk_bitonic_sort_s(double slices, double sms, double clock_hz) noexcept;

/// Threads per block of every kernel of aten's multi-block top-k (`mbtopk::BLOCK_THREADS`).
inline constexpr double kMbTopkBlockThreads = 256.0;

/// Blocks of those kernels resident per SM: aten's `get_items_per_thread` budgets 40
/// registers per thread, 65536 / (40 x 256) = 6 blocks (the H100/H200 register file).
inline constexpr double kMbTopkBlocksPerSm = 6.0;

/// One dependent global-memory round trip of a latency-bound block (a load whose value the
/// next instruction needs), as aten's `mbtopk` kernels and full reductions (reduce.hpp) wait
/// on it. Derived from the fp32
/// half of the H200 rows (data/programs/h200/session8b.jsonl, torch 2.11): 32768 slices of
/// 1024 and of 512 ran `computeBlockDigitCounts` in 87.2 and 57.6 us per launch, 41.4 waves of
/// 6 x 132 blocks with 1 + 4 and 1 + 2 round trips: (2.07 - 1.36) us / 2 = 0.36 us.
inline constexpr double kBlockRoundTripS = 0.36e-6;

/// Fixed time of one `mbtopk` block beyond its round trips and block scans (scheduling, index
/// arithmetic, shared-memory set-up, the final stores), from the same two rows:
/// 1.36 us - 3 x 0.36 us = 0.29 us.
inline constexpr double kMbTopkBlockBaseS = 0.29e-6;

/// Radix passes of aten's multi-block top-k: one per 8-bit digit of the element,
/// `itemsize` (`sizeof(T) x 8 / RADIX_BITS`: 4 for fp32, 2 for bf16 / fp16, 8 for 64-bit). 0
/// for no bytes.
double topk_multiblock_passes(double itemsize) noexcept;

/// Items per thread of the multi-block top-k (`mbtopk::get_items_per_thread`):
/// `clamp(ceil(slices x slice_len / (sms x 6 x 256)), 4, 64)`. 4 without SMs.
double topk_multiblock_items_per_thread(double slices, double slice_len, double sms) noexcept;

/// Blocks per slice of the multi-block top-k: `ceil(slice_len / (items_per_thread x 256))`
/// (at least 1).
double topk_multiblock_blocks_per_slice(double slices, double slice_len, double sms) noexcept;

/// Kernels one multi-block top-k launches (CUDA, CUB scan-by-key builds): the `ks_to_find`
/// fill and 2 memsets, per radix pass `computeBlockDigitCounts`, `computeDigitCumSum` and
/// `computeBlockwiseWithinKCounts`, then `computeBlockwiseKthCounts`, 2 inclusive
/// scans-by-key (an init and a scan kernel each) and `gatherTopK`: `9 + 3 x passes` (21 for
/// fp32, 15 for bf16, as the H200 profiles list them). 0 for no bytes.
double topk_multiblock_launches(double itemsize) noexcept;

/// Busy time of the multi-block top-k's latency-bound kernels beyond their launches: per
/// radix pass `computeBlockDigitCounts` (a block: 1 + items round trips), `computeDigitCumSum`
/// (one block per slice: ceil(blocks_per_slice / 4) round trips and a block scan) and
/// `computeBlockwiseWithinKCounts` (3 round trips and a block scan), then `gatherTopK` (1 +
/// items round trips and 2 block scans per item). Each kernel takes
/// `max(1, blocks / (sms x 6))` waves of `kMbTopkBlockBaseS + trips x kBlockRoundTripS +
/// scans x kSelectStepLatencyCycles / clock`; items = the block's `items_per_thread` (the
/// last block's share when a slice fits one block). 0 without slices, SMs or clock.
double topk_multiblock_s(double slices, double slice_len, double itemsize, double sms,
                         double clock_hz) noexcept;

/// Extra time of one cub onesweep radix-sort pass beyond its launch and bytes: the decoupled
/// look-back chain over the pass's tiles (each tile waits for its predecessor's digit
/// prefix). Measured on an H200 with torch 2.11's cub: 5.8 us per pass at 16-64 K keys, where
/// the bytes take < 0.3 us and a launch ~1.4 us (data/programs/h200/session8b.jsonl).
inline constexpr double kOnesweepLookbackS = 4.4e-6;

/// Passes of cub's onesweep radix sort over `key_bits`-bit keys: ceil(key_bits / 8) (8-bit
/// digits). 0 for no bits.
double radix_sort_passes(double key_bits) noexcept;

/// Kernels torch's stable sort of one segment launches through cub's onesweep radix sort:
/// the histogram, one onesweep kernel and two memsets per pass, the exclusive sum, the index
/// fill, a memset pair and a copy: `2 x passes + 6` (22 for int64 keys, 14 for int32, as
/// the H200 profiles list them).
double radix_sort_launches(double passes) noexcept;

/// Look-back chain time of `passes` onesweep passes beyond their launches and bytes:
/// `passes x kOnesweepLookbackS`. 0 for no passes.
double radix_sort_lookback_s(double passes) noexcept;

/// DRAM bytes of that sort over `n` keys of `key_bytes` with int64 values (the indices): the
/// histogram reads the keys once; every pass reads and writes keys and values.
double radix_sort_bytes(double n, double key_bytes) noexcept;

/// Longest slice aten sorts in place with one block per slice (`sortKeyValueInplace`,
/// `should_use_small_sort`); longer slices run cub's segmented / onesweep radix sorts.
inline constexpr double kBlockSortMaxKeys = 4096.0;

/// Bits of one digit of cub's `BlockRadixSort` (its `RADIX_BITS` default, which aten's
/// `radixSortKVInPlace` keeps): one pass per 4 bits of the key.
inline constexpr double kBlockRadixBits = 4.0;

/// Latency of one shared-memory load (or of a store a following load of the same address
/// waits on) on sm_80 / sm_90: ~30 cycles (published microbenchmarks of A100 and H100).
inline constexpr double kSmemLatencyCycles = 30.0;

/// Bytes one shared-memory wavefront moves; an SM serves one wavefront per cycle.
inline constexpr double kSmemWavefrontBytes = 128.0;

/// Threads per block of aten's in-place radix sort of a slice of `slice_len` keys
/// (`MediumRadixSort`, Sort.cu / SortUtils.cuh): the slice's power-of-two ceiling picks
/// `fixed_size_sort<sort_size, items_per_thread>` with 32 items per thread: 4096 -> 128
/// threads, 2048 -> 64, 256-1024 -> 32 (a 1024-key sort); 32 threads of 4 items up to 128.
double block_radix_sort_threads(double slice_len) noexcept;

/// Items per thread of that sort: 32 (4 up to 128 keys).
double block_radix_sort_items(double slice_len) noexcept;

/// Busy time of aten's `radixSortKVInPlace` over `slices` slices of `slice_len` keys of
/// `key_bytes` with `value_bytes` values (the int64 indices): one block per slice runs cub's
/// `BlockRadixSort` over all `8 x key_bytes` bits, `passes = 2 x key_bytes` of 4 bits. A pass
/// ranks the thread's items one after another (each item's digit counter is a shared-memory
/// load then a store the next item's load may alias: 2 x kSmemLatencyCycles per item), scans the
/// counters between barriers (one kSelectStepLatencyCycles step), then exchanges keys and values
/// through shared memory (written and read back: 2 x warps x items x (ceil(32 key_bytes / 128)
/// + ceil(32 value_bytes / 128)) wavefronts at one per cycle). Slices run one block per SM at a
/// time: ceil(slices / sms) x passes x (items x 60 + 350 + exchange) / clock. 0 without
/// slices, keys, SMs or clock.
double block_radix_sort_s(double slices, double slice_len, double key_bytes, double value_bytes,
                          double sms, double clock_hz) noexcept;

/// Items of one tile of cub's single-tile reduce (256 threads x 16 items): a DeviceReduce of
/// at most this many items is one kernel, a longer one two (a grid pass, then one tile).
inline constexpr double kCubReduceTileItems = 4096.0;

/// Kernels torch.nonzero launches on CUDA for a tensor of `numel` elements and `ndim`
/// dimensions (aten's Nonzero.cu): cub's DeviceReduce::Sum counts the nonzeros (1 kernel up to
/// kCubReduceTileItems, else 2), the count is copied to the host (a memcpy and a sync, not a
/// kernel), cub's DeviceSelect::Flagged writes the flat indices (init + sweep: 2) and
/// write_indices unflattens them when ndim > 1 (1). 0 for an empty tensor.
double nonzero_launches(double numel, double ndim) noexcept;

/// Items cub's DeviceRadixSort sorts in one single-tile kernel for 8-byte keys: its
/// SingleTilePolicy of 256 threads x 19 nominal items, register-bound scaled to 19 x 4 / 8 = 9
/// items per thread (2304); more items run the onesweep passes.
inline constexpr double kCubSingleTileItems64 = 256.0 * 9.0;

/// Threads per block and items per thread of aten's `index_elementwise_kernel` (advanced
/// indexing, IndexKernel.cu / Loops.cuh `launch_kernel<128, 4>`).
inline constexpr double kIndexKernelThreads = 128.0;
inline constexpr double kIndexKernelItems = 4.0;

/// Latency chain of aten's `index_elementwise_kernel` (`x[idx]` through TensorIterator) of
/// `grid` blocks of `block` threads writing `elements` outputs with `index_tensors` index
/// tensors: each thread walks its min(4, ceil(elements / (grid x block))) items one after
/// another (the loop stores each item before the next item's loads, which may alias), and an
/// item is `index_tensors + 1` dependent global loads (each index, checked against the size,
/// then the element it addresses) of kBlockRoundTripS. Blocks beyond one wave (kThreadsPerSm /
/// block resident per SM) run in turn: ceil(grid / (sms x resident)) x items x (index_tensors
/// + 1) x kBlockRoundTripS. 0 without blocks, threads, elements or SMs.
double index_gather_chain_s(double grid, double block, double elements, double index_tensors,
                            double sms) noexcept;

/// Threads per block and items per thread of aten's `_scatter_gather_elementwise_kernel`
/// (`scatter_` / `gather` through ScatterGatherKernel.cu: `<128, 8>`).
inline constexpr double kScatterKernelThreads = 128.0;
inline constexpr double kScatterKernelItems = 8.0;

/// Latency chain of aten's `scatter_` of `n` index elements: ceil(n / (128 x 8)) blocks whose
/// threads walk min(8, ceil(n / (blocks x 128))) items one after another, each a dependent
/// load of its index (then the store, which the next item's loads may alias) of
/// kBlockRoundTripS; blocks past one wave (16 per SM) run in turn. 0 without elements or SMs.
double scatter_chain_s(double n, double sms) noexcept;

/// Outputs a launch of `grid` blocks of `block` threads of that kernel covers at most:
/// grid x block x kIndexKernelItems (a trace records the launch, not the output's size).
double index_gather_outputs(double grid, double block) noexcept;

/// Kernels of aten's accumulating index_put (index_put_with_sort_kernel, Indexing.cu) for `n`
/// indices sorted on `passes` 8-bit digits: cub's radix_sort_pairs (one single-tile kernel up
/// to kCubSingleTileItems64 keys, else a histogram, an exclusive sum and per pass a memset and
/// a onesweep kernel, plus two memsets: 2 x passes + 4), then indexing_backward_kernel (1):
/// 2 or 2 x passes + 5 (9 for 2 passes, as the H200 MoE traces list). 0 without indices.
double index_put_launches(double n, double passes) noexcept;

/// Threads aten's indexing_backward_kernel block has: 32 lanes x 4 indices.
inline constexpr double kIndexPutBlockThreads = 128.0;

/// Threads an SM holds (sm_80 / sm_90: 64 warps): 16 resident indexing_backward blocks.
inline constexpr double kThreadsPerSm = 2048.0;

/// Time of aten's indexing_backward_kernel accumulating `n` sorted indices into `unique_rows`
/// rows of `slice` elements (n / unique_rows duplicates each). A warp owns one index and runs
/// only if that index starts a run of equal indices; it then adds the run's duplicates one
/// after the other, each a dependent load -> add -> store round trip of `step_s` per 128-element
/// chunk (grid.y = ceil(slice / 128) chunks, each its own warp). A block of 4 indices holds
/// 4 / duplicates run starts on average and one that holds none exits at once, so each of the
/// SM's resident blocks (kThreadsPerSm / kIndexPutBlockThreads) keeps clamp(4 / duplicates, 1,
/// 4) chains going: time = ceil(chains / (sms x resident x active)) x duplicates x step_s with
/// chains = unique_rows x ceil(slice / 128). 0 for no rows.
double index_put_accumulate_chain_s(double n, double unique_rows, double slice, double sms,
                                    double step_s) noexcept;

}  // namespace roofline
