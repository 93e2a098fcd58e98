#pragma once
/// Reading speed only, no formulas: a strict scanner of a Kineto trace's ``traceEvents``
/// array that keeps, event by event, exactly what python/roofline/trace/_collect.py's
/// Collector keeps (the same columns, interned names, recorded inputs as raw JSON text), and
/// gives up ("bail") on anything it cannot reproduce exactly, so that the caller reads the
/// file the old way instead: values of unusual types, escaped keys, duplicate keys, numbers
/// outside int64 / double, lone surrogates, invalid UTF-8, deep nesting, malformed JSON.
#include <array>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace roofline::trace {

/// What one call of TraceScanner::feed ended with.
enum class FeedStatus : int {
  more = 0,  ///< the buffer ends inside an event: call again from the returned position
  done = 1,  ///< the array's closing ``]`` was read (the position is just after it)
  bail = 2,  ///< something the scanner does not reproduce exactly: read the file the old way
};

/// A column of numbers in fixed blocks: no reallocation as it grows (no copy, no doubled
/// capacity), each block handed out and freed in turn when the column is taken.
template <class T>
class BlockColumn {
 public:
  static constexpr std::size_t block = std::size_t{1} << 13;  ///< elements per block
  /// Appends ``v``.
  void push_back(T v) {
    if (size_ == blocks_.size() * block) blocks_.emplace_back(new T[block]);
    blocks_[size_ / block][size_ % block] = v;
    ++size_;
  }
  /// The number of elements.
  std::size_t size() const { return size_; }
  /// The number of blocks.
  std::size_t blocks() const { return blocks_.size(); }
  /// Block ``b``'s elements and how many of them are used.
  const T* data(std::size_t b, std::size_t& used) const {
    used = b + 1 < blocks_.size() ? block : size_ - b * block;
    return blocks_[b].get();
  }
  /// Frees block ``b`` (the column is not used after its blocks are freed, except clear).
  void release(std::size_t b) { blocks_[b].reset(); }
  /// Empties the column.
  void clear() {
    blocks_.clear();
    size_ = 0;
  }

 private:
  std::vector<std::unique_ptr<T[]>> blocks_;
  std::size_t size_ = 0;
};

/// A pid, tid, or flow id: None (absent or null), an int64, or a string (UTF-8).
struct TraceKey {
  std::uint8_t kind = 0;  ///< 0: None, 1: int, 2: string
  std::int64_t i = 0;     ///< the int (kind 1)
  std::string s;          ///< the string (kind 2)
  /// Python's equality of the values (None, int and str are never equal to each other).
  bool operator==(const TraceKey& o) const { return kind == o.kind && i == o.i && s == o.s; }
};

/// Optional raw JSON text of a value (as msgspec.Raw would hold it).
struct RawText {
  bool set = false;  ///< present in the event
  std::string text;  ///< the value's bytes, exactly as in the file
};

/// Indices of the raw collective fields of an ArgEntry.
enum RawField : int {
  f_device = 0, f_bytes, f_coll, f_group, f_dtype, f_in, f_out, f_grid, f_block, n_fields
};

/// One entry of the collector's ``arglist`` (index 0, the empty dict, is implicit).
struct ArgEntry {
  /// 0: {"device": device}; 1: a CPU record; 2: a GPU record; 3: a kernel's
  /// {"device": device, "grid": grid, "block": block} (just {"device": device} when
  /// ``launch`` is false: a grid or block that is not three non-negative ints)
  std::uint8_t kind = 0;
  std::int64_t device = 0;     ///< kind 0's and 3's device
  bool launch = false;         ///< kind 3: the grid and block are well formed
  std::int64_t grid[3] = {};   ///< kind 3: the launch grid
  std::int64_t block[3] = {};  ///< kind 3: the launch block
  bool has_corr = false;       ///< kind 1: the record starts with "correlation"
  std::int64_t corr = 0;       ///< that correlation id
  RawText raw[n_fields];       ///< device, bytes and the collective fields, as raw text
};

