// Helpers shared by the op wrappers.
#pragma once

#include <memory>
#include <vector>

#include "lanes/ops.h"
#include "lanes/primitive.h"

namespace lanes::ops {

/// numpy broadcasting of two shapes; throws naming `op` and both shapes when incompatible.
Shape broadcast_shapes(const Shape& a, const Shape& b, const char* op);

/// Sorted, de-duplicated, non-negative axes of a rank-`ndim` tensor (all of them for Axes{}).
std::vector<int64_t> normalize_axes(const Axes& axes, int64_t ndim, const char* op);

/// bind1 of a freshly made primitive: ops::apply<prim::Transpose>({x}, perm).
template <class Prim, class... Args>
Tensor apply(const std::vector<Tensor>& inputs, Args&&... args) {
  return bind1(std::make_shared<const Prim>(std::forward<Args>(args)...), inputs);
}

}  // namespace lanes::ops
