// dot_general on concrete tensors: GEMM through BLAS for float32/float64, plain C++ for the
// integer and bool types. Float products with M, N or K equal to 1 (dots, matrix-vector products,
// outer products: what vmap of per-example vector code produces) skip BLAS for the strided loops
// of matmul_small.h, which beat per-matrix sgemm/sgemv calls by 1.2-5x.
//
// The operands are viewed as (batch dims, M dims, K dims) and (batch dims, K dims, N dims). Each
// group of M, K or N dims that is evenly spaced in memory flattens into one dim, so a row- or
// column-major 2-d view goes to BLAS with its leading dimension and a transpose flag, without a
// copy; an operand that does not fit is copied once, contiguously, in that order.
//  - No batch dims: one GEMM with every lhs free dim folded into M (vmap's `x_b @ W`).
//  - Batch dims: a parallel loop over the batch of single-threaded GEMMs, or, for a few large
//    matrices, a serial loop of GEMMs that each split over the pool (gemm.h).
// Float products with small N and K (the rhs at most 64K elements) run libxsmm's JIT kernels
// instead, a call per 64-row block of M, 2x OpenBLAS on this machine (matmul_xsmm.h).
#pragma once

#include <cstdint>
#include <vector>

#include "lanes/tensor.h"

namespace lanes::kernels {

/// Output (batch dims, lhs free dims, rhs free dims), each group in operand order. The dims must
/// be valid (the primitive's infer checked them) and the dtypes equal.
Tensor dot_general(const Tensor& lhs, const Tensor& rhs,
                   const std::vector<int64_t>& lhs_contracting,
                   const std::vector<int64_t>& rhs_contracting,
                   const std::vector<int64_t>& lhs_batch, const std::vector<int64_t>& rhs_batch);

/// Counters since the program started, for tests and benchmarks: GEMM (or integer matmul) calls
/// made, elements of operands copied because their layout did not fit BLAS, and the products
/// (of those GEMM calls) that ran through libxsmm's small-matrix kernels (matmul_xsmm.h).
struct DotCounters {
  int64_t gemm_calls = 0;
  int64_t copied_elements = 0;
  int64_t xsmm_products = 0;
};
DotCounters dot_counters();

}  // namespace lanes::kernels
