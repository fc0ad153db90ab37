// The Python module grove_torch._C: the backend's constructor, for grove_torch/__init__.py
// to register with torch.distributed.
#include <pybind11/stl.h>
#include <torch/extension.h>

#include <map>
#include <string>

#include "backend.hpp"

namespace py = pybind11;

PYBIND11_MODULE(_C, m) {
  m.doc() = "grove's torch.distributed backend (see grove_torch)";
  // Base class: torch's own binding of c10d::Backend (torch.distributed is imported first).
  py::module_::import("torch.distributed");
  py::class_<grove_torch::GroveBackend, c10d::Backend,
             c10::intrusive_ptr<grove_torch::GroveBackend>>(m, "GroveBackend")
      .def(py::init([](const c10::intrusive_ptr<c10d::Store>& store, int rank, int size,
                       int64_t timeoutMs, const std::string& groupName,
                       const std::map<std::string, std::string>& settings) {
             // A knob or value grove refuses is the caller's mistake: ValueError, naming it.
             grove::Options options;
             try {
               for (const auto& [name, value] : settings) options.set(name, value);
             } catch (const grove::Error& error) {
               throw py::value_error(error.what());
             }
             return c10::make_intrusive<grove_torch::GroveBackend>(
                 store, rank, size, std::chrono::milliseconds(timeoutMs), groupName, options);
           }),
           py::arg("store"), py::arg("rank"), py::arg("size"), py::arg("timeout_ms"),
           py::arg("group_name"), py::arg("settings") = std::map<std::string, std::string>{},
           py::call_guard<py::gil_scoped_release>(),
           "Joins the group through torch's store (blocks until every rank joined), its "
           "communicator made with `settings` (GROVE_* knob name -> value).");
}
