// Binding of the trace scanner (reading speed only, no formulas): bytes in, columns out.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "roofline/trace_scan.hpp"
#include "roofline/trace_tree.hpp"

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace py = pybind11;
using namespace roofline::trace;

namespace {

template <class T>
py::bytes column(std::vector<T>& v) {
  py::bytes out(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T));
  std::vector<T>().swap(v);
  return out;
}

// The column as an ``array.array`` of ``code`` (a bytearray for bytes), made at its full size
// and filled block by block, each block freed once copied (no second whole copy at any time).
template <class T>
py::object column(BlockColumn<T>& c, const char* code) {
  const std::size_t n = c.size();
  py::object out;
  if (code[0] == 'B') {
    out = py::reinterpret_steal<py::object>(
        PyByteArray_FromStringAndSize(nullptr, static_cast<Py_ssize_t>(n)));
    if (!out) throw py::error_already_set();
  } else {
    py::object one = py::module_::import("array").attr("array")(code, py::make_tuple(0));
    out = one.attr("__mul__")(n);
  }
  py::buffer_info info = py::reinterpret_borrow<py::buffer>(out).request(true);
  if (static_cast<std::size_t>(info.size * info.itemsize) != n * sizeof(T))
    throw std::runtime_error("TraceScanner.take: a column of an unexpected size");
  auto* dst = static_cast<char*>(info.ptr);
  for (std::size_t b = 0; b < c.blocks(); ++b) {
    std::size_t used = 0;
    const T* data = c.data(b, used);
    std::memcpy(dst, data, used * sizeof(T));
    dst += used * sizeof(T);
    c.release(b);
  }
  c.clear();
  return out;
}

py::object key(const TraceKey& k) {
  if (k.kind == 1) return py::int_(k.i);
  if (k.kind == 2) return py::str(k.s);
  return py::none();
}

py::object raw(const RawText& r) {
  if (!r.set) return py::none();
  return py::bytes(r.text);
}

py::tuple feed(TraceScanner& s, const py::bytes& buf, std::size_t pos) {
  char* data = nullptr;
  Py_ssize_t size = 0;
  if (PyBytes_AsStringAndSize(buf.ptr(), &data, &size) != 0) throw py::error_already_set();
  FeedStatus st;
  {
    py::gil_scoped_release release;
    st = s.feed(data, static_cast<std::size_t>(size), pos);
  }
  return py::make_tuple(static_cast<int>(st), pos);
}

py::tuple take(TraceScanner& s) {
  py::list threads;
  for (auto& t : s.threads) {
    threads.append(py::make_tuple(
        key(t.pid), key(t.tid), column(t.ts, "d"), column(t.dur, "d"), column(t.cat, "B"),
        column(t.name, "q"), column(t.args, "q"), column(t.uid, "q"), column(t.shape, "q"),
        column(t.ext, "q"), column(t.seq, "q"), column(t.corr_pos, "q"),
        column(t.corr_val, "q")));
  }
  s.threads.clear();
  GpuColumns& g = s.gpu;
  py::tuple gpu = py::make_tuple(column(g.ts, "d"), column(g.dur, "d"), column(g.name, "q"),
                                 column(g.cat, "B"), column(g.args, "q"),
                                 column(g.stream, "q"), column(g.corr, "q"),
                                 column(g.ext, "q"));
  py::list names;
  for (const auto& n : s.names) names.append(py::str(n));
  py::list args;
  for (const auto& a : s.arglist) {
    py::tuple raws(static_cast<std::size_t>(n_fields));
    for (int f = 0; f < n_fields; ++f) raws[static_cast<std::size_t>(f)] = raw(a.raw[f]);
    py::object dims = py::none();
    if (a.kind == 3 && a.launch) {
      dims = py::make_tuple(py::make_tuple(a.grid[0], a.grid[1], a.grid[2]),
                            py::make_tuple(a.block[0], a.block[1], a.block[2]));
    }
    args.append(py::make_tuple(a.kind, a.device,
                               a.has_corr ? py::object(py::int_(a.corr)) : py::none(), raws,
                               dims));
  }
  py::list shapes;
  for (std::size_t i = 0; i + 3 < s.shapes.size(); i += 4) {
    shapes.append(py::make_tuple(raw(s.shapes[i]), raw(s.shapes[i + 1]), raw(s.shapes[i + 2]),
                                 raw(s.shapes[i + 3])));
  }
  py::list flows;
  for (const auto& f : s.flows) flows.append(py::make_tuple(key(f.id), key(f.pid), key(f.tid),
                                                              f.ts));
  py::tuple out = py::make_tuple(threads, gpu, names, args, shapes, flows, column(s.steps),
                                 s.uid);
  s = TraceScanner();  // (its maps and strings freed too)
#if defined(__GLIBC__)
  malloc_trim(0);  // the columns' freed blocks: back to the system, not kept as free heap
#endif
  return out;
}

