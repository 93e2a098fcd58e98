#pragma once
// Shared conversion helpers of the binding files: numpy arrays in, estimate columns out.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <array>
#include <initializer_list>
#include <stdexcept>
#include <string>

#include "roofline/cost.hpp"
#include "roofline/estimate.hpp"
#include "roofline/sweep.hpp"

namespace roofline::bindings {

namespace py = pybind11;

/// A contiguous float64 view of a numpy argument (converted if needed).
using InArray = py::array_t<double, py::array::c_style | py::array::forcecast>;

/// Common length of sweep arrays (Python broadcasts them first; a mismatch is a bug).
inline std::size_t equal_length(std::initializer_list<const InArray*> arrays) {
  const auto n = static_cast<std::size_t>(arrays.begin()[0]->size());
  for (const InArray* a : arrays) {
    if (static_cast<std::size_t>(a->size()) != n) {
      throw std::invalid_argument("internal: sweep arrays must have equal length");
    }
  }
  return n;
}

/// Allocates six estimate columns, runs `run` on them without the GIL, returns them as a tuple.
template <class Fn>
py::tuple estimate_columns(std::size_t len, Fn&& run) {
  std::array<py::array_t<double>, 6> cols;
  for (auto& c : cols) c = py::array_t<double>(static_cast<py::ssize_t>(len));
  EstimateColumns o{cols[0].mutable_data(), cols[1].mutable_data(), cols[2].mutable_data(),
                    cols[3].mutable_data(), cols[4].mutable_data(), cols[5].mutable_data()};
  {
    py::gil_scoped_release release;
    run(o);
  }
  return py::make_tuple(cols[0], cols[1], cols[2], cols[3], cols[4], cols[5]);
}

/// One kernel as a dict row: name, FLOPs, bytes and the terms of its estimate.
inline py::dict kernel_row(const char* name, const Cost& cost, const Estimate& e) {
  py::dict row;
  row["kernel"] = std::string(name);
  row["flops"] = cost.flops;
  row["bytes_read"] = cost.bytes_read;
  row["bytes_written"] = cost.bytes_written;
  row["time_s"] = e.time_s;
  row["compute_s"] = e.compute_s;
  row["memory_s"] = e.memory_s;
  row["overhead_s"] = e.overhead_s;
  return row;
}

}  // namespace roofline::bindings
