// lanes.Array: a Tensor with numpy's and jax's array protocol. Indexing and `.at` live in Python
// (lanes/_indexing.py) over the ops bound here; everything else is a thin call into the C++ API.
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <sstream>

#include "bindings.h"

namespace lanes::python {
namespace {

nb::tuple shape_tuple(const Tensor& t) {
  nb::list dims;
  for (int64_t d : t.shape()) dims.append(d);
  return nb::tuple(dims);
}

std::string type_string(const Tensor& t) {
  std::string s = dtype_name(t.dtype());
  s += '[';
  for (size_t i = 0; i < t.shape().size(); ++i) s += (i ? "," : "") + std::to_string(t.shape()[i]);
  return s + ']';
}

std::string array_repr(const Tensor& t) {
  if (!t.defined()) return "Array(undefined)";
  if (t.is_tracer()) return "Traced<" + type_string(t) + ">";
  std::ostringstream os;
  os << t;
  std::string s = os.str();
  // C++ prints numpy's `array(...)`; jax's arrays print as `Array(...)`.
  if (s.rfind("array(", 0) == 0) {
    s[0] = 'A';
    // Continuation lines were indented for "array(": the same width, nothing to change.
  }
  // numpy leaves out the dtypes it defaults to (float64, int64, bool); jax's defaults are
  // float32 and int32, so, as jax, every dtype is named.
  if (s.find("dtype=") == std::string::npos && !s.empty() && s.back() == ')')
    s.insert(s.size() - 1, std::string(", dtype=") + dtype_name(t.dtype()));
  return s;
}

// A binary operator with a Python value on either side (weakly typed scalars).
template <class Op>
auto binary(Op op, bool reflected = false) {
  return [op, reflected](const Tensor& self, nb::handle other) -> nb::object {
    Tensor b;
    try {
      b = to_operand(other, self);
    } catch (const Error&) {
      return nb::borrow(Py_NotImplemented);  // let the other operand try (numpy, torch)
    }
    Tensor out;
    {
      nb::gil_scoped_release release;
      out = reflected ? op(b, self) : op(self, b);
    }
    return nb::cast(std::move(out));
  };
}

template <class Op>
auto unary(Op op) {
  return [op](const Tensor& self) {
    nb::gil_scoped_release release;
    return op(self);
  };
}

Tensor floor_divide(const Tensor& a, const Tensor& b) {
  const Tensor q = floor(divide(a, b));
  return cast(q, promote_types(a.dtype(), b.dtype()));
}

Tensor modulo(const Tensor& a, const Tensor& b) { return a - floor_divide(a, b) * b; }

Tensor reduce(Tensor (*op)(const Tensor&, const Axes&, bool), const Tensor& x, nb::handle axis,
              bool keepdims) {
  const std::optional<std::vector<int64_t>> axes = to_axes(axis);
  nb::gil_scoped_release release;
  return op(x, axes ? Axes(*axes) : Axes{}, keepdims);
}

// reshape(2, 3), reshape((2, 3)), with one -1 inferred as numpy does.
Tensor reshape_like_numpy(const Tensor& x, nb::args args) {
  Shape shape = args.size() == 1 ? to_shape(args[0]) : to_shape(args);
  int64_t known = 1, infer = -1;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == -1) {
      check(infer < 0, "reshape: only one dimension may be -1, got ", fmt(shape));
      infer = int64_t(i);
    } else {
      known *= shape[i];
    }
  }
  if (infer >= 0) {
    check(known != 0 && x.numel() % known == 0, "reshape: cannot reshape an array of shape ",
          fmt(x.shape()), " into ", fmt(shape));
    shape[size_t(infer)] = x.numel() / known;
  }
  nb::gil_scoped_release release;
  return reshape(x, shape);
}

// The buffer protocol (memoryview(x), anything that reads buffers): a read-only view of the
// tensor's memory. The view's shape and strides live beside a tensor copy that keeps the memory
// alive until the consumer releases the buffer.
struct BufferView {
  Tensor tensor;
  std::vector<Py_ssize_t> shape, strides;
};

