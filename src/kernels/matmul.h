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

/// The elementwise tail of a product (bias, activation, mask, cast: its epilogue), run on each
/// block of the product's output as soon as the GEMM has written it, on the thread that wrote
/// it, while the block is in cache, instead of as a pass of its own over the whole output.
class Epilogue {
 public:
  virtual ~Epilogue() = default;
  /// The product's output, before any block (dense and row-major when blocks follow); for a
  /// kernel that returns a view of an operand (a product with the identity), that view, and
  /// `all` follows. A product the kernel allocated has no other owner here.
  virtual void start(const Tensor& product) = 0;
  /// Elements [begin, end) of the output are final. Called from several threads at once.
  virtual void block(int64_t begin, int64_t end) const = 0;
  /// The whole output at once (in parallel), after a kernel that does not finish it by blocks
  /// (small and batch-invariant products, integers, products with the identity).
  virtual void all() const = 0;
};

/// Products of at least this many FLOPs (2-d, no batch dims) check whether a factor is the
/// identity (~128^3: below, a GEMM costs no more than the check).
constexpr double kIdentityCheckFlops = 4e6;

/// Which operands are known to hold only finite values: a compiled graph's constants, checked
/// once when it was built. A product with the identity is a view of the other factor only when
/// that factor is finite; a known-finite one is not scanned again on every call.
struct FiniteOperands {
  bool lhs = false, rhs = false;
};

/// Output (batch dims, lhs free dims, rhs free dims), each group in operand order. The dims must
/// be valid (the primitive's infer checked them) and the dtypes equal. With an epilogue, it runs
/// over the output (by blocks where the kernel allows) before this returns.
Tensor dot_general(const Tensor& lhs, const Tensor& rhs,
                   const std::vector<int64_t>& lhs_contracting,
                   const std::vector<int64_t>& rhs_contracting,
                   const std::vector<int64_t>& lhs_batch, const std::vector<int64_t>& rhs_batch,
                   Epilogue* epilogue = nullptr, FiniteOperands finite = {});

/// Whether every element of a floating-point tensor is finite (no inf, no NaN); true for the
/// other dtypes.
bool all_finite(const Tensor& t);

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
