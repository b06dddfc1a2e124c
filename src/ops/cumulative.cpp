// Cumulative scans along one axis (jax.lax.cumsum / cumprod / cummax / cummin / cumlogsumexp),
// composed as a Hillis-Steele scan: step s combines each element with the one s places before
// it (after it when reversed), for s = 1, 2, 4, ... < n. The windows combined at each step are
// disjoint, so log2(n) slices, binary ops and concatenates give every prefix. Being composed
// from slice / concatenate / elementwise ops, the scans batch and differentiate through those
// rules: cumsum's vjp comes out as a reverse cumsum, and cumprod's is exact with zeros in the
// input (products are never divided back out).
#include <cmath>

#include "lanes/array_ops.h"
#include "ops/internal.h"
#include "primitives/util.h"

namespace lanes {

namespace {

using Combine = Tensor (*)(const Tensor&, const Tensor&);

Tensor scan(const Tensor& x, int64_t axis, bool reverse, Combine combine, const char* op) {
  check(x.defined(), op, ": x is an undefined tensor");
  check(x.ndim() > 0, op, ": needs a tensor with at least one dim, got shape ", fmt(x.shape()));
  const int64_t a = prim::normalize_axis(axis, x.ndim(), op);
  const int64_t n = x.shape()[a];
  Tensor y = x;
  for (int64_t s = 1; s < n; s *= 2) {
    // Forward: y[i] = y[i - s] (+) y[i] for i >= s. Reverse: y[i] = y[i] (+) y[i + s] for i < n -
    // s.
    const Tensor lo = slice_axis(y, a, 0, n - s), hi = slice_axis(y, a, s, n);
    const Tensor combined = combine(lo, hi);
    y = reverse ? concatenate({combined, slice_axis(y, a, n - s, n)}, a)
                : concatenate({slice_axis(y, a, 0, s), combined}, a);
  }
  return y;
}

// Bool sums and products count in int32, as sum and prod do.
Tensor counted(const Tensor& x) {
  return x.defined() && x.dtype() == DType::Bool ? cast(x, DType::Int32) : x;
}

// log(exp(a) + exp(b)) without overflow: max + log1p(exp(-|a - b|)).
Tensor logaddexp(const Tensor& a, const Tensor& b) {
  return maximum(a, b) + log1p(exp(-abs(a - b)));
}

}  // namespace

Tensor cumsum(const Tensor& x, int64_t axis, bool reverse) {
  return scan(counted(x), axis, reverse, add, "cumsum");
}

Tensor cumprod(const Tensor& x, int64_t axis, bool reverse) {
  return scan(counted(x), axis, reverse, multiply, "cumprod");
}

Tensor cummax(const Tensor& x, int64_t axis, bool reverse) {
  return scan(x, axis, reverse, maximum, "cummax");
}

Tensor cummin(const Tensor& x, int64_t axis, bool reverse) {
  return scan(x, axis, reverse, minimum, "cummin");
}

Tensor logcumsumexp(const Tensor& x, int64_t axis, bool reverse) {
  check(x.defined(), "logcumsumexp: x is an undefined tensor");
  const Tensor f = is_floating(x.dtype()) ? x : cast(x, DType::Float32);
  return scan(f, axis, reverse, logaddexp, "logcumsumexp");
}

}  // namespace lanes
