// lanes._lanes: the extension module under the Python package (python/lanes/). One file per
// area registers its names; the Python modules arrange them as jax's API.
#include "bindings.h"

namespace lanes::python {

void bind_errors(nb::module_& m) {
  // lanes::Error -> lanes.LanesError (a ValueError) with the same message.
  nb::exception<Error> error(m, "LanesError", PyExc_ValueError);
  error.attr("__doc__") =
      "An error lanes reports (lanes::Error in C++): bad shapes, dtypes, axes, arguments. A "
      "ValueError.";
}

}  // namespace lanes::python

NB_MODULE(_lanes, m) {
  using namespace lanes::python;
  m.doc() = "lanes' C++ core; import lanes for the Python API.";
  // lanes' graph caches are C++ statics that outlive the interpreter, and the graphs they hold
  // keep the Python functions of custom rules alive: nanobind would report those as leaks at
  // exit. Reference leaks while running are what matters; tests/test_threads.py checks RSS.
  nb::set_leak_warnings(false);
  bind_errors(m);
  bind_array(m);
  bind_ops(m);
  bind_transforms(m);
  bind_jit(m);
  bind_control_flow(m);
  bind_random(m);
  bind_variables(m);
  bind_custom(m);
  bind_cost(m);
}
