// lax's control flow over flat leaf lists (lanes/lax.py flattens the pytrees and checks that
// branches and bodies keep their structure): lanes' cond, switch_case, while_loop, scan and map.
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/vector.h>

#include "bindings.h"

namespace lanes::python {
namespace {

// A Python function of leaf lists, called from C++ under the GIL. Held only while the op traces
// it (the call below), so a plain reference is enough.
struct Call {
  nb::handle fn;
  Leaves operator()(const Leaves& in) const {
    nb::gil_scoped_acquire gil;
    return to_leaves(fn(to_list(in)));
  }
};

}  // namespace

void bind_control_flow(nb::module_& m) {
  m.def("cond", [](nb::handle pred, nb::handle true_fn, nb::handle false_fn, const Leaves& ops) {
    const Tensor p = to_tensor(pred);
    nb::gil_scoped_release release;
    return cond(p, Call{true_fn}, Call{false_fn}, ops);
  });
  m.def("switch", [](nb::handle index, nb::handle branches, const Leaves& ops) {
    const Tensor i = to_tensor(index);
    std::vector<Call> fns;
    for (nb::handle b : branches) fns.push_back(Call{b});
    nb::gil_scoped_release release;
    return switch_case(i, fns, ops);
  });
  m.def("while_loop", [](nb::handle cond_fn, nb::handle body_fn, const Leaves& init) {
    auto predicate = [cond_fn](const Leaves& carry) {
      nb::gil_scoped_acquire gil;
      return to_tensor(cond_fn(to_list(carry)));
    };
    nb::gil_scoped_release release;
    return while_loop(predicate, Call{body_fn}, init);
  });
  m.def("scan", [](nb::handle f, const Leaves& init, const Leaves& xs,
                   std::optional<int64_t> length, bool reverse) {
    auto step = [f](const Leaves& carry, const Leaves& x) {
      nb::gil_scoped_acquire gil;
      nb::object out = f(to_list(carry), to_list(x));
      return std::pair<Leaves, Leaves>(to_leaves(out[0]), to_leaves(out[1]));
    };
    nb::gil_scoped_release release;
    return scan(step, init, xs, ScanOptions{length, reverse});
  });
}

}  // namespace lanes::python
