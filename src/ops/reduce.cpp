// Reduction ops: jnp axes (default all, negative, keepdims) and dtypes over the Reduce and
// ArgReduce primitives. sum/prod of bool give int32, of other integers keep their dtype (and
// wrap); mean of integers and bool is float32; max/min of an empty reduction is an error.
#include <algorithm>

#include "ops/internal.h"
#include "primitives/reduce.h"

namespace lanes {

using kernels::ReduceOp;

namespace {

void need(const Tensor& x, const char* op) { check(x.defined(), op, ": x is an undefined tensor"); }

/// y with size-1 dims put back at the (sorted) reduced axes of an input of shape `in`.
Tensor keep_dims(const Tensor& y, const Shape& in, const std::vector<int64_t>& axes) {
  Shape shape = in;
  for (int64_t a : axes) shape[a] = 1;
  return reshape(y, shape);
}

int64_t reduced_count(const Shape& shape, const std::vector<int64_t>& axes) {
  int64_t n = 1;
  for (int64_t a : axes) n *= shape[a];
  return n;
}

int64_t kept_count(const Shape& shape, const std::vector<int64_t>& axes) {
  int64_t n = 1;
  for (int64_t d = 0; d < int64_t(shape.size()); ++d)
    if (!std::binary_search(axes.begin(), axes.end(), d)) n *= shape[d];
  return n;
}

Tensor reduce(ReduceOp kind, const char* op, const Tensor& x, const Axes& axes, bool keepdims) {
  need(x, op);
  const std::vector<int64_t> ax = prim::reduction_axes(axes.list, axes.all, x.shape(), op);
  if (kind == ReduceOp::Max || kind == ReduceOp::Min) {
    check(reduced_count(x.shape(), ax) > 0 || kept_count(x.shape(), ax) == 0, op,
          ": zero-size reduction over axes ", fmt(ax), " of a tensor of shape ", fmt(x.shape()),
          " has no identity");
  }
  Tensor in = x;
  if (x.dtype() == DType::Bool && (kind == ReduceOp::Sum || kind == ReduceOp::Prod))
    in = cast(x, DType::Int32);
  const Tensor y = ax.empty() ? in : ops::apply<prim::Reduce>({in}, kind, ax);
  return keepdims ? keep_dims(y, x.shape(), ax) : y;
}

Tensor arg_reduce(kernels::ArgReduceOp kind, const char* op, const Tensor& x, int64_t axis,
                  bool keepdims) {
  need(x, op);
  check(x.ndim() > 0, op, ": needs a tensor with at least one dim, got shape ", fmt(x.shape()));
  const int64_t a = prim::reduction_axes({axis}, false, x.shape(), op)[0];
  check(x.shape()[a] > 0, op, ": cannot take the ", op, " along axis ", axis, " of size 0 (shape ",
        fmt(x.shape()), ")");
  const Tensor y = ops::apply<prim::ArgReduce>({x}, kind, a);
  return keepdims ? expand_dims(y, a) : y;
}

}  // namespace

Tensor sum(const Tensor& x, const Axes& axes, bool keepdims) {
  return reduce(ReduceOp::Sum, "sum", x, axes, keepdims);
}

Tensor prod(const Tensor& x, const Axes& axes, bool keepdims) {
  return reduce(ReduceOp::Prod, "prod", x, axes, keepdims);
}

Tensor max(const Tensor& x, const Axes& axes, bool keepdims) {
  return reduce(ReduceOp::Max, "max", x, axes, keepdims);
}

Tensor min(const Tensor& x, const Axes& axes, bool keepdims) {
  return reduce(ReduceOp::Min, "min", x, axes, keepdims);
}

// The sum in the float dtype, divided by the count (0 / 0 = NaN for an empty reduction).
Tensor mean(const Tensor& x, const Axes& axes, bool keepdims) {
  need(x, "mean");
  const std::vector<int64_t> ax = prim::reduction_axes(axes.list, axes.all, x.shape(), "mean");
  const Tensor xf = is_floating(x.dtype()) ? x : cast(x, DType::Float32);
  return sum(xf, ax, keepdims) / static_cast<double>(reduced_count(x.shape(), ax));
}

Tensor argmax(const Tensor& x, int64_t axis, bool keepdims) {
  return arg_reduce(kernels::ArgReduceOp::ArgMax, "argmax", x, axis, keepdims);
}

Tensor argmin(const Tensor& x, int64_t axis, bool keepdims) {
  return arg_reduce(kernels::ArgReduceOp::ArgMin, "argmin", x, axis, keepdims);
}

}  // namespace lanes
