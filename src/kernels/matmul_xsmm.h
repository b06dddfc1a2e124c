// GEMMs with small N and K through libxsmm's JIT kernels, for any M and batch.
//
// OpenBLAS 0.3.21 does not know this machine's CPU (AMD family 26, Zen 5, full-width AVX-512) and
// runs its Haswell (AVX2) kernels, which on tall-skinny products (N, K up to a few hundred, M
// large: a batch folded into M, as vmap does) reach half of what libxsmm's AVX-512 code does.
// One libxsmm kernel generated for the exact (64-row block, N, K) shape and called once per block
// of M, one thread, loaded machine: 1.9-2.5x as fast as OpenBLAS for (M, N, K) = (3200, 32, 32),
// (100, 128, 32), (512, 128, 64), (256, 10, 784), (4096, 128, 512), (1024, 64, 1024), float32 and
// float64 alike. With OpenBLAS's AVX-512 kernels forced (OPENBLAS_CORETYPE=SkylakeX) the gap is
// 1.0-1.4x on those shapes (2x on (256, 10, 784)) and libxsmm is slower from N = K = 512 (0.86x
// for 512^3), so only products whose rhs (K x N) holds at most 64K elements (256 KB of float32: it
// stays in L2 while the blocks of M stream past) and whose N and K are at most 1024 come here;
// larger ones stay on OpenBLAS, which threads them itself.
//
// libxsmm's JIT takes a transposed B but not a transposed A (1.17 returns no kernel). Its
// column-major C^T = B^T A^T is our row-major C = A B, so our lhs is its B and our rhs its A: a
// column-major lhs is fine, a column-major rhs is first transposed into a row-major copy (k x n),
// which pays from 32 rows (1.35x at (32, 32, 32); 0.9-1.0x at 16 rows).
#pragma once

#include <cstdint>

#include "kernels/gemm.h"

namespace lanes::kernels {

/// One operand of a batch of products: matrix i starts at data + batch_offsets[i]; it is
/// row-major with rows `ld` apart, or (trans) column-major with columns `ld` apart.
template <class T>
struct XsmmOperand {
  const T* data = nullptr;
  const int64_t* batch_offsets = nullptr;
  bool trans = false;
  int64_t ld = 1;
};

/// Whether libxsmm should run products of an (m x k) lhs and a (k x n) rhs (`rhs_trans`: the rhs
/// is column-major), float32 or float64, where m, n, k >= 2.
bool xsmm_suits(int64_t m, int64_t n, int64_t k, bool rhs_trans);

/// Where the products go: out_i (m x n) at data + i * batch_stride, rows ldc apart.
template <class T>
struct XsmmOutput {
  T* data = nullptr;
  int64_t batch_stride = 0, ldc = 1;
};

/// out_i = a_i b_i for i < batch, in parallel over 64-row blocks of every matrix (serially
/// inside a parallel region). Returns false, having written nothing, when libxsmm has no kernel
/// for the shape. T is float or double. `rows_done` hears of the finished rows of the stacked
/// (batch * m) x n output, a few blocks at a time; the output must then be dense.
template <class T>
bool xsmm_products(const XsmmOperand<T>& a, const XsmmOperand<T>& b, int64_t batch, int64_t m,
                   int64_t n, int64_t k, const XsmmOutput<T>& out,
                   const RowsDone* rows_done = nullptr);

}  // namespace lanes::kernels