template <class T>
using Col = py::array_t<T, py::array::c_style | py::array::forcecast>;

// A writable buffer of n int64 (an array.array('q') of the caller's), by name for errors.
std::int64_t* out_column(const py::buffer& b, std::size_t n, const char* name) {
  py::buffer_info info = b.request(true);
  const bool int64 = info.itemsize == sizeof(std::int64_t) &&
                     (info.format == "q" || info.format == "l");
  if (!int64 || info.ndim != 1 ||
      static_cast<std::size_t>(info.size) != n || info.strides[0] != sizeof(std::int64_t))
    throw py::value_error(std::string("containment_tree: ") + name +
                          " must be a writable buffer of " + std::to_string(n) +
                          " int64, got " + std::to_string(info.size) + " items of " +
                          std::to_string(info.itemsize) + " bytes");
  return static_cast<std::int64_t*>(info.ptr);
}

void tree(const Col<double>& ts, const Col<double>& end, const Col<std::uint8_t>& cat,
          const Col<std::int64_t>& shape, const Col<std::int64_t>& name,
          const Col<std::int64_t>& args, const Col<std::uint8_t>& shaped,
          const Col<std::uint8_t>& module, const Col<std::uint8_t>& collective, int op_code,
          int region_code, const py::buffer& parent, const py::buffer& chosen,
          const py::buffer& root, const py::buffer& context) {
  const auto n = static_cast<std::size_t>(ts.size());
  const std::pair<const char*, std::size_t> sizes[] = {
      {"end", static_cast<std::size_t>(end.size())},
      {"cat", static_cast<std::size_t>(cat.size())},
      {"shape", static_cast<std::size_t>(shape.size())},
      {"name", static_cast<std::size_t>(name.size())},
      {"args", static_cast<std::size_t>(args.size())}};
  for (const auto& [what, size] : sizes) {
    if (size != n)
      throw py::value_error("containment_tree: " + std::string(what) + " has " +
                            std::to_string(size) + " entries, ts has " + std::to_string(n));
  }
  const ThreadEvents ev{ts.data(), end.data(), cat.data(), shape.data(), name.data(),
                        args.data(), n};
  const ChainFlags flags{shaped.data(), static_cast<std::size_t>(shaped.size()),
                         module.data(), static_cast<std::size_t>(module.size()),
                         collective.data(), static_cast<std::size_t>(collective.size()),
                         op_code, region_code};
  const ThreadTree out{out_column(parent, n, "parent"), out_column(chosen, n, "chosen"),
                       out_column(root, n, "root"), out_column(context, n, "context")};
  if (!containment_tree(ev, flags, out))
    throw py::value_error("containment_tree: a shape, name or args index outside shaped (" +
                          std::to_string(shaped.size()) + "), module (" +
                          std::to_string(module.size()) + ") or collective (" +
                          std::to_string(collective.size()) + ")");
}

}  // namespace

/// Registers TraceScanner (cpp/bindings/bind_trace.cpp).
void bind_trace(py::module_& m) {
  py::class_<TraceScanner>(m, "TraceScanner",
                           "Strict scanner of a Kineto trace's traceEvents array (reading "
                           "speed only): feeds of bytes in, the trace collector's columns out.")
      .def(py::init<>())
      .def("feed", &feed, py::arg("buf"), py::arg("pos"),
           "Scan events of ``buf`` from ``pos``: (status, position to resume from); status 0: "
           "the buffer ends inside an event, 1: the array ended, 2: give up (see reason).")
      .def_readonly("reason", &TraceScanner::reason, "Why the scanner gave up.")
      .def("take", &take,
           "The collected columns (threads, gpu, names, arglist, shapes, flows, steps, uid): "
           "array.array('d'/'q') and bytearray columns, bytes and Python objects; empties "
           "the scanner and hands its freed memory back to the system (glibc).");
  m.def("containment_tree", &tree, py::arg("ts"), py::arg("end"), py::arg("cat"),
        py::arg("shape"), py::arg("name"), py::arg("args"), py::arg("shaped"),
        py::arg("module"), py::arg("collective"), py::arg("op_code"), py::arg("region_code"),
        py::arg("parent"), py::arg("chosen"), py::arg("root"), py::arg("context"),
        "One thread's CPU events (sorted by start, the longer first) as a containment forest, "
        "written per event into the int64 buffers parent (the innermost enclosing event), "
        "chosen (the innermost cpu_op, cat == op_code, on the chain with shaped inputs, "
        "shaped[shape] != 0, else the innermost cpu_op), root (the chain's outermost event) "
        "and context (the innermost event on the chain with a module name, module[name], a "
        "collective record, collective[args], or that is the outermost region, cat <= "
        "region_code); -1: none.");
}
