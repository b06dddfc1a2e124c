// Reduction kernels: sum, prod, max, min over a set of axes, and argmax/argmin along one axis.
//
// Inputs may have any strides (0 included); outputs are fresh contiguous tensors. The kernel
// orders the dims by the input's strides, so whatever the layout it either reduces rows that are
// contiguous in memory (SIMD blocks) or accumulates whole contiguous rows into a row of partial
// results (vector adds). Floating sums are pairwise: blocks of 2048 elements summed in SIMD
// lanes, then a binary tree over the blocks (and over rows), so the error grows with log(n), not
// n. The tree depends only on the shapes, never on the thread count: results are deterministic.
//
// Integer sum/prod wrap around (two's complement, no undefined behaviour); max/min propagate NaN
// (numpy); bool max/min are any/all.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "lanes/tensor.h"

namespace lanes::kernels {

enum class ReduceOp : uint8_t { Sum, Prod, Max, Min };
enum class ArgReduceOp : uint8_t { ArgMax, ArgMin };

/// lax-style names: "reduce_sum", "reduce_prod", "reduce_max", "reduce_min".
const char* reduce_name(ReduceOp op);
/// "argmax", "argmin".
const char* arg_reduce_name(ArgReduceOp op);

/// x reduced over `axes` (sorted, unique, in range); the output drops those axes and keeps x's
/// dtype. An empty reduction gives the identity (0, 1, the lowest or highest value).
Tensor reduce(ReduceOp op, const Tensor& x, const std::vector<int64_t>& axes);

/// One reduction of float32/float64 values fed in pieces, reduced exactly as reduce() reduces a
/// contiguous row of the same values (the same blocks and pairwise tree). A fused chain's tail
/// reduction (kernels/fused.cpp) feeds its row tile by tile, so fusing a reduction, or how many
/// outputs share the pass, never changes a result.
class RowReduction {
 public:
  virtual ~RowReduction() = default;
  /// The next n contiguous values of the row.
  virtual void feed(const void* p, int64_t n) = 0;
  /// Writes the row's result to *out and starts the next row.
  virtual void finish(void* out) = 0;
};
std::unique_ptr<RowReduction> make_row_reduction(ReduceOp op, DType dtype);

/// Int64 index of the first maximum (minimum) along `axis`, whose size must be > 0; a NaN counts
/// as the extreme (numpy). The output drops `axis`.
Tensor arg_reduce(ArgReduceOp op, const Tensor& x, int64_t axis);

}  // namespace lanes::kernels
