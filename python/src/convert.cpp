// Python values <-> lanes tensors: numpy arrays and DLPack producers are viewed without a copy,
// lanes tensors are handed to numpy and DLPack consumers without a copy (read-only: lanes
// shares buffers between arrays and caches, so a write through numpy would change other values).
#include <Python.h>
#include <nanobind/stl/string.h>

#include <climits>
#include <string>

#include "bindings.h"

namespace lanes::python {
namespace {

struct Dtypes {
  nb::object numpy;
  nb::object by_lanes[6];
};

Dtypes& dtypes() {
  static Dtypes* d = [] {
    auto* out = new Dtypes();  // never destroyed: interpreter objects outlive static destructors
    out->numpy = nb::module_::import_("numpy");
    const char* names[] = {"bool", "uint8", "int32", "int64", "float32", "float64"};
    for (int i = 0; i < 6; ++i) out->by_lanes[i] = out->numpy.attr("dtype")(names[i]);
    return out;
  }();
  return *d;
}

std::optional<DType> from_dlpack_dtype(nb::dlpack::dtype t) {
  using Code = nb::dlpack::dtype_code;
  if (t.lanes != 1) return std::nullopt;
  switch (Code(t.code)) {
    case Code::Bool:
      if (t.bits == 8) return kBool;
      break;
    case Code::UInt:
      if (t.bits == 8) return kUInt8;
      break;
    case Code::Int:
      if (t.bits == 32) return kInt32;
      if (t.bits == 64) return kInt64;
      break;
    case Code::Float:
      if (t.bits == 32) return kFloat32;
      if (t.bits == 64) return kFloat64;
      break;
    default:
      break;
  }
  return std::nullopt;
}

nb::dlpack::dtype to_dlpack_dtype(DType d) {
  switch (d) {
    case kBool:
      return nb::dtype<bool>();
    case kUInt8:
      return nb::dtype<uint8_t>();
    case kInt32:
      return nb::dtype<int32_t>();
    case kInt64:
      return nb::dtype<int64_t>();
    case kFloat32:
      return nb::dtype<float>();
    case kFloat64:
      return nb::dtype<double>();
  }
  throw Error("unknown dtype");
}

// Keeps a Python-side holder (an ndarray handle) alive for as long as lanes views its memory;
// the last tensor may go away on any thread, with or without the GIL.
template <class Holder>
std::shared_ptr<const void> keep_alive(Holder holder) {
  return std::shared_ptr<const void>(new Holder(std::move(holder)), [](const void* p) {
    auto* h = static_cast<Holder*>(const_cast<void*>(p));
    if (!Py_IsInitialized()) return;  // the interpreter is gone: nothing left to free it with
    nb::gil_scoped_acquire gil;
    delete h;
  });
}

// An array lanes can view: CPU memory, a lanes dtype, non-negative strides. nullopt otherwise
// (the caller converts through numpy).
std::optional<Tensor> view_ndarray(nb::handle value) {
  nb::ndarray<nb::ro> array;
  if (!nb::try_cast(value, array, false)) return std::nullopt;
  if (array.device_type() != nb::device::cpu::value) return std::nullopt;
  const std::optional<DType> dtype = from_dlpack_dtype(array.dtype());
  if (!dtype) return std::nullopt;
  Shape shape(array.ndim());
  Strides strides(array.ndim());
  int64_t high = 0;
  bool empty = false;
  for (size_t i = 0; i < array.ndim(); ++i) {
    shape[i] = int64_t(array.shape(i));
    strides[i] = array.stride(i);
    if (strides[i] < 0) return std::nullopt;
    empty = empty || shape[i] == 0;
    high += (shape[i] - 1) * strides[i];
  }
  const size_t bytes = empty ? 0 : size_t(high + 1) * dtype_size(*dtype);
  // The ndarray handle owns a reference to the producer (numpy array, DLPack capsule).
  void* data = const_cast<void*>(array.data());
  return from_external(data, bytes, *dtype, shape, strides, 0, keep_alive(std::move(array)));
}

// jax's defaults for Python values: float32 and int32 (numpy would pick the 64-bit types).
Tensor through_numpy(nb::handle value) {
  nb::object np = dtypes().numpy;
  nb::object a = np.attr("asarray")(value);
  const std::string kind = nb::str(a.attr("dtype").attr("kind")).c_str();
  const bool python_value = !nb::isinstance(value, np.attr("ndarray"));
  if (python_value && kind == "f") a = a.attr("astype")("float32");
  // Python ints are int32 as in jax, unless a value does not fit: then int64, never a wrap.
  if (python_value && (kind == "i" || kind == "u") &&
      std::string(nb::str(a.attr("dtype").attr("name")).c_str()) != "uint8") {
    const nb::object in_range = np.attr("logical_and")(np.attr("greater_equal")(a, -2147483648LL),
                                                       np.attr("less_equal")(a, 2147483647LL));
    const bool fits = PyObject_IsTrue(np.attr("all")(in_range).ptr()) == 1;
    a = a.attr("astype")(fits ? "int32" : "int64");
  }
  if (kind == "O" || kind == "U" || kind == "S")
    throw Error("asarray: cannot make an array of " + std::string(nb::repr(value.type()).c_str()) +
                " values");
  if (std::optional<Tensor> t = view_ndarray(a)) return *t;
  // A dtype lanes lacks (float16, int16, complex, ...) or negative strides: copy or say so.
  if (std::optional<Tensor> t = view_ndarray(np.attr("ascontiguousarray")(a))) return *t;
  throw Error("asarray: lanes has no dtype for numpy's " +
              std::string(nb::str(a.attr("dtype").attr("name")).c_str()) +
              " (it has bool, uint8, int32, int64, float32, float64)");
}

}  // namespace

namespace {

// A Python int beside an array takes the array's integer dtype (or float32, float64) weakly, as
// in jax, and like jax it must fit that dtype: `int32_array + 2**40` raises OverflowError where a
// cast would wrap silently. An int64 beyond 2^53 is made exactly, not through a double.
Tensor weak_int(nb::handle value, const Tensor& like) {
  const DType target = promote_weak(like.dtype(), false);
  if (!is_integral(target)) {
    const double v = PyLong_AsDouble(value.ptr());
    if (v == -1.0 && PyErr_Occurred()) throw nb::python_error();
    return weak_scalar(v, false, like);
  }
  int overflow = 0;
  const long long v = PyLong_AsLongLongAndOverflow(value.ptr(), &overflow);
  if (v == -1 && PyErr_Occurred()) throw nb::python_error();
  const long long lo = target == kUInt8 ? 0 : target == kInt32 ? INT32_MIN : LLONG_MIN;
  const long long hi = target == kUInt8 ? 255 : target == kInt32 ? INT32_MAX : LLONG_MAX;
  if (overflow != 0 || v < lo || v > hi) {
    const std::string text = nb::str(value).c_str();
    PyErr_SetString(
        PyExc_OverflowError,
        ("Python int " + text + " too large to convert to " + dtype_name(target)).c_str());
    throw nb::python_error();
  }
  constexpr long long kExactInDouble = 1LL << 53;
  if (v >= -kExactInDouble && v <= kExactInDouble) return weak_scalar(double(v), false, like);
  Tensor t = Tensor::empty({}, kInt64);
  *t.mutable_data<int64_t>() = v;
  return t;
}

}  // namespace

bool is_python_scalar(nb::handle value) {
  return PyBool_Check(value.ptr()) || PyLong_CheckExact(value.ptr()) ||
         PyFloat_CheckExact(value.ptr());
}

Tensor to_tensor(nb::handle value) {
  Tensor t;
  if (nb::try_cast(value, t, false)) return t;
  if (!is_python_scalar(value))
    if (std::optional<Tensor> viewed = view_ndarray(value)) return *viewed;
  return through_numpy(value);
}

Tensor to_operand(nb::handle value, const Tensor& like) {
  if (PyFloat_CheckExact(value.ptr()))
    return weak_scalar(PyFloat_AsDouble(value.ptr()), true, like);
  if (PyBool_Check(value.ptr())) return scalar(value.ptr() == Py_True ? 1.0 : 0.0, kBool);
  if (PyLong_CheckExact(value.ptr())) return weak_int(value, like);
  return to_tensor(value);
}

nb::object numpy_dtype(DType dtype) { return dtypes().by_lanes[int(dtype)]; }

DType to_dtype(nb::handle dtype) {
  nb::object d = dtypes().numpy.attr("dtype")(dtype);
  const std::string name = nb::str(d.attr("name")).c_str();
  for (DType t : {kBool, kUInt8, kInt32, kInt64, kFloat32, kFloat64})
    if (name == dtype_name(t)) return t;
  throw Error("lanes has no dtype " + name +
              " (it has bool, uint8, int32, int64, float32, float64)");
}

void check_concrete(const Tensor& t, const char* what) {
  if (!t.defined()) throw Error(std::string(what) + ": the array is undefined");
  if (!t.is_tracer()) return;
  nb::object lanes = nb::module_::import_("lanes._tracing");
  lanes.attr("raise_concretization")(what, nb::cast(t));
}

// The capsule owning a tensor copy: numpy's base object while the view lives.
static nb::capsule owner_of(const Tensor& t) {
  return nb::capsule(new Tensor(t), [](void* p) noexcept { delete static_cast<Tensor*>(p); });
}

template <class Framework>
static nb::object export_view(const Tensor& t) {
  std::vector<size_t> shape(t.shape().begin(), t.shape().end());
  const Strides& strides = t.strides();
  const size_t item = dtype_size(t.dtype());
  nb::ndarray<Framework, nb::ro> array(
      static_cast<const char*>(t.storage()->data()) + size_t(t.offset()) * item, shape.size(),
      shape.data(), owner_of(t), strides.data(), to_dlpack_dtype(t.dtype()));
  return nb::cast(array, nb::rv_policy::reference);
}

nb::object to_numpy(const Tensor& t) {
  check_concrete(t, "numpy.asarray()");
  return export_view<nb::numpy>(t);
}

nb::object to_dlpack_owner(const Tensor& t) {
  check_concrete(t, "__dlpack__()");
  return export_view<nb::no_framework>(t);
}

std::optional<std::vector<int64_t>> to_axes(nb::handle axis) {
  if (axis.is_none()) return std::nullopt;
  if (PyLong_Check(axis.ptr())) return std::vector<int64_t>{nb::cast<int64_t>(axis)};
  std::vector<int64_t> axes;
  for (nb::handle a : axis) axes.push_back(nb::cast<int64_t>(a));
  return axes;
}

Leaves to_leaves(nb::handle seq) {
  Leaves out;
  for (nb::handle h : seq) out.push_back(to_tensor(h));
  return out;
}

nb::list to_list(const Leaves& leaves) {
  nb::list out;
  for (const Tensor& t : leaves) out.append(nb::cast(t));
  return out;
}

Shape to_shape(nb::handle shape) {
  if (PyLong_Check(shape.ptr())) return Shape{nb::cast<int64_t>(shape)};
  Shape s;
  for (nb::handle d : shape) s.push_back(nb::cast<int64_t>(d));
  return s;
}

DType dtype_or(nb::handle dtype, DType fallback) {
  return dtype.is_none() ? fallback : to_dtype(dtype);
}

std::shared_ptr<nb::object> hold(nb::object o) {
  return std::shared_ptr<nb::object>(new nb::object(std::move(o)), [](nb::object* p) {
    if (!Py_IsInitialized()) return;
    nb::gil_scoped_acquire gil;
    delete p;
  });
}

}  // namespace lanes::python
