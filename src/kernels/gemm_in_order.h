// Products whose every element is computed in one order fixed by K alone: the contraction in
// passes of 256 k's, each pass one FMA chain (c = fma(a_ik, b_kj, c) for its k's in order, from
// c = 0), the passes' sums added in order. So C[i, j] depends on row i of A, column j of B and
// nothing else: not on M or N, the layouts, the blocking or the threads, and a product gives the
// same bits for one example as for a batch of them (batch invariance, lanes/determinism.h). The
// passes keep float32 sums of long contractions as accurate as a blocked BLAS's.
//
// OpenBLAS and libxsmm give no such promise and measurably break it: on this machine OpenBLAS
// 0.3.21's row i of an (M x N) product differs from the (1 x N) product of row i in 338 of 1377
// shapes (float64, K from 1 to 1000), and libxsmm 1.17's kernels are not one chain either (315 of
// 1500 shapes), so batching a product changed its last bits.
//
// The kernel packs B (or, for a matrix-vector product, A: C^T = B^T A^T) into panels one or two
// SIMD registers wide and runs a register tile of FMAs (6 or 12 rows) down each panel.
#pragma once

#include <cstdint>

namespace lanes::kernels {

/// A strided matrix: element (i, j) at data[i * rows + j * cols].
template <class T>
struct Strided {
  T* data;
  int64_t rows, cols;
};

/// C (m x n) = A (m x k) B (k x n) in the order above, or (accumulate) C + A B: C plus the
/// passes' sums, added in order. Parallel over blocks of C when large (the blocks do not change
/// any element's chain).
template <class T>
void gemm_in_order(int64_t m, int64_t n, int64_t k, Strided<const T> a, Strided<const T> b,
                   Strided<T> c, bool accumulate = false);

}  // namespace lanes::kernels
