// Products whose every element is computed in one order fixed by K alone: the contraction in
// passes of 256 k's, each pass one FMA chain (c = fma(a_ik, b_kj, c) for its k's in order, from
// c = -0, so its first step is the plain product a * b), the passes' sums added in order. So C[i,
// j] depends on row i of A, column j of B and nothing else: not on M or N, the layouts, the
// blocking or the threads, and a product gives the same bits for one example as for a batch of them
// (batch invariance, lanes/determinism.h). The passes keep float32 sums of long contractions as
// accurate as a blocked BLAS's.
//
// OpenBLAS and libxsmm give no such promise and measurably break it: on this machine OpenBLAS
// 0.3.21's row i of an (M x N) product differs from the (1 x N) product of row i in 338 of 1377
// shapes (float64, K from 1 to 1000), and libxsmm 1.17's kernels are not one chain either (315 of
// 1500 shapes), so batching a product changed its last bits.
//
// The kernel packs B (or, for a matrix-vector product, A: C^T = B^T A^T) into panels one or two
// SIMD registers wide and runs a register tile of FMAs (6 or 12 rows) down each panel.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>

namespace lanes::kernels {

/// The k's of one pass: part of the order, so changing it changes results.
inline constexpr int64_t kInOrderPass = 256;

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

/// One element of a product: row a and column b (each stepping by the caller's strides along k)
/// and where the result goes.
template <class T>
struct Chain {
  const T* a;
  const T* b;
  T* out;
};

/// `count` elements in the order above, chain_at(o) giving element o: interleaved scalar chains,
/// for products too small or too narrow for the tiles (and batches of them).
template <class T, class ChainAt>
void chains(int64_t count, int64_t k, int64_t a_step, int64_t b_step, bool accumulate,
            const ChainAt& chain_at) {
  constexpr int L = 8;  // chains in flight: FMA latency x throughput
  for (int64_t o0 = 0; o0 < count; o0 += L) {
    const int64_t live = std::min<int64_t>(L, count - o0);
    Chain<T> ch[L];
    for (int j = 0; j < L; ++j) ch[j] = chain_at(o0 + std::min<int64_t>(j, live - 1));
    T c[L];
    for (int j = 0; j < L; ++j) c[j] = accumulate ? *ch[j].out : T(0);
    for (int64_t p0 = 0; p0 < k; p0 += kInOrderPass) {
      T t[L];
      std::fill(t, t + L, T(-0.0));
      for (int64_t p = p0; p < std::min(k, p0 + kInOrderPass); ++p)
        for (int j = 0; j < L; ++j) t[j] = std::fma(ch[j].a[p * a_step], ch[j].b[p * b_step], t[j]);
      for (int j = 0; j < L; ++j) c[j] = p0 == 0 && !accumulate ? t[j] : c[j] + t[j];
    }
    for (int64_t j = 0; j < live; ++j) *ch[j].out = c[j];
  }
}

}  // namespace lanes::kernels
