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

/// *acc = op(*acc, op over p[0, n)) for n contiguous float32/float64 values of `dtype` (a fused
/// chain's tail reduction, tile by tile). `identity` writes op's identity to *acc instead.
void reduce_into(ReduceOp op, DType dtype, const void* p, int64_t n, void* acc);
void reduce_identity(ReduceOp op, DType dtype, void* acc);

/// Int64 index of the first maximum (minimum) along `axis`, whose size must be > 0; a NaN counts
/// as the extreme (numpy). The output drops `axis`.
Tensor arg_reduce(ArgReduceOp op, const Tensor& x, int64_t axis);

}  // namespace lanes::kernels
