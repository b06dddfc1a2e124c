// searchsorted and pad with interior padding, composed from comparisons, sums, reshapes and the
// pad primitive (so they batch and differentiate through those rules).
#include "lanes/array_ops.h"
#include "ops/internal.h"
#include "primitives/util.h"

namespace lanes {

// Counts, for each value, the entries of `sorted` below it (left) or not above it (right): the
// insertion point in a sorted sequence. One comparison pass over (values..., n): no search, but
// no data-dependent control flow either, so it batches as one op.
Tensor searchsorted(const Tensor& sorted, const Tensor& values, Side side) {
  check(sorted.defined() && values.defined(), "searchsorted: sorted or values is undefined");
  check(sorted.ndim() == 1, "searchsorted: sorted must be 1-d, got shape ", fmt(sorted.shape()),
        " (values of shape ", fmt(values.shape()), ")");
  const Tensor v = expand_dims(values, -1);
  const Tensor before = side == Side::Left ? less(sorted, v) : less_equal(sorted, v);
  return sum(cast(before, DType::Int64), -1);
}

namespace {

// Inserts `interior` copies of value between neighbours along `axis`: (n) -> (n, 1) padded to
// (n, 1 + interior), flattened, and the trailing `interior` cropped.
Tensor pad_interior_axis(const Tensor& x, int64_t axis, int64_t interior, double value) {
  const int64_t n = x.shape()[axis];
  if (interior == 0 || n <= 1) return x;
  const Tensor spread = expand_dims(x, axis + 1);
  Shape high(spread.ndim(), 0);
  high[axis + 1] = interior;
  const Tensor padded = pad(spread, Shape(spread.ndim(), 0), high, value);
  Shape merged = x.shape();
  merged[axis] = n * (1 + interior);
  return slice_axis(reshape(padded, merged), axis, 0, (n - 1) * (1 + interior) + 1);
}

}  // namespace

Tensor pad_interior(const Tensor& x, const Shape& low, const Shape& high, const Shape& interior,
                    double value) {
  check(x.defined(), "pad_interior: x is an undefined tensor");
  check(int64_t(low.size()) == x.ndim() && int64_t(high.size()) == x.ndim() &&
            int64_t(interior.size()) == x.ndim(),
        "pad_interior: low ", fmt(low), ", high ", fmt(high), " and interior ", fmt(interior),
        " need one entry per dim of x of shape ", fmt(x.shape()));
  Tensor y = x;
  for (int64_t d = 0; d < x.ndim(); ++d) {
    check(interior[d] >= 0, "pad_interior: interior padding ", interior[d], " of dim ", d,
          " is negative (x of shape ", fmt(x.shape()), ")");
    y = pad_interior_axis(y, d, interior[d], value);
  }
  return pad(y, low, high, value);
}

}  // namespace lanes