const char* buffer_format(DType d) {
  switch (d) {
    case kBool:
      return "?";
    case kUInt8:
      return "B";
    case kInt32:
      return "i";
    case kInt64:
      return "q";
    case kFloat32:
      return "f";
    case kFloat64:
      return "d";
  }
  return "B";
}

int get_buffer(PyObject* self, Py_buffer* view, int flags) {
  Tensor* t = nullptr;
  if (!nb::try_cast(nb::handle(self), t, false) || !t || !t->defined() || t->is_tracer()) {
    PyErr_SetString(PyExc_BufferError, "lanes.Array: no buffer (a traced or undefined array)");
    return -1;
  }
  if (flags & PyBUF_WRITABLE) {
    PyErr_SetString(PyExc_BufferError,
                    "lanes.Array: buffers are read-only (lanes arrays are immutable)");
    return -1;
  }
  auto* b = new BufferView{*t, {}, {}};
  const Py_ssize_t item = Py_ssize_t(dtype_size(t->dtype()));
  for (int64_t d = 0; d < t->ndim(); ++d) {
    b->shape.push_back(Py_ssize_t(t->shape()[size_t(d)]));
    b->strides.push_back(Py_ssize_t(t->strides()[size_t(d)]) * item);
  }
  view->buf = const_cast<void*>(t->raw_data());
  view->obj = Py_NewRef(self);
  view->len = Py_ssize_t(t->numel()) * item;
  view->readonly = 1;
  view->itemsize = item;
  view->format = (flags & PyBUF_FORMAT) ? const_cast<char*>(buffer_format(t->dtype())) : nullptr;
  view->ndim = int(t->ndim());
  view->shape = b->shape.data();
  view->strides = b->strides.data();
  view->suboffsets = nullptr;
  view->internal = b;
  return 0;
}

void release_buffer(PyObject*, Py_buffer* view) { delete static_cast<BufferView*>(view->internal); }

PyType_Slot buffer_slots[] = {{Py_bf_getbuffer, reinterpret_cast<void*>(get_buffer)},
                              {Py_bf_releasebuffer, reinterpret_cast<void*>(release_buffer)},
                              {0, nullptr}};

// A function of lanes/_indexing.py.
nb::object indexing(const char* name) { return nb::module_::import_("lanes._indexing").attr(name); }

}  // namespace

// Array operator `name` (a string literal): binary(op[, reflected]), a Python value on either side,
// typed `-> Array` in the stub.
#define LANES_OPERATOR(name, ...)                         \
  def(name, binary(__VA_ARGS__), nb::arg("other").none(), \
      nb::sig("def " name "(self, other: object | None, /) -> Array"))

