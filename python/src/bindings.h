// What the binding files share: conversions between Python values and lanes Tensors, and the
// registration function of each area. The bindings call lanes' public C++ API only.
#pragma once

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>

#include <lanes/lanes.h>

#include <optional>
#include <vector>

namespace nb = nanobind;

namespace lanes::python {

/// A Python value as a tensor: an Array as is; a numpy array or any DLPack / buffer producer
/// without a copy where lanes can read its layout; Python scalars and nested lists through numpy
/// with jax's default dtypes (float32, int32).
Tensor to_tensor(nb::handle value);
/// As to_tensor, except that a Python scalar takes `like`'s dtype class weakly (jax's weak types:
/// `x * 2.0` keeps x's float32).
Tensor to_operand(nb::handle value, const Tensor& like);
/// Whether `value` is a Python bool, int or float (not an array).
bool is_python_scalar(nb::handle value);

/// numpy's dtype object for a lanes dtype, and the lanes dtype of anything numpy.dtype() accepts.
nb::object numpy_dtype(DType dtype);
DType to_dtype(nb::handle dtype);

/// A read-only numpy array viewing the tensor's memory (no copy); raises ConcretizationError for
/// a tracer. `framework_free`: a nanobind ndarray (buffer protocol and DLPack) instead.
nb::object to_numpy(const Tensor& t);
nb::object to_dlpack_owner(const Tensor& t);

/// numpy's axis argument: None (every axis), an int, or a sequence of ints.
std::optional<std::vector<int64_t>> to_axes(nb::handle axis);

/// The leaf lists transforms pass between Python and C++.
using Leaves = std::vector<Tensor>;
Leaves to_leaves(nb::handle seq);
nb::list to_list(const Leaves& leaves);

/// numpy's shape argument (an int or a sequence of ints); a dtype argument or `fallback` for None.
Shape to_shape(nb::handle shape);
DType dtype_or(nb::handle dtype, DType fallback);

/// A Python object C++ may keep past the call that gave it (a transform's function, a custom
/// rule in a graph): its last reference may go on any thread, so it is dropped under the GIL
/// (and left alone once the interpreter is gone).
std::shared_ptr<nb::object> hold(nb::object o);

/// A Python function of a leaf list (fn(list of Arrays) -> list of Arrays) as a C++ transform's
/// function: called from C++, it takes the GIL while it runs.
struct FlatFn {
  std::shared_ptr<nb::object> fn;
  Leaves operator()(const Leaves& in) const {
    nb::gil_scoped_acquire gil;
    return to_leaves((*fn)(to_list(in)));
  }
};

/// Raises lanes.ConcretizationError when t is a tracer: Python needs its value (`what`: "bool()",
/// "float()", ...).
void check_concrete(const Tensor& t, const char* what);

void bind_errors(nb::module_& m);
void bind_array(nb::module_& m);
void bind_ops(nb::module_& m);
void bind_transforms(nb::module_& m);
void bind_jit(nb::module_& m);
void bind_control_flow(nb::module_& m);
void bind_random(nb::module_& m);
void bind_variables(nb::module_& m);
void bind_custom(nb::module_& m);
void bind_cost(nb::module_& m);

}  // namespace lanes::python
