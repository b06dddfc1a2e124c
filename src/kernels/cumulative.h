// Cumulative-sum kernel along one axis (the one scan with a primitive: the others are composed
// in src/ops/cumulative.cpp).
#pragma once

#include <cstdint>

#include "lanes/tensor.h"

namespace lanes::kernels {

/// Running sums of x along `axis` (from the far end when `reverse`), in x's dtype: a fresh
/// contiguous tensor of x's shape. Integers wrap (two's complement); not for bool. Sequential
/// along the axis, vectorized across the dims after it, threads over the rest.
Tensor cumsum(const Tensor& x, int64_t axis, bool reverse);

}  // namespace lanes::kernels
