// Binding of the launch (host overhead) model: conversion and forwarding only, no formulas.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <cstddef>
#include <string>
#include <utility>

#include "roofline/ops/host.hpp"

namespace py = pybind11;
using namespace roofline;

namespace {

py::tuple wall_time_py(const py::array_t<double, py::array::c_style | py::array::forcecast>& k,
                       LaunchMode mode, std::size_t regions, const HostTerms& terms) {
  const WallTime w = wall_time(k.data(), static_cast<std::size_t>(k.size()), mode, regions, terms);
  return py::make_tuple(w.wall_s, w.gpu_s, w.host_s, w.launch_bound);
}

py::tuple repeated_wall_time_py(
    const py::array_t<double, py::array::c_style | py::array::forcecast>& k, LaunchMode mode,
    std::size_t regions, const HostTerms& terms) {
  const WallTime w =
      repeated_wall_time(k.data(), static_cast<std::size_t>(k.size()), mode, regions, terms);
  return py::make_tuple(w.wall_s, w.gpu_s, w.host_s, w.launch_bound);
}

py::tuple looped_wall_time_py(
    const py::array_t<double, py::array::c_style | py::array::forcecast>& k, LaunchMode mode,
    std::size_t regions, double head_s, const HostTerms& terms) {
  const WallTime w = looped_wall_time(k.data(), static_cast<std::size_t>(k.size()), mode,
                                      regions, head_s, terms);
  return py::make_tuple(w.wall_s, w.gpu_s, w.host_s, w.launch_bound);
}

py::tuple linear_call_wall_time_py(
    const py::array_t<double, py::array::c_style | py::array::forcecast>& k, LaunchMode mode,
    bool training, bool torchao, double head_s, const HostTerms& terms) {
  const WallTime w = linear_call_wall_time(k.data(), static_cast<std::size_t>(k.size()),
                                           LinearCall{mode, training, torchao}, head_s, terms);
  return py::make_tuple(w.wall_s, w.gpu_s, w.host_s, w.launch_bound);
}

py::tuple program_wall_time_py(
    const py::array_t<double, py::array::c_style | py::array::forcecast>& k,
    const py::array_t<double, py::array::c_style | py::array::forcecast>& counts,
    const py::array_t<double, py::array::c_style | py::array::forcecast>& tail,
    const HostTerms& terms) {
  const auto n = static_cast<std::size_t>(k.size());
  if (static_cast<std::size_t>(counts.size()) != n * host_op_classes ||
      static_cast<std::size_t>(tail.size()) != host_op_classes) {
    throw py::value_error("program_wall_time: counts must be n x " +
                          std::to_string(host_op_classes) + " and tail " +
                          std::to_string(host_op_classes) + " values");
  }
  const WallTime w = program_wall_time(k.data(), counts.data(), n, tail.data(), terms);
  return py::make_tuple(w.wall_s, w.gpu_s, w.host_s, w.launch_bound);
}

py::tuple calls_wall_time_py(
    const py::array_t<double, py::array::c_style | py::array::forcecast>& k,
    const py::array_t<double, py::array::c_style | py::array::forcecast>& counts,
    const HostTerms& terms) {
  const auto n = static_cast<std::size_t>(k.size());
  if (static_cast<std::size_t>(counts.size()) != n * host_op_classes) {
    throw py::value_error("calls_wall_time: counts must be n x " +
                          std::to_string(host_op_classes) + " values");
  }
  const WallTime w = calls_wall_time(k.data(), counts.data(), n, terms);
  return py::make_tuple(w.wall_s, w.gpu_s, w.host_s, w.launch_bound);
}

double linear_region_entry_s_py(LaunchMode mode, bool training, bool torchao,
                                const HostTerms& terms) {
  return linear_region_entry_s(LinearCall{mode, training, torchao}, terms);
}

}  // namespace

/// Registers LaunchMode, wall_time, repeated_wall_time, looped_wall_time,
/// linear_call_wall_time, synced_replay_gap_s and linear_region_entry_s on the module.
void bind_host(py::module_& mod) {
  py::enum_<LaunchMode>(mod, "LaunchMode")
      .value("eager", LaunchMode::eager)
      .value("compiled", LaunchMode::compiled)
      .value("graph", LaunchMode::graph);
  mod.def("wall_time", &wall_time_py, py::arg("kernel_s"), py::arg("mode"), py::arg("regions"),
          py::arg("terms"),
          "Wall time of kernels issued in order on one stream: (wall_s, gpu_s, host_s, "
          "launch_bound).");
  mod.def("repeated_wall_time", &repeated_wall_time_py, py::arg("kernel_s"), py::arg("mode"),
          py::arg("regions"), py::arg("terms"),
          "Per-call wall time of a call repeated back to back (host runs ahead): (wall_s, "
          "gpu_s, host_s, launch_bound).");
  mod.def("looped_wall_time", &looped_wall_time_py, py::arg("kernel_s"), py::arg("mode"),
          py::arg("regions"), py::arg("head_s"), py::arg("terms"),
          "Per-call time of a compiled training step in a loop that runs a head_s kernel (an L2 "
          "flush) before each call: (wall_s, gpu_s, host_s, launch_bound).");
  mod.def("linear_call_wall_time", &linear_call_wall_time_py, py::arg("kernel_s"),
          py::arg("mode"), py::arg("training"), py::arg("torchao"), py::arg("head_s"),
          py::arg("terms"),
          "Per-call time of a linear layer's kernels repeated in a loop (head_s: a kernel run "
          "before each call outside the timed span): (wall_s, gpu_s, host_s, launch_bound).");
  mod.def("program_wall_time", &program_wall_time_py, py::arg("kernel_s"), py::arg("counts"),
          py::arg("tail"), py::arg("terms"),
          "Per-step wall time of an eager program in a loop, from the host calls (by HostOp "
          "class) before each kernel: (wall_s, gpu_s, host_s, launch_bound).");
  mod.def("calls_wall_time", &calls_wall_time_py, py::arg("kernel_s"), py::arg("counts"),
          py::arg("terms"),
          "Wall time of one kernel sequence launched from an idle stream, from the host calls "
          "(by HostOp class) before each launch: (wall_s, gpu_s, host_s, launch_bound).");
  mod.def(
      "synced_replay_gap_s",
      [](double queued_ops, double syncs, double calls, const HostTerms& terms) {
        for (const auto& [name, v] : {std::pair<const char*, double>{"queued_ops", queued_ops},
                                      {"syncs", syncs},
                                      {"calls", calls}}) {
          if (!(v >= 0.0) || v > 1e9) {
            throw py::value_error(std::string("synced_replay_gap_s: ") + name +
                                  " must be a finite count >= 0, got " + std::to_string(v));
          }
        }
        return synced_replay_gap_s(queued_ops, syncs, calls, terms);
      },
      py::arg("queued_ops"), py::arg("syncs"), py::arg("calls"), py::arg("terms"),
      "Wall time from one CUDA-graph step's end to the next one's start when the host reads "
      "device memory before the replay (s).");
  mod.def("host_op_classes", [] { return host_op_classes; },
          "Number of HostOp classes (the row width of program_wall_time's counts).");
  mod.def("linear_region_entry_s", &linear_region_entry_s_py, py::arg("mode"),
          py::arg("training"), py::arg("torchao"), py::arg("terms"),
          "Host time to enter one region (forward or backward) of a linear call.");
}
