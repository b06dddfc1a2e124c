// Cumulative kernels: running sums along one axis, and the index of the running maximum or
// minimum along the last axis (cummax / cummin gather at it).
#pragma once

#include <cstdint>

#include "lanes/tensor.h"

namespace lanes::kernels {

/// Running sums of x along `axis` (from the far end when `reverse`), in x's dtype: a fresh
/// contiguous tensor of x's shape. Integers wrap (two's complement); not for bool. Sequential
/// along the axis, vectorized across the dims after it, threads over the rest.
Tensor cumsum(const Tensor& x, int64_t axis, bool reverse);

/// Int64 tensor of x's shape: along each row of the last axis, the index of the maximum (min:
/// minimum) of elements 0..i (i..n-1 when `reverse`), the first one seen on ties; once a NaN is
/// seen it stays the extreme (numpy's maximum.accumulate). x has at least one dim; any layout.
Tensor arg_cum_last(const Tensor& x, bool min, bool reverse);

}  // namespace lanes::kernels
