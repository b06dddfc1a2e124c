// One GEMM on lanes' thread pool: BLAS runs single-threaded (OpenBLAS's pthreads build, set to
// one thread), and lanes splits a large product into blocks of rows (or of columns, when the
// output is short and wide) that parallel_for's threads claim. So GEMMs share the one pool with
// every other kernel: no second team of threads, nothing that spins while another process works.
#pragma once

#include <cstdint>

namespace lanes::kernels {

/// C (m x n, rows ldc apart) = A (m x k) B (k x n) + beta C, all row-major; A or B are read
/// transposed (stored k x m, n x k) when ta or tb. Parallel over blocks of C when the product
/// is large and the caller is not already running in parallel.
template <class T>
void gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const T* a, int64_t lda, const T* b,
          int64_t ldb, T beta, T* c, int64_t ldc);

/// Products of at least this many flops (2 m n k) are split over the pool.
inline constexpr double kParallelGemmFlops = 4e6;

}  // namespace lanes::kernels
