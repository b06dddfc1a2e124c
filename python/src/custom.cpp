// custom_vjp, custom_jvp and custom_vmap over flat leaf lists (lanes/_custom.py keeps the pytree
// structure): lanes' C++ custom rules instantiated for std::vector<Tensor>.
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include "bindings.h"

namespace lanes::python {
namespace {

// fn(leaves) -> leaves, under the GIL.
struct Fn {
  std::shared_ptr<nb::object> fn;
  Leaves operator()(const Leaves& in) const {
    nb::gil_scoped_acquire gil;
    return to_leaves((*fn)(to_list(in)));
  }
};

// fn(...) -> (leaves, leaves), under the GIL.
template <class... Args>
std::pair<Leaves, Leaves> call_pair(const nb::object& fn, const Args&... args) {
  nb::gil_scoped_acquire gil;
  nb::object out = fn(to_list(args)...);
  return {to_leaves(out[0]), to_leaves(out[1])};
}

using VmapRuleFn = std::function<std::pair<Leaves, std::vector<bool>>(
    int64_t, const std::vector<bool>&, const Leaves&)>;

// One custom_vmap of a Python function for one argument structure; its id tells its nodes apart.
class CustomVmapFlat {
 public:
  CustomVmapFlat(nb::object f, nb::object rule, std::string name)
      : call_(custom_vmap(Fn{hold(std::move(f))}, make_rule(hold(std::move(rule))),
                          std::move(name))) {}
  Leaves operator()(const Leaves& args) const {
    nb::gil_scoped_release release;
    return call_(args);
  }

 private:
  static VmapRuleFn make_rule(std::shared_ptr<nb::object> rule) {
    return [rule](int64_t size, const std::vector<bool>& in_batched, const Leaves& args) {
      nb::gil_scoped_acquire gil;
      nb::list batched;
      for (bool b : in_batched) batched.append(b);
      nb::object out = (*rule)(size, batched, to_list(args));
      return std::make_pair(to_leaves(out[0]), nb::cast<std::vector<bool>>(out[1]));
    };
  }
  CustomVmap<Fn, VmapRuleFn> call_;
};

}  // namespace

void bind_custom(nb::module_& m) {
  m.def("custom_vjp_call", [](nb::object f, nb::object fwd, nb::object bwd, const Leaves& args) {
    auto fwd_fn = [fwd = hold(fwd)](const Leaves& a) { return call_pair(*fwd, a); };
    auto bwd_fn = [bwd = hold(bwd)](const Leaves& res, const Leaves& ct) {
      nb::gil_scoped_acquire gil;
      return to_leaves((*bwd)(to_list(res), to_list(ct)));
    };
    const auto call = custom_vjp(Fn{hold(std::move(f))}, fwd_fn, bwd_fn);
    nb::gil_scoped_release release;
    return call(args);
  });
  m.def("custom_jvp_call", [](nb::object f, nb::object rule, const Leaves& args) {
    auto rule_fn = [rule = hold(rule)](const std::tuple<Leaves>& primals,
                                       const std::tuple<Leaves>& tangents) {
      return call_pair(*rule, std::get<0>(primals), std::get<0>(tangents));
    };
    const auto call = custom_jvp(Fn{hold(std::move(f))}, rule_fn);
    nb::gil_scoped_release release;
    return call(args);
  });
  nb::class_<CustomVmapFlat>(m, "CustomVmap")
      .def(nb::init<nb::object, nb::object, std::string>())
      .def("__call__", &CustomVmapFlat::operator());
}

}  // namespace lanes::python
