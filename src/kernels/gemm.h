// One GEMM on lanes' thread pool: BLAS runs single-threaded (OpenBLAS's pthreads build, set to
// one thread), and lanes splits a large product into blocks of rows (or of columns, when the
// output is short and wide) that parallel_for's threads claim. So GEMMs share the one pool with
// every other kernel: no second team of threads, nothing that spins while another process works.
#pragma once

#include <cstdint>
#include <functional>

namespace lanes::kernels {

/// Told that rows [begin, end) of a product's output are final, on the thread that wrote them
/// (matmul.h's Epilogue runs on them while they are in cache).
using RowsDone = std::function<void(int64_t begin, int64_t end)>;

/// C (m x n, rows ldc apart) = A (m x k) B (k x n) + beta C, all row-major; A or B are read
/// transposed (stored k x m, n x k) when ta or tb. Parallel over blocks of C when the product
/// is large and the caller is not already running in parallel. Returns whether it told
/// `rows_done` of every row of C: only when it split C by rows over the pool.
template <class T>
bool gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const T* a, int64_t lda, const T* b,
          int64_t ldb, T beta, T* c, int64_t ldc, const RowsDone* rows_done = nullptr);

/// Products of at least this many flops (2 m n k) are split over the pool.
inline constexpr double kParallelGemmFlops = 4e6;

}  // namespace lanes::kernels
