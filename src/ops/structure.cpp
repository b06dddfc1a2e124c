// Creation and structural ops: iota, arange, eye over the iota primitive; concatenate, stack and
// pad over concatenate / pad.
#include <cmath>

#include "ops/internal.h"
#include "primitives/structure.h"
#include "primitives/util.h"

namespace lanes {

using ops::apply;

Tensor iota(const Shape& shape, int64_t dimension, DType dtype) {
  const int64_t dim = prim::normalize_axis(dimension, int64_t(shape.size()), "iota");
  return apply<prim::Iota>({}, shape, dim, dtype);
}

Tensor arange(int64_t n, DType dtype) {
  check(n >= 0, "arange: negative length ", n);
  return iota({n}, 0, dtype);
}

// numpy's length ceil((stop - start) / step); the values start + i * step are computed in
// float64 and converted once, so float32 results are correctly rounded.
Tensor arange(double start, double stop, double step, DType dtype) {
  check(step != 0, "arange: step must not be zero (start ", start, ", stop ", stop, ")");
  check(std::isfinite(start) && std::isfinite(stop) && std::isfinite(step), "arange: start ", start,
        ", stop ", stop, " and step ", step, " must be finite");
  const double length = std::ceil((stop - start) / step);
  check(length < 9.0e18, "arange: length ", length, " is too large");
  const int64_t n = length > 0 ? static_cast<int64_t>(length) : 0;
  if (start == 0 && step == 1) return iota({n}, 0, dtype);
  const Tensor i = iota({n}, 0, DType::Float64);
  return cast(i * step + start, dtype);
}

Tensor eye(int64_t n, DType dtype) {
  check(n >= 0, "eye: negative size ", n);
  // A column against a row of indices, broadcast: two passes over n^2 (compare, cast), not four.
  return cast(equal(iota({n, 1}, 0, DType::Int64), iota({1, n}, 1, DType::Int64)), dtype);
}

Tensor concatenate(const std::vector<Tensor>& xs, int64_t axis) {
  check(!xs.empty(), "concatenate: needs at least one tensor");
  for (size_t k = 0; k < xs.size(); ++k)
    check(xs[k].defined(), "concatenate: operand ", k, " is an undefined tensor");
  const int64_t rank = xs[0].ndim();
  check(rank > 0, "concatenate: operand 0 of shape ", fmt(xs[0].shape()),
        " is zero-dimensional and cannot be concatenated");
  const int64_t a = prim::normalize_axis(axis, rank, "concatenate");
  DType dtype = xs[0].dtype();
  for (const Tensor& x : xs) dtype = promote_types(dtype, x.dtype());
  if (xs.size() == 1) return cast(xs[0], dtype);
  std::vector<Tensor> operands;
  operands.reserve(xs.size());
  for (const Tensor& x : xs) operands.push_back(cast(x, dtype));
  return apply<prim::Concatenate>(operands, a);
}

Tensor stack(const std::vector<Tensor>& xs, int64_t axis) {
  check(!xs.empty(), "stack: needs at least one tensor");
  for (size_t k = 0; k < xs.size(); ++k) {
    check(xs[k].defined(), "stack: operand ", k, " is an undefined tensor");
    check(xs[k].shape() == xs[0].shape(), "stack: operand ", k, " of shape ", fmt(xs[k].shape()),
          " does not match operand 0 of shape ", fmt(xs[0].shape()));
  }
  const int64_t a = prim::normalize_axis(axis, xs[0].ndim() + 1, "stack");
  std::vector<Tensor> expanded;
  expanded.reserve(xs.size());
  for (const Tensor& x : xs) expanded.push_back(expand_dims(x, a));
  return concatenate(expanded, a);
}

Tensor pad(const Tensor& x, const Shape& low, const Shape& high, double value) {
  check(x.defined(), "pad: x is an undefined tensor");
  bool identity = true;
  for (size_t d = 0; d < low.size() && d < high.size(); ++d) identity &= !low[d] && !high[d];
  if (identity && low.size() == size_t(x.ndim()) && high.size() == size_t(x.ndim())) return x;
  return apply<prim::Pad>({x}, low, high, value);
}

}  // namespace lanes