/// The CPU events of one thread, as Collector's Columns (see _collect.py).
struct CpuColumns {
  TraceKey pid;                            ///< the thread's pid
  TraceKey tid;                            ///< the thread's tid
  BlockColumn<double> ts;                  ///< start (µs)
  BlockColumn<double> dur;                 ///< duration (µs)
  BlockColumn<std::uint8_t> cat;           ///< code of CPU_CATS
  BlockColumn<std::int64_t> name;          ///< index into names
  BlockColumn<std::int64_t> args;          ///< index into arglist (0: none)
  BlockColumn<std::int64_t> uid;           ///< the event's number in the trace
  BlockColumn<std::int64_t> shape;         ///< index into shapes (0: none)
  BlockColumn<std::int64_t> ext;           ///< External id (Values sentinels)
  BlockColumn<std::int64_t> seq;           ///< Sequence number (Values sentinels)
  BlockColumn<std::int64_t> corr_pos;      ///< column positions of launch calls ...
  BlockColumn<std::int64_t> corr_val;      ///< ... and their correlation ids
};

/// The GPU events, as Collector's GpuColumns (see _collect.py).
struct GpuColumns {
  BlockColumn<double> ts;               ///< start (µs)
  BlockColumn<double> dur;              ///< duration (µs)
  BlockColumn<std::int64_t> name;       ///< index into names
  BlockColumn<std::uint8_t> cat;        ///< code of GPU_CATS
  BlockColumn<std::int64_t> args;       ///< index into arglist
  BlockColumn<std::int64_t> stream;     ///< stream (Values sentinels)
  BlockColumn<std::int64_t> corr;       ///< correlation id (Values sentinels)
  BlockColumn<std::int64_t> ext;        ///< External id (Values sentinels)
};

/// An ac2g flow start: its id, thread and start.
struct Flow {
  TraceKey id;   ///< the flow id
  TraceKey pid;  ///< the pid of the event
  TraceKey tid;  ///< the tid of the event
  double ts = 0; ///< its start (µs)
};

namespace detail {
struct EventCommit;
}  // namespace detail

/// Hash of a std::string for the scanner's maps.
struct TextHash {
  /// FNV-1a over the bytes.
  std::size_t operator()(const std::string& s) const noexcept;
};

/// Streaming strict scanner of ``traceEvents`` (see the file comment).
class TraceScanner {
 public:
  /// Scans events from ``data[pos]`` (the start of an event, or blanks before it) to the end
  /// of the array or of the buffer; returns the status and the position to resume from.
  FeedStatus feed(const char* data, std::size_t size, std::size_t& pos);

  std::string reason;                     ///< why it bailed
  std::vector<CpuColumns> threads;        ///< per thread, in order of first event
  GpuColumns gpu;                         ///< GPU events in trace order
  std::vector<std::string> names;         ///< interned names (UTF-8), by index
  std::vector<ArgEntry> arglist;          ///< arglist entries 1.. (0: the empty dict)
  std::vector<RawText> shapes;            ///< distinct raw inputs, 4 per entry (1-based ids)
  std::vector<Flow> flows;                ///< ac2g flow starts in trace order
  std::vector<double> steps;              ///< ProfilerStep# (start, end) pairs, flattened
  std::int64_t uid = 0;                   ///< CPU events kept so far

 private:
  std::unordered_map<std::string, std::int64_t, TextHash> name_ids_;
  std::unordered_map<std::string, std::int64_t, TextHash> shape_ids_;
  std::unordered_map<std::string, std::size_t, TextHash> thread_ids_;
  std::unordered_map<std::int64_t, std::int64_t> device_ids_;
  std::map<std::array<std::int64_t, 8>, std::int64_t> launch_ids_;  // (device, ok, grid, block)
  std::unordered_set<std::int64_t> launched_;
  std::size_t last_thread_ = 0;
  bool after_event_ = false;  // the last event is read; "," or "]" comes next
  std::string key_;           // scratch: a shape's key

  friend struct detail::EventCommit;
};

}  // namespace roofline::trace
