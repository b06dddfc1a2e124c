// The transforms over flat leaf lists: Python (lanes/_api.py) flattens pytrees, passes a function
// of a list of Arrays, and rebuilds the trees; these bind lanes' C++ transforms instantiated for
// `std::vector<Tensor>`. Transforms run with the GIL released; the traced Python function takes
// it back while it runs.
#include <nanobind/stl/function.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <sstream>

#include "bindings.h"

namespace lanes::python {
namespace {

using LeafAxes = std::vector<std::optional<int64_t>>;

// fn(list, list) -> list: the differentiated leaves, then the others held fixed.
struct FlatFn2 {
  std::shared_ptr<nb::object> fn;
  std::pair<Tensor, Leaves> operator()(const Leaves& diff, const Leaves& rest) const {
    nb::gil_scoped_acquire gil;
    Leaves out = to_leaves((*fn)(to_list(diff), to_list(rest)));
    check(!out.empty(), "grad: the function returned no value");
    Tensor loss = out.front();
    out.erase(out.begin());
    return {std::move(loss), std::move(out)};
  }
};

AxisSpec leaf_axes(const LeafAxes& axes) {
  std::vector<AxisSpec> specs;
  for (const auto& a : axes) specs.push_back(a ? AxisSpec(*a) : AxisSpec(none));
  return AxisSpec(std::move(specs));
}

CondStrategy cond_strategy(const std::string& s) {
  if (s == "auto") return CondStrategy::Auto;
  if (s == "select") return CondStrategy::Select;
  if (s == "partition") return CondStrategy::Partition;
  throw Error("vmap: cond must be 'auto', 'select' or 'partition', got '" + s + "'");
}

LoopStrategy loop_strategy(const std::string& s) {
  if (s == "auto") return LoopStrategy::Auto;
  if (s == "mask") return LoopStrategy::Mask;
  if (s == "compact") return LoopStrategy::Compact;
  throw Error("vmap: loop must be 'auto', 'mask' or 'compact', got '" + s + "'");
}

Randomness randomness_mode(const std::string& s) {
  if (s == "error") return Randomness::Error;
  if (s == "same") return Randomness::Same;
  if (s == "different") return Randomness::Different;
  throw Error("vmap: randomness must be 'error', 'same' or 'different', got '" + s + "'");
}

// One vmap of a Python function for one input tree structure: the C++ Vmapped and its cache of
// batched graphs. out_axes is decided by Python once f's output tree is known.
class Vmap {
 public:
  Vmap(nb::object fn, const LeafAxes& in_axes, nb::object out_axes, const VmapOptions& options)
      : vmapped_(FlatFn{hold(std::move(fn))}, AxisSpec(std::vector<AxisSpec>{leaf_axes(in_axes)}),
                 AxisSpec::deferred([out = hold(std::move(out_axes))] {
                   nb::gil_scoped_acquire gil;
                   return leaf_axes(nb::cast<LeafAxes>((*out)()));
                 }),
                 options) {}

  Leaves operator()(const Leaves& leaves) const {
    nb::gil_scoped_release release;
    return vmapped_(leaves);
  }

  std::string explain(const Leaves& leaves) const {
    nb::gil_scoped_release release;
    std::ostringstream os;
    os << lanes::explain(vmapped_, leaves);
    return os.str();
  }

 private:
  Vmapped<FlatFn> vmapped_;
};

VmapOptions vmap_options(std::optional<std::string> axis_name, std::optional<int64_t> axis_size,
                         std::optional<int64_t> chunk_size, std::optional<int64_t> max_memory,
                         const std::string& randomness, const std::string& cond,
                         const std::string& loop) {
  VmapOptions o;
  o.axis_size = axis_size;
  o.axis_name = axis_name.value_or("");
  o.chunk_size = chunk_size;
  o.max_memory_bytes = max_memory;
  o.randomness = randomness_mode(randomness);
  o.cond = cond_strategy(cond);
  o.loop = loop_strategy(loop);
  o.fallback = Fallback::Error;  // Python users get an error, never a silent per-example loop
  return o;
}

// vjp's pullback: cotangent leaves -> the primal leaves' cotangents.
class Pullback {
 public:
  explicit Pullback(std::function<Leaves(const Leaves&)> backward)
      : backward_(std::move(backward)) {}
  Leaves operator()(const Leaves& cts) const {
    nb::gil_scoped_release release;
    return backward_(cts);
  }

 private:
  std::function<Leaves(const Leaves&)> backward_;
};

std::string graph_text(nb::object fn, const Leaves& leaves) {
  nb::gil_scoped_release release;
  std::ostringstream os;
  os << make_graph(FlatFn{hold(std::move(fn))})(leaves);
  return os.str();
}

}  // namespace

void bind_transforms(nb::module_& m) {
  nb::class_<Vmap>(m, "Vmap")
      .def(nb::new_([](nb::object fn, const LeafAxes& in_axes, nb::object out_axes,
                       std::optional<std::string> axis_name, std::optional<int64_t> axis_size,
                       std::optional<int64_t> chunk_size, std::optional<int64_t> max_memory,
                       const std::string& randomness, const std::string& cond,
                       const std::string& loop) {
             return Vmap(std::move(fn), in_axes, std::move(out_axes),
                         vmap_options(std::move(axis_name), axis_size, chunk_size, max_memory,
                                      randomness, cond, loop));
           }),
           nb::arg("fn"), nb::arg("in_axes"), nb::arg("out_axes"), nb::arg("axis_name").none(),
           nb::arg("axis_size").none(), nb::arg("chunk_size").none(),
           nb::arg("max_memory_bytes").none(), nb::arg("randomness"), nb::arg("cond"),
           nb::arg("loop"))
      .def("__call__", &Vmap::operator())
      .def("explain", &Vmap::explain);

  nb::class_<Pullback>(m, "Pullback").def("__call__", &Pullback::operator());

  m.def(
      "value_and_grad",
      [](nb::object fn, const Leaves& diff, const Leaves& rest) {
        const FlatFn2 f{hold(std::move(fn))};
        nb::gil_scoped_release release;
        auto [value, grads] = lanes::value_and_grad(f, has_aux)(diff, rest);
        return std::make_tuple(value.first, value.second, grads);
      },
      "(loss, aux leaves, gradient leaves) of fn(diff, rest) -> [loss, *aux] at diff.");

  m.def("vjp", [](nb::object fn, const Leaves& primals) {
    const FlatFn f{hold(std::move(fn))};
    nb::gil_scoped_release release;
    auto [out, backward] = lanes::vjp(f, primals);
    return std::make_pair(out, Pullback([backward = std::move(backward)](const Leaves& cts) {
                            return std::get<0>(backward(cts));
                          }));
  });

  m.def("jvp", [](nb::object fn, const Leaves& primals, const Leaves& tangents) {
    const FlatFn f{hold(std::move(fn))};
    nb::gil_scoped_release release;
    return lanes::jvp(f, std::make_tuple(primals), std::make_tuple(tangents));
  });

  m.def("make_graph", &graph_text, "The graph fn traces to at these leaves, printed.");
}

}  // namespace lanes::python
