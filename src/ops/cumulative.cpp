// Cumulative scans along one axis (jax.lax.cumsum / cumprod / cummax / cummin / cumlogsumexp).
// cumsum binds its primitive; cummax / cummin gather x at the index of the running extreme
// (src/primitives/cumulative.h), so their derivatives are gather's. cumprod and logcumsumexp are
// composed as a Hillis-Steele scan: step s combines each element with the one s places before it
// (after it when reversed), for s = 1, 2, 4, ... < n. The windows combined at each step are
// disjoint, so log2(n) slices, binary ops and concatenates give every prefix. Being composed from
// slice / concatenate / elementwise ops, they batch and differentiate through those rules;
// cumprod's derivative is exact with zeros in the input (products are never divided back out).
// They cost about 2 log2(n) passes over x (and more for the derivative) where a kernel takes one.
#include <cmath>

#include "lanes/array_ops.h"
#include "ops/internal.h"
#include "primitives/cumulative.h"
#include "primitives/util.h"

namespace lanes {

namespace {

using Combine = Tensor (*)(const Tensor&, const Tensor&);

int64_t scan_axis(const Tensor& x, int64_t axis, const char* op) {
  check(x.defined(), op, ": x is an undefined tensor");
  check(x.ndim() > 0, op, ": needs a tensor with at least one dim, got shape ", fmt(x.shape()));
  return prim::normalize_axis(axis, x.ndim(), op);
}

Tensor scan(const Tensor& x, int64_t axis, bool reverse, Combine combine, const char* op) {
  const int64_t a = scan_axis(x, axis, op);
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
  const int64_t a = scan_axis(x, axis, "cumsum");
  return ops::apply<prim::CumSum>({counted(x)}, a, reverse);
}

Tensor cumprod(const Tensor& x, int64_t axis, bool reverse) {
  return scan(counted(x), axis, reverse, multiply, "cumprod");
}

namespace {

// x gathered along `axis` at the index of its running extreme: moved last, the gather matches
// every other dim (batch_dims), as sort does.
Tensor running_extreme(const Tensor& x, int64_t axis, bool min, bool reverse, const char* op) {
  const int64_t a = scan_axis(x, axis, op);
  const Tensor moved = moveaxis(x, a, -1);
  const Tensor idx = ops::apply<prim::ArgCum>({moved}, min, reverse);
  return moveaxis(gather(moved, idx, x.ndim() - 1, x.ndim() - 1), -1, a);
}

}  // namespace

Tensor cummax(const Tensor& x, int64_t axis, bool reverse) {
  return running_extreme(x, axis, false, reverse, "cummax");
}

Tensor cummin(const Tensor& x, int64_t axis, bool reverse) {
  return running_extreme(x, axis, true, reverse, "cummin");
}

Tensor logcumsumexp(const Tensor& x, int64_t axis, bool reverse) {
  check(x.defined(), "logcumsumexp: x is an undefined tensor");
  const Tensor f = is_floating(x.dtype()) ? x : cast(x, DType::Float32);
  return scan(f, axis, reverse, logaddexp, "logcumsumexp");
}

}  // namespace lanes
