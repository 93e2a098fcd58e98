// Binding of the trace scanner (reading speed only, no formulas): bytes in, columns out.
#include <pybind11/pybind11.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "roofline/trace_scan.hpp"

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

// The column as an ``array.array`` of ``code`` (a bytearray for bytes), filled block by
// block, each block freed once copied (no second whole copy of the column at any time).
template <class T>
py::object column(BlockColumn<T>& c, const char* code) {
  py::object out = code[0] == 'B' ? py::object(py::reinterpret_steal<py::object>(
                                        PyByteArray_FromStringAndSize(nullptr, 0)))
                                  : py::module_::import("array").attr("array")(code);
  py::object extend = out.attr(code[0] == 'B' ? "extend" : "frombytes");
  for (std::size_t b = 0; b < c.blocks(); ++b) {
    std::size_t used = 0;
    const T* data = c.data(b, used);
    extend(py::memoryview::from_memory(data, static_cast<py::ssize_t>(used * sizeof(T))));
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
    args.append(py::make_tuple(a.kind, a.device,
                               a.has_corr ? py::object(py::int_(a.corr)) : py::none(), raws));
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
}
