// Sorting kernel: stable argsort of every row along the last axis.
#pragma once

#include "lanes/tensor.h"

namespace lanes::kernels {

/// Int64 tensor of x's shape: row r of the result lists the indices of row r of x (the last
/// axis) in sorted order, ascending or descending. Stable: equal values keep their order (in
/// both directions, as jax.lax.top_k). NaN sorts after every number, ascending or descending
/// (numpy). x has at least one dim; any layout.
Tensor argsort_last(const Tensor& x, bool descending);

}  // namespace lanes::kernels