void bind_array(nb::module_& m) {
  nb::class_<Tensor> array(m, "Array",
                           "An n-dimensional array of lanes (jax.Array): numpy's array protocol, "
                           "jax's operators and weak typing of Python scalars.",
                           nb::type_slots(buffer_slots));
  const auto power = static_cast<Tensor (*)(const Tensor&, const Tensor&)>(&lanes::pow);
  array.def_prop_ro("shape", &shape_tuple, "The dimensions, a tuple of ints.")
      .def_prop_ro(
          "dtype", [](const Tensor& t) { return numpy_dtype(t.dtype()); },
          nb::sig("def dtype(self) -> numpy.dtype"), "The element type, a numpy dtype.")
      .def_prop_ro("ndim", &Tensor::ndim, "The number of dimensions.")
      .def_prop_ro("size", &Tensor::numel, "The number of elements.")
      .def_prop_ro("T", unary([](const Tensor& t) { return transpose(t); }),
                   "The array with its axes reversed.")
      .def_prop_ro("is_traced", &Tensor::is_tracer,
                   "Whether this array stands for a value a transform is tracing.")
      .def("__repr__", &array_repr)
      .def("__str__", &array_repr)
      .def("__len__",
           [](const Tensor& t) {
             if (t.ndim() == 0) throw nb::type_error("len() of a 0-d array");
             return t.shape()[0];
           })
      .def("__bool__",
           [](const Tensor& t) {
             check_concrete(t, "bool()");
             check(t.numel() == 1, "bool(): the truth value of an array with ", t.numel(),
                   " elements is ambiguous; use .any() or .all()");
             return t.item<double>() != 0;
           })
      .def("__float__",
           [](const Tensor& t) {
             check_concrete(t, "float()");
             check(t.numel() == 1, "float(): only arrays of one element convert, got shape ",
                   fmt(t.shape()));
             return t.item<double>();
           })
      .def("__int__",
           [](const Tensor& t) {
             check_concrete(t, "int()");
             check(t.numel() == 1, "int(): only arrays of one element convert, got shape ",
                   fmt(t.shape()));
             return t.item<int64_t>();
           })
      .def("__index__",
           [](const Tensor& t) {
             check_concrete(t, "__index__()");
             if (!is_integral(t.dtype()) || t.ndim() != 0)
               throw nb::type_error("only 0-d integer arrays can be used as an index");
             return t.item<int64_t>();
           })
      .def(
          "item",
          [](const Tensor& t) -> nb::object {
            check_concrete(t, "item()");
            return to_numpy(t).attr("item")();
          },
          "The single element as a Python scalar.")
      .def(
          "tolist",
          [](const Tensor& t) -> nb::object {
            check_concrete(t, "tolist()");
            return to_numpy(t).attr("tolist")();
          },
          "The elements as nested Python lists.")
      .def(
          "__array__",
          [](const Tensor& t, nb::handle dtype, nb::handle copy) {
            nb::object a = to_numpy(t);
            if (!dtype.is_none()) a = a.attr("astype")(dtype);
            if (!copy.is_none() && nb::cast<bool>(copy)) a = a.attr("copy")();
            return a;
          },
          nb::arg("dtype").none() = nb::none(), nb::arg("copy").none() = nb::none(),
          "A read-only numpy view of the array, without a copy.")
      .def(
          "__dlpack__", [](const Tensor& t, nb::kwargs) { return to_dlpack_owner(t); },
          "A DLPack capsule viewing the array (numpy.from_dlpack, torch.from_dlpack).")
      .def("__dlpack_device__", [](const Tensor&) { return nb::make_tuple(1, 0); })
      .def(
          "astype",
          [](const Tensor& t, nb::handle dtype) {
            const DType d = to_dtype(dtype);
            nb::gil_scoped_release release;
            return cast(t, d);
          },
          nb::arg("dtype"), "The array converted to `dtype`.")
      .def("reshape", &reshape_like_numpy, "The array with a new shape (one dim may be -1).")
      .def("flatten", unary([](const Tensor& t) { return flatten(t); }))
      .def("ravel", unary([](const Tensor& t) { return flatten(t); }))
      .def(
          "transpose",
          [](const Tensor& t, nb::args axes) {
            std::vector<int64_t> perm;
            if (axes.size() == 1 && !axes[0].is_none() && !PyLong_Check(axes[0].ptr()))
              for (nb::handle a : axes[0]) perm.push_back(nb::cast<int64_t>(a));
            else
              for (nb::handle a : axes) perm.push_back(nb::cast<int64_t>(a));
            nb::gil_scoped_release release;
            return transpose(t, perm);
          },
          "The array with its axes permuted (reversed when none given).")
      .def(
          "squeeze",
          [](const Tensor& t, nb::handle axis) {
            const auto axes = to_axes(axis);
            nb::gil_scoped_release release;
            return squeeze(t, axes ? Axes(*axes) : Axes{});
          },
          nb::arg("axis").none() = nb::none())
      .def("__neg__", unary([](const Tensor& t) { return negative(t); }))
      .def("__pos__", [](const Tensor& t) { return t; })
      .def("__abs__", unary([](const Tensor& t) { return abs(t); }))
      .def("__invert__", unary([](const Tensor& t) { return bitwise_not(t); }))
      .LANES_OPERATOR("__add__", add)
      .LANES_OPERATOR("__radd__", add, true)
      .LANES_OPERATOR("__sub__", subtract)
      .LANES_OPERATOR("__rsub__", subtract, true)
      .LANES_OPERATOR("__mul__", multiply)
      .LANES_OPERATOR("__rmul__", multiply, true)
      .LANES_OPERATOR("__truediv__", divide)
      .LANES_OPERATOR("__rtruediv__", divide, true)
      .LANES_OPERATOR("__floordiv__", floor_divide)
      .LANES_OPERATOR("__rfloordiv__", floor_divide, true)
      .LANES_OPERATOR("__mod__", modulo)
      .LANES_OPERATOR("__rmod__", modulo, true)
      .LANES_OPERATOR("__pow__", power)
      .LANES_OPERATOR("__rpow__", power, true)
      .LANES_OPERATOR("__matmul__", matmul)
      .LANES_OPERATOR("__rmatmul__", matmul, true)
      .LANES_OPERATOR("__lt__", less)
      .LANES_OPERATOR("__le__", less_equal)
      .LANES_OPERATOR("__gt__", greater)
      .LANES_OPERATOR("__ge__", greater_equal)
      .LANES_OPERATOR("__eq__", equal)
      .LANES_OPERATOR("__ne__", not_equal)
      .LANES_OPERATOR("__and__", bitwise_and)
      .LANES_OPERATOR("__rand__", bitwise_and, true)
      .LANES_OPERATOR("__or__", bitwise_or)
      .LANES_OPERATOR("__ror__", bitwise_or, true)
      .LANES_OPERATOR("__xor__", bitwise_xor)
      .LANES_OPERATOR("__rxor__", bitwise_xor, true)
      .LANES_OPERATOR("__lshift__", left_shift)
      .LANES_OPERATOR("__rlshift__", left_shift, true)
      .LANES_OPERATOR("__rshift__", right_shift)
      .LANES_OPERATOR("__rrshift__", right_shift, true);
  // Indexing is written in Python (lanes/_indexing.py) over the ops bound here.
  array
      .def(
          "__getitem__",
          [](nb::handle self, nb::handle key) { return indexing("getitem")(self, key); },
          nb::arg("key").none(), nb::sig("def __getitem__(self, key: object | None) -> Array"),
          "numpy's indexing: ints, slices with any step, None, ..., one integer array and any "
          "number of integer scalar arrays (traced or not: clamped, as jax reads); several integer "
          "arrays "
          "broadcast together.")
      .def(
          "__setitem__",
          [](nb::handle, nb::handle, nb::handle) {
            throw nb::type_error(
                "lanes arrays are immutable: x[idx] = v is not supported; use "
                "x = x.at[idx].set(v) (jax's spelling), which returns the updated array");
          },
          nb::arg("key").none(), nb::arg("value").none())
      .def("__iter__", [](nb::handle self) { return indexing("iterate")(self); })
      .def_prop_ro(
          "at", [](nb::handle self) { return indexing("at")(self); },
          "Functional updates (jax's spelling): x.at[idx].set(v), .add, .multiply, .min, .max, "
          ".get.");
  array.attr("__hash__") = nb::none();     // mutable-looking, compared elementwise: unhashable
  array.attr("__array_priority__") = 100;  // numpy defers `ndarray + Array` to us

  // Reductions with numpy's axis / keepdims.
  using Reduce = Tensor (*)(const Tensor&, const Axes&, bool);
  const std::pair<const char*, Reduce> reductions[] = {
      {"sum", &sum}, {"mean", &mean}, {"prod", &prod}, {"max", &max}, {"min", &min}};
  // dtype and out as numpy's methods take them (numpy.sum(x) calls x.sum(axis=, out=)).
  for (const auto& [name, op] : reductions)
    array.def(
        name,
        [op = op, name = name](const Tensor& x, nb::handle axis, nb::handle dtype, nb::handle out,
                               bool keepdims) {
          check(out.is_none(), name, ": out= is not supported (lanes arrays are immutable)");
          const Tensor in = dtype.is_none() ? x : cast(x, to_dtype(dtype));
          return reduce(op, in, axis, keepdims);
        },
        nb::arg("axis").none() = nb::none(), nb::arg("dtype").none() = nb::none(),
        nb::arg("out").none() = nb::none(), nb::arg("keepdims") = false);
}

#undef LANES_OPERATOR

}  // namespace lanes::python
