#include "kernels/gemm.h"

#include <cblas.h>
#include <oneapi/dnnl/dnnl.h>

#include <algorithm>

#include "kernels/gemm_in_order.h"
#include "lanes/determinism.h"
#include "lanes/error.h"
#include "lanes/parallel.h"
#include "runtime/thread_pool.h"

extern "C" void openblas_set_num_threads(int);
extern "C" void omp_set_num_threads(int);

namespace lanes::kernels {
namespace {

// Rows (or columns) per block come in multiples of this, so every block keeps OpenBLAS's
// register tiles full; and a block holds at least kBlockFlops of work (~10 us on one core).
constexpr int64_t kAlign = 16;
constexpr double kBlockFlops = 1e6;

// OpenBLAS's own threads stay unused: it runs on the calling thread, whichever pool thread
// that is (its pthreads build is safe to call from several threads at once).
void blas_single_threaded() {
  static const bool once = (openblas_set_num_threads(1), true);
  (void)once;
}

// oneDNN (Debian's OpenMP build) runs on the calling thread too: OpenMP's team size is a setting
// of each thread, so every thread that calls it sets its own to 1 once.
void dnnl_single_threaded() {
  static thread_local const bool once = (omp_set_num_threads(1), true);
  (void)once;
}

// float32 by oneDNN (bench/gemm_libraries: 177-179 GFLOP/s on one core against OpenBLAS's
// 156-163 for jacobian_mlp's and perex_mlp's products), float64 by OpenBLAS (oneDNN has none).
template <class T>
void blas(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const T* a, int64_t lda, const T* b,
          int64_t ldb, T beta, T* c, int64_t ldc) {
  if constexpr (std::is_same_v<T, float>) {
    dnnl_single_threaded();
    const dnnl_status_t status =
        dnnl_sgemm(ta ? 'T' : 'N', tb ? 'T' : 'N', m, n, k, 1.0f, a, lda, b, ldb, beta, c, ldc);
    check(status == dnnl_success, "gemm: oneDNN's sgemm failed (status ", int(status), ") for ", m,
          " x ", n, " x ", k);
  } else {
    const auto I = [](int64_t v) { return static_cast<int>(v); };
    const CBLAS_TRANSPOSE A = ta ? CblasTrans : CblasNoTrans, B = tb ? CblasTrans : CblasNoTrans;
    cblas_dgemm(CblasRowMajor, A, B, I(m), I(n), I(k), 1.0, a, I(lda), b, I(ldb), beta, c, I(ldc));
  }
}

}  // namespace

template <class T>
bool gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const T* a, int64_t lda, const T* b,
          int64_t ldb, T beta, T* c, int64_t ldc, const RowsDone* rows_done) {
  if (batch_invariant()) {
    check(beta == T(0) || beta == T(1), "gemm: beta ", beta, " in batch-invariant mode");
    const Strided<const T> sa = ta ? Strided<const T>{a, 1, lda} : Strided<const T>{a, lda, 1};
    const Strided<const T> sb = tb ? Strided<const T>{b, 1, ldb} : Strided<const T>{b, ldb, 1};
    gemm_in_order<T>(m, n, k, sa, sb, {c, ldc, 1}, beta == T(1));
    return false;
  }
  blas_single_threaded();
  const double flops = 2.0 * double(m) * double(n) * double(k);
  // Not on num_threads(): the blocks (and so the bits) are the same at every thread count.
  if (flops < kParallelGemmFlops || runtime::in_parallel_region() || std::max(m, n) < 2 * kAlign) {
    blas(ta, tb, m, n, k, a, lda, b, ldb, beta, c, ldc);
    return false;
  }
  // At most 2 blocks a core: each block packs B again, so 8 blocks of a 512^3 product made
  // jacobian_mlp 13% slower than 4 (and 2 a core still lets a thread take a stalled one's share).
  const int64_t most_blocks = runtime::max_chunks() / 2;
  // Split the longer side of C; each block is its own single-threaded GEMM. Rows also when an
  // epilogue waits and C has rows enough for every block: its chain then runs on each block
  // while it is in cache, not as a pass after the product.
  const bool by_rows = m >= n || (rows_done && m >= most_blocks * 4 * kAlign);
  const int64_t len = by_rows ? m : n, units = (len + kAlign - 1) / kAlign;
  const double unit_flops = flops / double(units);
  const auto grain = std::max<int64_t>(
      {1, static_cast<int64_t>(kBlockFlops / unit_flops), (units + most_blocks - 1) / most_blocks});
  parallel_for(units, grain, [&](int64_t u0, int64_t u1) {
    const int64_t i0 = u0 * kAlign, i1 = std::min(len, u1 * kAlign);
    if (by_rows) {
      blas(ta, tb, i1 - i0, n, k, a + (ta ? i0 : i0 * lda), lda, b, ldb, beta, c + i0 * ldc, ldc);
      if (rows_done) (*rows_done)(i0, i1);
    } else {
      blas(ta, tb, m, i1 - i0, k, a, lda, b + (tb ? i0 * ldb : i0), ldb, beta, c + i0, ldc);
    }
  });
  return by_rows && rows_done;
}

template bool gemm<float>(bool, bool, int64_t, int64_t, int64_t, const float*, int64_t,
                          const float*, int64_t, float, float*, int64_t, const RowsDone*);
template bool gemm<double>(bool, bool, int64_t, int64_t, int64_t, const double*, int64_t,
                           const double*, int64_t, double, double*, int64_t, const RowsDone*);

}  // namespace lanes::kernels
