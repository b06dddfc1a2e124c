// The ops of lanes.numpy, lanes.nn and lanes.lax over the C++ API: each converts its Python
// arguments (Arrays, numpy arrays, scalars), then runs the op with the GIL released.
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "bindings.h"

namespace lanes::python {
namespace {

using Unary = Tensor (*)(const Tensor&);
using Binary = Tensor (*)(const Tensor&, const Tensor&);

// Both operands of a binary op: a Python scalar takes the other operand's dtype class weakly.
std::pair<Tensor, Tensor> operands(nb::handle a, nb::handle b) {
  if (is_python_scalar(a) && !is_python_scalar(b)) {
    Tensor tb = to_tensor(b);
    return {to_operand(a, tb), tb};
  }
  Tensor ta = to_tensor(a);
  return {ta, to_operand(b, ta)};
}

std::vector<Tensor> tensors(nb::handle seq) {
  std::vector<Tensor> out;
  for (nb::handle h : seq) out.push_back(to_tensor(h));
  return out;
}

Axes axes_of(const std::optional<std::vector<int64_t>>& axes) {
  return axes ? Axes(*axes) : Axes{};
}

void bind_elementwise(nb::module_& m) {
  const std::tuple<const char*, Unary, const char*> unaries[] = {
      {"negative", &negative, "-x, elementwise."},
      {"exp", &exp, "e to the x, elementwise."},
      {"log", &log, "The natural logarithm, elementwise."},
      {"log1p", &log1p, "log(1 + x), accurate near 0."},
      {"expm1", &expm1, "exp(x) - 1, accurate near 0."},
      {"sqrt", &sqrt, "The square root, elementwise."},
      {"rsqrt", &rsqrt, "1 / sqrt(x), elementwise."},
      {"tanh", &tanh, "The hyperbolic tangent, elementwise."},
      {"sigmoid", &sigmoid, "1 / (1 + exp(-x)), elementwise."},
      {"sin", &sin, "The sine, elementwise."},
      {"cos", &cos, "The cosine, elementwise."},
      {"erf", &erf, "The error function, elementwise."},
      {"abs", &lanes::abs, "The absolute value, elementwise."},
      {"sign", &sign, "-1, 0 or 1 by the sign of x, elementwise."},
      {"floor", &floor, "Rounds down, elementwise."},
      {"ceil", &ceil, "Rounds up, elementwise."},
      {"round", &lanes::round, "Rounds half to even, elementwise."},
      {"square", &square, "x * x, elementwise."},
      {"relu", &relu, "max(x, 0), elementwise."},
      {"logical_not", &logical_not, "not x, elementwise (bool)."},
      {"bitwise_not", &bitwise_not,
       "~x, elementwise: every bit flipped for integers, not x for bools."},
      {"stop_gradient", &stop_gradient, "x, with a zero derivative (lax.stop_gradient)."},
  };
  for (const auto& [name, op, doc] : unaries)
    m.def(
        name,
        [op = op](nb::handle x) {
          const Tensor t = to_tensor(x);
          nb::gil_scoped_release release;
          return op(t);
        },
        nb::arg("x"), doc);
  const std::tuple<const char*, Binary, const char*> binaries[] = {
      {"add", static_cast<Binary>(&add), "a + b, broadcast."},
      {"subtract", static_cast<Binary>(&subtract), "a - b, broadcast."},
      {"multiply", static_cast<Binary>(&multiply), "a * b, broadcast."},
      {"divide", static_cast<Binary>(&divide), "a / b, broadcast."},
      {"power", static_cast<Binary>(&lanes::pow), "a ** b, broadcast."},
      {"maximum", static_cast<Binary>(&maximum), "The larger of a and b, elementwise (NaN wins)."},
      {"minimum", static_cast<Binary>(&minimum), "The smaller of a and b, elementwise (NaN wins)."},
      {"arctan2", static_cast<Binary>(&atan2), "The angle of the point (b, a), elementwise."},
      {"equal", static_cast<Binary>(&equal), "a == b, elementwise."},
      {"not_equal", static_cast<Binary>(&not_equal), "a != b, elementwise."},
      {"less", static_cast<Binary>(&less), "a < b, elementwise."},
      {"less_equal", static_cast<Binary>(&less_equal), "a <= b, elementwise."},
      {"greater", static_cast<Binary>(&greater), "a > b, elementwise."},
      {"greater_equal", static_cast<Binary>(&greater_equal), "a >= b, elementwise."},
      {"logical_and", static_cast<Binary>(&logical_and), "a and b, elementwise (bool)."},
      {"logical_or", static_cast<Binary>(&logical_or), "a or b, elementwise (bool)."},
      {"logical_xor", static_cast<Binary>(&logical_xor), "a xor b, elementwise (bool)."},
      {"bitwise_and", static_cast<Binary>(&bitwise_and),
       "a & b, elementwise: bitwise for integers, logical for bools."},
      {"bitwise_or", static_cast<Binary>(&bitwise_or),
       "a | b, elementwise: bitwise for integers, logical for bools."},
      {"bitwise_xor", static_cast<Binary>(&bitwise_xor),
       "a ^ b, elementwise: bitwise for integers, logical for bools."},
      {"left_shift", static_cast<Binary>(&left_shift),
       "a << b, elementwise on integers (0 for a count outside [0, bits))."},
      {"right_shift", static_cast<Binary>(&right_shift),
       "a >> b, elementwise on integers, arithmetic for signed ones."},
      {"matmul", static_cast<Binary>(&matmul),
       "The matrix product a @ b (numpy.matmul: batch dims broadcast, 1-d operands promoted)."},
      {"dot", static_cast<Binary>(&dot),
       "numpy.dot: the sum product over a's last and b's second-to-last axis."},
      {"outer", static_cast<Binary>(&outer), "The outer product of two vectors."},
  };
  for (const auto& [name, op, doc] : binaries)
    m.def(
        name,
        [op = op](nb::handle a, nb::handle b) {
          const auto [ta, tb] = operands(a, b);
          nb::gil_scoped_release release;
          return op(ta, tb);
        },
        nb::arg("a"), nb::arg("b"), doc);
  m.def("where", [](nb::handle c, nb::handle a, nb::handle b) {
    const Tensor tc = to_tensor(c);
    const auto [ta, tb] = operands(a, b);
    nb::gil_scoped_release release;
    return where(tc, ta, tb);
  });
  m.def("clip", [](nb::handle x, nb::handle lo, nb::handle hi) {
    const Tensor t = to_tensor(x), l = to_operand(lo, t), h = to_operand(hi, t);
    nb::gil_scoped_release release;
    return clip(t, l, h);
  });
  m.def("cast", [](nb::handle x, nb::handle dtype) {
    const Tensor t = to_tensor(x);
    const DType d = to_dtype(dtype);
    nb::gil_scoped_release release;
    return cast(t, d);
  });
}

void bind_reductions(nb::module_& m) {
  using Reduce = Tensor (*)(const Tensor&, const Axes&, bool);
  const std::pair<const char*, Reduce> reductions[] = {{"sum", &sum},   {"mean", &mean},
                                                       {"prod", &prod}, {"max", &max},
                                                       {"min", &min},   {"logsumexp", &logsumexp}};
  for (const auto& [name, op] : reductions)
    m.def(
        name,
        [op = op](nb::handle x, nb::handle axis, bool keepdims) {
          const Tensor t = to_tensor(x);
          const auto axes = to_axes(axis);
          nb::gil_scoped_release release;
          return op(t, axes_of(axes), keepdims);
        },
        nb::arg("x"), nb::arg("axis").none(), nb::arg("keepdims") = false);
  using ArgReduce = Tensor (*)(const Tensor&, int64_t, bool);
  const std::pair<const char*, ArgReduce> arg_reductions[] = {{"argmax", &argmax},
                                                              {"argmin", &argmin}};
  for (const auto& [name, op] : arg_reductions)
    m.def(name, [op = op](nb::handle x, int64_t axis, bool keepdims) {
      const Tensor t = to_tensor(x);
      nb::gil_scoped_release release;
      return op(t, axis, keepdims);
    });
  using Scan = Tensor (*)(const Tensor&, int64_t, bool);
  const std::pair<const char*, Scan> scans[] = {{"cumsum", &cumsum},
                                                {"cumprod", &cumprod},
                                                {"cummax", &cummax},
                                                {"cummin", &cummin},
                                                {"logcumsumexp", &logcumsumexp}};
  for (const auto& [name, op] : scans)
    m.def(name, [op = op](nb::handle x, int64_t axis, bool reverse) {
      const Tensor t = to_tensor(x);
      nb::gil_scoped_release release;
      return op(t, axis, reverse);
    });
  m.def("softmax", [](nb::handle x, int64_t axis) {
    const Tensor t = to_tensor(x);
    nb::gil_scoped_release release;
    return softmax(t, axis);
  });
  m.def("log_softmax", [](nb::handle x, int64_t axis) {
    const Tensor t = to_tensor(x);
    nb::gil_scoped_release release;
    return log_softmax(t, axis);
  });
  m.def("softmax_cross_entropy", [](nb::handle logits, nb::handle labels, int64_t axis) {
    const Tensor a = to_tensor(logits), b = to_tensor(labels);
    nb::gil_scoped_release release;
    return softmax_cross_entropy(a, b, axis);
  });
  m.def("l2_loss", [](nb::handle x) {
    const Tensor t = to_tensor(x);
    nb::gil_scoped_release release;
    return l2_loss(t);
  });
  m.def("sort", [](nb::handle x, int64_t axis) {
    const Tensor t = to_tensor(x);
    nb::gil_scoped_release release;
    return sort(t, axis);
  });
  m.def("argsort", [](nb::handle x, int64_t axis) {
    const Tensor t = to_tensor(x);
    nb::gil_scoped_release release;
    return argsort(t, axis);
  });
  m.def("top_k", [](nb::handle x, int64_t k) {
    const Tensor t = to_tensor(x);
    nb::gil_scoped_release release;
    return top_k(t, k);
  });
  m.def("searchsorted", [](nb::handle sorted, nb::handle values, const std::string& side) {
    const Tensor s = to_tensor(sorted), v = to_tensor(values);
    check(side == "left" || side == "right", "searchsorted: side must be 'left' or 'right', got '",
          side, "'");
    nb::gil_scoped_release release;
    return searchsorted(s, v, side == "left" ? Side::Left : Side::Right);
  });
}

void bind_shapes(nb::module_& m) {
  m.def("reshape", [](nb::handle x, nb::handle shape) {
    const Tensor t = to_tensor(x);
    const Shape s = to_shape(shape);
    nb::gil_scoped_release release;
    return reshape(t, s);
  });
  m.def(
      "transpose",
      [](nb::handle x, std::optional<std::vector<int64_t>> perm) {
        const Tensor t = to_tensor(x);
        nb::gil_scoped_release release;
        return transpose(t, perm ? *perm : std::vector<int64_t>{});
      },
      nb::arg("x"), nb::arg("perm").none() = nb::none());
  m.def("moveaxis", [](nb::handle x, int64_t source, int64_t destination) {
    const Tensor t = to_tensor(x);
    nb::gil_scoped_release release;
    return moveaxis(t, source, destination);
  });
  m.def("swapaxes", [](nb::handle x, int64_t a, int64_t b) {
    const Tensor t = to_tensor(x);
    nb::gil_scoped_release release;
    return swapaxes(t, a, b);
  });
  m.def("expand_dims", [](nb::handle x, int64_t axis) {
    const Tensor t = to_tensor(x);
    nb::gil_scoped_release release;
    return expand_dims(t, axis);
  });
  m.def(
      "squeeze",
      [](nb::handle x, nb::handle axis) {
        const Tensor t = to_tensor(x);
        const auto axes = to_axes(axis);
        nb::gil_scoped_release release;
        return squeeze(t, axes_of(axes));
      },
      nb::arg("x"), nb::arg("axis").none() = nb::none());
  m.def("broadcast_to", [](nb::handle x, nb::handle shape) {
    const Tensor t = to_tensor(x);
    const Shape s = to_shape(shape);
    nb::gil_scoped_release release;
    return broadcast_to(t, s);
  });
  m.def("concatenate", [](nb::handle xs, int64_t axis) {
    const std::vector<Tensor> ts = tensors(xs);
    nb::gil_scoped_release release;
    return concatenate(ts, axis);
  });
  m.def("stack", [](nb::handle xs, int64_t axis) {
    const std::vector<Tensor> ts = tensors(xs);
    nb::gil_scoped_release release;
    return stack(ts, axis);
  });
  m.def(
      "flip",
      [](nb::handle x, nb::handle axis) {
        const Tensor t = to_tensor(x);
        const auto axes = to_axes(axis);
        nb::gil_scoped_release release;
        return flip(t, axes_of(axes));
      },
      nb::arg("x"), nb::arg("axis").none() = nb::none());
  m.def("slice_axis", [](nb::handle x, int64_t axis, int64_t start, int64_t stop, int64_t step) {
    const Tensor t = to_tensor(x);
    nb::gil_scoped_release release;
    return slice_axis(t, axis, start, stop, step);
  });
  m.def("pad", [](nb::handle x, const Shape& low, const Shape& high, double value) {
    const Tensor t = to_tensor(x);
    nb::gil_scoped_release release;
    return pad(t, low, high, value);
  });
  m.def("take", [](nb::handle x, nb::handle indices, int64_t axis) {
    const Tensor t = to_tensor(x), i = to_tensor(indices);
    nb::gil_scoped_release release;
    return take(t, i, axis);
  });
  m.def("dynamic_index", [](nb::handle x, nb::handle index) {
    const Tensor t = to_tensor(x), i = to_tensor(index);
    nb::gil_scoped_release release;
    return t[i];
  });
  m.def("scatter", [](nb::handle x, nb::handle indices, nb::handle updates, const std::string& mode,
                      int64_t axis) {
    const Tensor t = to_tensor(x), i = to_tensor(indices), u = to_operand(updates, t);
    const ScatterMode how = mode == "set"        ? ScatterMode::Set
                            : mode == "add"      ? ScatterMode::Add
                            : mode == "multiply" ? ScatterMode::Multiply
                            : mode == "min"      ? ScatterMode::Min
                            : mode == "max"      ? ScatterMode::Max
                                            : throw Error("scatter: unknown mode '" + mode + "'");
    nb::gil_scoped_release release;
    return scatter(t, i, u, how, axis);
  });
  m.def("dynamic_slice", [](nb::handle x, nb::handle starts, const Shape& sizes) {
    const Tensor t = to_tensor(x);
    const std::vector<Tensor> s = tensors(starts);
    nb::gil_scoped_release release;
    return dynamic_slice(t, s, sizes);
  });
  m.def("dynamic_update_slice", [](nb::handle x, nb::handle update, nb::handle starts) {
    const Tensor t = to_tensor(x), u = to_tensor(update);
    const std::vector<Tensor> s = tensors(starts);
    nb::gil_scoped_release release;
    return dynamic_update_slice(t, u, s);
  });
  m.def("einsum", [](const std::string& spec, nb::handle xs) {
    const std::vector<Tensor> ts = tensors(xs);
    nb::gil_scoped_release release;
    return einsum(spec, ts);
  });
  m.def("tensordot", [](nb::handle a, nb::handle b, const std::vector<int64_t>& a_axes,
                        const std::vector<int64_t>& b_axes) {
    const Tensor ta = to_tensor(a), tb = to_tensor(b);
    nb::gil_scoped_release release;
    return tensordot(ta, tb, a_axes, b_axes);
  });
  m.def(
      "one_hot",
      [](nb::handle indices, int64_t depth, nb::handle dtype) {
        const Tensor i = to_tensor(indices);
        const DType d = dtype_or(dtype, kFloat32);
        nb::gil_scoped_release release;
        return one_hot(i, depth, d);
      },
      nb::arg("indices"), nb::arg("depth"), nb::arg("dtype").none() = nb::none());
  m.def("conv2d", [](nb::handle x, nb::handle w, const std::vector<int64_t>& stride,
                     const std::vector<int64_t>& padding, const std::vector<int64_t>& dilation,
                     int64_t groups) {
    const Tensor tx = to_tensor(x), tw = to_tensor(w);
    nb::gil_scoped_release release;
    return conv2d(tx, tw, Conv2dOptions{stride, padding, dilation, groups});
  });
}

void bind_creation(nb::module_& m) {
  m.def(
      "asarray",
      [](nb::handle x, nb::handle dtype) {
        Tensor t = to_tensor(x);
        if (!dtype.is_none()) {
          const DType d = to_dtype(dtype);
          if (d != t.dtype()) t = cast(t, d);
        }
        return t;
      },
      nb::arg("x"), nb::arg("dtype").none() = nb::none());
  m.def(
      "full",
      [](nb::handle shape, double value, nb::handle dtype) {
        return full(to_shape(shape), value, dtype_or(dtype, kFloat32));
      },
      nb::arg("shape"), nb::arg("value"), nb::arg("dtype").none() = nb::none());
  m.def(
      "arange",
      [](double start, double stop, double step, nb::handle dtype) {
        return arange(start, stop, step, dtype_or(dtype, kFloat32));
      },
      nb::arg("start"), nb::arg("stop"), nb::arg("step"), nb::arg("dtype").none() = nb::none());
  m.def(
      "eye", [](int64_t n, nb::handle dtype) { return eye(n, dtype_or(dtype, kFloat32)); },
      nb::arg("n"), nb::arg("dtype").none() = nb::none());
  m.def(
      "iota",
      [](nb::handle shape, int64_t dimension, nb::handle dtype) {
        return iota(to_shape(shape), dimension, dtype_or(dtype, kInt32));
      },
      nb::arg("shape"), nb::arg("dimension"), nb::arg("dtype").none() = nb::none());
}

void bind_collectives(nb::module_& m) {
  using Collective = Tensor (*)(const Tensor&, const std::string&);
  const std::pair<const char*, Collective> collectives[] = {
      {"psum", &psum}, {"pmean", &pmean}, {"pmax", &pmax}, {"pmin", &pmin}};
  for (const auto& [name, op] : collectives)
    m.def(name, [op = op](nb::handle x, const std::string& axis) {
      const Tensor t = to_tensor(x);
      nb::gil_scoped_release release;
      return op(t, axis);
    });
  m.def("all_gather", [](nb::handle x, const std::string& axis, int64_t gather_axis) {
    const Tensor t = to_tensor(x);
    nb::gil_scoped_release release;
    return all_gather(t, axis, gather_axis);
  });
  m.def("axis_index", [](const std::string& axis) { return axis_index(axis); });
}

}  // namespace

void bind_ops(nb::module_& m) {
  bind_elementwise(m);
  bind_reductions(m);
  bind_shapes(m);
  bind_creation(m);
  bind_collectives(m);
  m.def("set_num_threads", &set_num_threads, nb::arg("n"),
        "Sets the threads lanes' kernels use (>= 1).");
  m.def("num_threads", &num_threads, "The threads lanes' kernels use.");
}

}  // namespace lanes::python
