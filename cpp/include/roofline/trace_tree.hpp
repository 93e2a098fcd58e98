#pragma once
/// Reading speed only, no formulas: the containment forest of one thread's CPU events (sorted
/// by start, the longer first), and per event what the trace linker reads off its chain.
#include <cstddef>
#include <cstdint>

namespace roofline::trace {

/// One thread's CPU events, sorted by start, then the longer first.
struct ThreadEvents {
  const double* ts = nullptr;            ///< start (µs)
  const double* end = nullptr;           ///< start + duration (µs)
  const std::uint8_t* cat = nullptr;     ///< category code
  const std::int64_t* shape = nullptr;   ///< recorded inputs: index into ChainFlags::shaped
  const std::int64_t* name = nullptr;    ///< name: index into ChainFlags::module
  const std::int64_t* args = nullptr;    ///< kept arguments: index into ChainFlags::collective
  std::size_t n = 0;                     ///< number of events
};

/// What the linker reads of an event's inputs, name and arguments (1: yes), by index.
struct ChainFlags {
  const std::uint8_t* shaped = nullptr;      ///< recorded inputs with shapes
  std::size_t n_shapes = 0;                  ///< entries of shaped
  const std::uint8_t* module = nullptr;      ///< a name "nn.Module: X"
  std::size_t n_names = 0;                   ///< entries of module
  const std::uint8_t* collective = nullptr;  ///< arguments holding a collective record
  std::size_t n_args = 0;                    ///< entries of collective
  int op_code = 0;                           ///< the cpu_op category code
  int region_code = 0;                       ///< categories up to this one are regions
};

/// Per event outputs (each n entries; -1: none).
struct ThreadTree {
  std::int64_t* parent = nullptr;   ///< the innermost earlier event whose end is after the start
  std::int64_t* chosen = nullptr;   ///< the innermost cpu_op with shaped inputs on the chain
                                    ///< (the event and its ancestors), else the innermost cpu_op
  std::int64_t* root = nullptr;     ///< the chain's outermost event
  std::int64_t* context = nullptr;  ///< the innermost event on the chain that adds to its
                                    ///< context (a module name, a collective record, or the
                                    ///< outermost region): the chain's context is that event's
};

/// Fills ``out`` (one pass with a stack of open events, then the chain's choices from the
/// parent's, as a parent comes before its children); false when an index is out of range.
bool containment_tree(const ThreadEvents& ev, const ChainFlags& flags, const ThreadTree& out);

}  // namespace roofline::trace
