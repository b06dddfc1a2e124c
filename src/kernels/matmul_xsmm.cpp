#include "kernels/matmul_xsmm.h"

#include <cblas.h>
#include <libxsmm.h>

#include <algorithm>
#include <cmath>
#include <type_traits>
#include <vector>

#include "lanes/parallel.h"

namespace lanes::kernels {

namespace {

// Rows of M per kernel call: 64 was the best or within noise of it for N, K in 16..256 (32 and
// 128 were up to 15% slower on some shapes), and gives two threads enough blocks from M = 128.
constexpr int64_t kBlockRows = 64;

// The bounds of matmul_xsmm.h: the largest N and K, the largest rhs (K x N elements), and the
// fewest rows of M for which a column-major rhs is worth copying.
constexpr int64_t kMaxNK = 1024;
constexpr int64_t kMaxRhsElements = 65536;
constexpr int64_t kMinRowsForRhsCopy = 32;
// and the most multiply-adds of a product whose column-major rhs is copied for libxsmm: larger
// ones go to oneDNN, which packs a transposed rhs as it goes. (512, 256) x (256, 256)^T took
// 256-285 us through the copy and libxsmm, 218-222 us by oneDNN (195-200 with the rhs stored
// (K, N)); followed by tanh, 316-323 against 267-269.
constexpr int64_t kMaxRhsCopyMacs = int64_t{1} << 22;
// Finished rows are reported once they hold this many elements: 16 KiB of float32, in L1.
constexpr int64_t kReportElements = 4096;

template <class T>
using Kernel =
    std::conditional_t<std::is_same_v<T, float>, libxsmm_smmfunction, libxsmm_dmmfunction>;

// The kernel for row-major C (rows x n, rows ldc apart) = A (rows x k) B (k x n, rows ldb apart),
// A row-major with rows lda apart or (lhs_trans) column-major with columns lda apart. libxsmm is
// column-major: it computes C^T = B^T A^T, so B is its first operand, A its second (transposed
// there when ours is column-major). Null when libxsmm has no kernel.
template <class T>
Kernel<T> dispatch(int64_t rows, int64_t n, int64_t k, bool lhs_trans, int64_t lda, int64_t ldb,
                   int64_t ldc) {
  // libxsmm_init is idempotent but not free; a function-local static runs it once, thread-safely,
  // before the first dispatch.
  static const bool initialised = (libxsmm_init(), true);
  (void)initialised;
  const libxsmm_blasint xm = libxsmm_blasint(n), xn = libxsmm_blasint(rows),
                        xk = libxsmm_blasint(k), xlda = libxsmm_blasint(ldb),
                        xldb = libxsmm_blasint(lda), xldc = libxsmm_blasint(ldc);
  const int flags = LIBXSMM_GEMM_FLAG_BETA_0 | (lhs_trans ? LIBXSMM_GEMM_FLAG_TRANS_B : 0);
  const int prefetch = LIBXSMM_GEMM_PREFETCH_NONE;  // the kernels take (a, b, c) only
  if constexpr (std::is_same_v<T, float>)
    return libxsmm_smmdispatch(xm, xn, xk, &xlda, &xldb, &xldc, nullptr, nullptr, &flags,
                               &prefetch);
  else
    return libxsmm_dmmdispatch(xm, xn, xk, &xlda, &xldb, &xldc, nullptr, nullptr, &flags,
                               &prefetch);
}

// dst (k x n, row-major, dense) = the column-major matrix at src (columns ld apart), by
// OpenBLAS's omatcopy: 3-5x faster than a scalar loop over 16 x 16 tiles at the sizes that take
// this copy (one thread: 0.31 against 1.67 us for 64 x 64, 2.3 against 6.5 for 128 x 128).
void transpose_into(const float* src, int64_t ld, int64_t k, int64_t n, float* dst) {
  cblas_somatcopy(CblasRowMajor, CblasTrans, int(n), int(k), 1.0f, src, int(ld), dst, int(n));
}
void transpose_into(const double* src, int64_t ld, int64_t k, int64_t n, double* dst) {
  cblas_domatcopy(CblasRowMajor, CblasTrans, int(n), int(k), 1.0, src, int(ld), dst, int(n));
}

// The rhs of every product as a dense row-major matrix: one copy when every product shares it
// (a broadcast batch dim), else one per product. Fills `copies` and `offsets`.
template <class T>
void row_major_rhs(const XsmmOperand<T>& b, int64_t batch, int64_t k, int64_t n,
                   std::vector<T>& copies, std::vector<int64_t>& offsets) {
  const int64_t* in = b.batch_offsets;
  const bool shared = std::all_of(in, in + batch, [&](int64_t o) { return o == in[0]; });
  const int64_t count = shared ? 1 : batch, size = k * n;
  copies.resize(size_t(count * size));
  offsets.resize(size_t(batch));
  for (int64_t i = 0; i < batch; ++i) offsets[i] = shared ? 0 : i * size;
  parallel_for(count, std::max<int64_t>(1, 32768 / size), [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i)
      transpose_into(b.data + in[i], b.ld, k, n, copies.data() + i * size);
  });
}

}  // namespace

