// Reversal: flip, and slice_axis with a negative step (numpy's x[start:stop:-k]). Both gather
// constant indices: the views of the slice primitive only step forward (kernels assume
// non-negative strides), and gather already has batching and derivative rules (its transpose
// scatters back, which for a permutation is a plain copy).
#include <algorithm>

#include "lanes/array_ops.h"
#include "ops/internal.h"
#include "primitives/util.h"

namespace lanes {

namespace {

// first, first - step, ... (count of them), as a constant int64 index vector.
Tensor stepped_indices(int64_t first, int64_t step, int64_t count) {
  std::vector<int64_t> index(count);
  for (int64_t k = 0; k < count; ++k) index[k] = first + k * step;
  return tensor(index, {count});
}

}  // namespace

Tensor flip(const Tensor& x, const Axes& axes) {
  check(x.defined(), "flip: x is an undefined tensor");
  Tensor out = x;
  for (int64_t a : ops::normalize_axes(axes, x.ndim(), "flip")) {
    const int64_t n = x.shape()[a];
    if (n > 1) out = take(out, stepped_indices(n - 1, -1, n), a);
  }
  return out;
}

namespace detail {

// numpy's slice with step < 0: start and stop clamp to [-1, n - 1] (negative ones count from
// the end first), and the elements are start, start + step, ... while above stop.
Tensor slice_axis_reversed(const Tensor& x, int64_t axis, int64_t start, int64_t stop,
                           int64_t step) {
  const int64_t n = x.shape()[axis];
  auto clamp = [n](int64_t i) { return std::clamp<int64_t>(i < 0 ? i + n : i, -1, n - 1); };
  const int64_t lo = clamp(stop), hi = clamp(start);
  const int64_t count = hi > lo ? (hi - lo - 1) / -step + 1 : 0;
  return take(x, stepped_indices(hi, step, count), axis);
}

}  // namespace detail

}  // namespace lanes
