// SPDX-License-Identifier: Apache-2.0
// The native module edgetensor._edgetensor. The package (python/edgetensor/__init__.py) re-exports it.
#include "bindings.h"

PYBIND11_MODULE(_edgetensor, m) {
  namespace py = pybind11;
  // Classes, functions and submodules take their __module__ / __name__ from the module's __name__ at
  // binding time: bind them as "edgetensor" (where users and the stubs see them; reprs and pickling
  // name that), then restore the real name.
  py::object real_name = m.attr("__name__");
  m.attr("__name__") = "edgetensor";
  m.doc() = "edgetensor native module: use `import edgetensor`.";
  etpy::bind_errors(m);
  etpy::bind_enums(m);
  etpy::bind_image(m);
  etpy::bind_map(m);
  etpy::bind_tensor(m);
  etpy::bind_frame(m);
  etpy::bind_pool(m);
  auto ipc = m.def_submodule("ipc");
  etpy::bind_ipc(ipc);
  auto channel = m.def_submodule("channel");
  etpy::bind_channel(channel);
  etpy::bind_system(m);
  m.attr("__name__") = real_name;
}