bool xsmm_suits(int64_t m, int64_t n, int64_t k, bool rhs_trans) {
  return m >= 2 && n >= 2 && k >= 2 && n <= kMaxNK && k <= kMaxNK && n * k <= kMaxRhsElements &&
         (!rhs_trans || (m >= kMinRowsForRhsCopy && m * n * k < kMaxRhsCopyMacs));
}

// A product of too few row blocks to occupy two threads splits its columns in two as well: at
// M = 64 (one block) rnn_scan's per-step h W_h (64 x 128 x 512) ran on one thread, 51 us. Each
// half is the same kernel over half of B's and C's columns, so every element's sum is computed as
// before; the split depends on the shape alone, so the bits do not depend on the thread count.
constexpr double kColumnSplitFlops = 4e6;

template <class T>
bool xsmm_products(const XsmmOperand<T>& a, const XsmmOperand<T>& b, int64_t batch, int64_t m,
                   int64_t n, int64_t k, const XsmmOutput<T>& out, const RowsDone* rows_done) {
  const int64_t block = std::min(m, kBlockRows), full = m / block, rest = m % block;
  const int64_t blocks = full + (rest ? 1 : 0);
  const bool halves = batch * blocks < 2 && rest == 0 && n % 32 == 0 &&
                      2.0 * double(m) * double(n) * double(k) >= kColumnSplitFlops;
  const int64_t cols = halves ? n / 2 : n;
  const int64_t ldb = b.trans ? n : b.ld, ldc = out.ldc;
  // Dispatched once here, not per block: a cached dispatch still costs ~0.15 us, a tenth of a
  // 64 x 32 x 32 block.
  const Kernel<T> kernel = dispatch<T>(block, cols, k, a.trans, a.ld, ldb, ldc);
  const Kernel<T> tail = rest ? dispatch<T>(rest, cols, k, a.trans, a.ld, ldb, ldc) : kernel;
  if (!kernel || !tail) return false;
  const T* pb = b.data;
  const int64_t* b_offsets = b.batch_offsets;
  std::vector<T> copies;
  std::vector<int64_t> copy_offsets;
  if (b.trans) {
    row_major_rhs(b, batch, k, n, copies, copy_offsets);
    pb = copies.data();
    b_offsets = copy_offsets.data();
  }
  const int64_t a_step = a.trans ? block : block * a.ld;  // to the next block of rows
  const double flops = 2.0 * double(block) * double(cols) * double(k);
  if (halves) {
    parallel_for(2, 1, [&](int64_t begin, int64_t end) {
      for (int64_t h = begin; h < end; ++h)
        kernel(pb + b_offsets[0] + h * cols, a.data + a.batch_offsets[0], out.data + h * cols);
    });
    if (rows_done)  // every row is final only now: told in parallel, a few rows at a time
      parallel_for(m, std::max<int64_t>(1, kReportElements / n),
                   [&](int64_t begin, int64_t end) { (*rows_done)(begin, end); });
    return true;
  }
  // At least ~1 MFLOP a chunk (~5 us at one core's rate): with 0.2 MFLOP (the 2e5 of a few us at
  // scalar speed) a (100, 32) x (32, 32) product went to the pool as two 1-us chunks, and
  // fc_batch_jacobian's 40 products were 8% slower (1.03 against 0.95 ms, 6 rounds alternated).
  // Rounded up: two 64-row blocks of 0.5 MFLOP (lstm_perex's (100, 128) x (128, 32)) went to the
  // pool as two chunks, 10.7 us against 7.2 on one thread.
  const auto grain = static_cast<int64_t>(std::max(1.0, std::ceil(1e6 / flops)));
  parallel_for(batch * blocks, grain, [&](int64_t begin, int64_t end) {
    int64_t pending = -1;  // the first stacked row not yet reported
    for (int64_t t = begin; t < end; ++t) {
      const int64_t i = t / blocks, r = t % blocks;
      const T* pa = a.data + a.batch_offsets[i] + r * a_step;
      T* pc = out.data + i * out.batch_stride + r * block * ldc;
      (r < full ? kernel : tail)(pb + b_offsets[i], pa, pc);
      if (!rows_done) continue;
      // Consecutive blocks are consecutive rows of the stacked output; reported a few at a time
      // (a 64 x 32 block alone is two tiles of the epilogue's pass, each with its set-up).
      const int64_t first = i * m + r * block, last = first + (r < full ? block : rest);
      if (pending < 0) pending = first;
      if ((last - pending) * n >= kReportElements || t + 1 == end) {
        (*rows_done)(pending, last);
        pending = -1;
      }
    }
  });
  return true;
}

template bool xsmm_products<float>(const XsmmOperand<float>&, const XsmmOperand<float>&, int64_t,
                                   int64_t, int64_t, int64_t, const XsmmOutput<float>&,
                                   const RowsDone*);
template bool xsmm_products<double>(const XsmmOperand<double>&, const XsmmOperand<double>&, int64_t,
                                    int64_t, int64_t, int64_t, const XsmmOutput<double>&,
                                    const RowsDone*);

}  // namespace lanes::kernels
