// lanes.random and lanes.Variable, the stateful parts. Keys are 0-d int64 Arrays (lanes' Key
// bits), so they batch under vmap like any array; split returns them stacked. Every draw takes a
// key or a random.Generator.
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "bindings.h"

namespace lanes::python {
namespace {

using random::Generator;
using random::Key;

Key to_key(nb::handle h) {
  const Tensor bits = to_tensor(h);
  check(bits.dtype() == kInt64 && bits.ndim() == 0,
        "random: a key is a 0-d int64 array from lanes.random.key / split / fold_in, got ",
        dtype_name(bits.dtype()), " of shape ", fmt(bits.shape()));
  return Key{bits};
}

// Calls draw(key) or draw(generator), whichever `source` is, with the GIL released.
template <class Draw>
Tensor from_source(nb::handle source, Draw draw) {
  Generator* gen = nullptr;
  if (nb::try_cast(source, gen, false) && gen) {
    const Generator g = *gen;
    nb::gil_scoped_release release;
    return draw(g);
  }
  const Key k = to_key(source);
  nb::gil_scoped_release release;
  return draw(k);
}

}  // namespace

void bind_random(nb::module_& root) {
  nb::module_ m = root.def_submodule("random", "lanes.random's C++ half");
  nb::class_<Generator>(m, "Generator",
                        "A stateful stream of keys: each draw takes the next key. Inside vmap, "
                        "its draws follow vmap's randomness option ('same' or 'different').")
      .def(nb::init<uint64_t>(), nb::arg("seed"))
      .def(
          "next_key", [](const Generator& g) { return g.next_key().bits; },
          "The next key of the stream.")
      .def_prop_rw(
          "counter", &Generator::counter, [](const Generator& g, uint64_t n) { g.set_counter(n); },
          "Keys taken so far (set it to rewind or skip).");

  m.def(
      "key", [](uint64_t seed) { return random::key(seed).bits; }, nb::arg("seed"));
  m.def("split", [](nb::handle key, int64_t num) {
    const Key k = to_key(key);
    nb::gil_scoped_release release;
    std::vector<Tensor> bits;
    for (const Key& part : random::split(k, num)) bits.push_back(part.bits);
    return bits.empty() ? zeros({0}, kInt64) : stack(bits, 0);
  });
  m.def("fold_in", [](nb::handle key, nb::handle data) {
    const Key k = to_key(key);
    const Tensor d = cast(to_tensor(data), kInt64);
    nb::gil_scoped_release release;
    return random::fold_in(k, d).bits;
  });
  m.def(
      "uniform",
      [](nb::handle source, nb::handle shape, nb::handle dtype, double lo, double hi) {
        const Shape s = to_shape(shape);
        const DType d = dtype_or(dtype, kFloat32);
        return from_source(source, [&](const auto& k) { return random::uniform(k, s, lo, hi, d); });
      },
      nb::arg("key"), nb::arg("shape"), nb::arg("dtype").none(), nb::arg("minval"),
      nb::arg("maxval"));
  m.def(
      "normal",
      [](nb::handle source, nb::handle shape, nb::handle dtype) {
        const Shape s = to_shape(shape);
        const DType d = dtype_or(dtype, kFloat32);
        return from_source(source, [&](const auto& k) { return random::normal(k, s, d); });
      },
      nb::arg("key"), nb::arg("shape"), nb::arg("dtype").none());
  m.def("bernoulli", [](nb::handle source, double p, nb::handle shape) {
    const Shape s = to_shape(shape);
    return from_source(source, [&](const auto& k) { return random::bernoulli(k, p, s); });
  });
  m.def(
      "randint",
      [](nb::handle source, nb::handle shape, int64_t lo, int64_t hi, nb::handle dtype) {
        const Shape s = to_shape(shape);
        const DType d = dtype_or(dtype, kInt32);
        return from_source(source, [&](const auto& k) { return random::randint(k, s, lo, hi, d); });
      },
      nb::arg("key"), nb::arg("shape"), nb::arg("minval"), nb::arg("maxval"),
      nb::arg("dtype").none());
  m.def("categorical", [](nb::handle source, nb::handle logits, int64_t axis) {
    const Tensor l = to_tensor(logits);
    return from_source(source, [&](const auto& k) { return random::categorical(k, l, axis); });
  });
  m.def("permutation", [](nb::handle source, nb::handle x) {
    if (PyLong_Check(x.ptr())) {
      const int64_t n = nb::cast<int64_t>(x);
      return from_source(source, [&](const auto& k) { return random::permutation(k, n); });
    }
    const Tensor t = to_tensor(x);
    return from_source(source, [&](const auto& k) { return random::permutation(k, t); });
  });
  m.def(
      "truncated_normal",
      [](nb::handle source, double lo, double hi, nb::handle shape, nb::handle dtype) {
        const Shape s = to_shape(shape);
        const DType d = dtype_or(dtype, kFloat32);
        return from_source(
            source, [&](const auto& k) { return random::truncated_normal(k, lo, hi, s, d); });
      },
      nb::arg("key"), nb::arg("lower"), nb::arg("upper"), nb::arg("shape"),
      nb::arg("dtype").none());
  m.def("dropout", [](nb::handle x, double rate, nb::handle source, bool training) {
    const Tensor t = to_tensor(x);
    return from_source(source, [&](const auto& k) { return dropout(t, rate, k, training); });
  });
}

}  // namespace lanes::python

namespace lanes::python {

void bind_variables(nb::module_& m) {
  nb::class_<Variable>(m, "Variable",
                       "Mutable state read by transformed functions (lanes::Variable): inside a "
                       "transform, .value is a traced input, so jit sees each new value.")
      .def(nb::new_([](nb::handle value, const std::string& name) {
             return Variable(to_tensor(value), name);
           }),
           nb::arg("value"), nb::arg("name") = "")
      .def_prop_ro("value", &Variable::read, "The current value.")
      .def_prop_ro("name", &Variable::name)
      .def(
          "assign", [](const Variable& v, nb::handle x) { v.assign(to_tensor(x)); },
          "Replaces the value (not while tracing).")
      .def(
          "assign_add",
          [](const Variable& v, nb::handle x) { v.assign_add(to_operand(x, v.read())); },
          "value += delta, atomically (not while tracing).");
}

}  // namespace lanes::python
