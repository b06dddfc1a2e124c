#include "kernels/matmul_small.h"

// GCC 12 reports the _mm512_undefined_* placeholders inside its own AVX-512 intrinsics as
// "(may be) used uninitialized" when xsimd inlines them; the warning is a false positive.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"

#include <xsimd/xsimd.hpp>

#include <algorithm>
#include <cstdint>
#include <type_traits>
#include <vector>

#if defined(__SSE2__)
#include <immintrin.h>
#endif

#include "lanes/parallel.h"

namespace lanes::kernels {

namespace {

template <class T>
using Vec = xsimd::batch<T>;
template <class T>
constexpr int64_t kWidth = Vec<T>::size;

// Multiply-adds one thread should get at least (a few microseconds; a dispatch costs ~1 us).
constexpr int64_t kGrain = 32768;
// Output elements per column block of the row-sum form: the accumulated block stays in L1.
constexpr int64_t kBlock = 1024;
// Outputs at least this large are written with non-temporal stores: they would not stay in the
// caches anyway, and skipping the read-for-ownership of each line makes the 411 MB of
// (256, 784, 1) x (256, 1, 512) take 7.8-8.9 ms, where filling 411 MB with ordinary stores takes
// 11-17 ms (bench/dot_cases).
constexpr int64_t kStreamBytes = int64_t{64} << 20;

// ---- dot products -------------------------------------------------------------------------------

// vmap(dot) over (4096, 512) float32: 0.84-0.89 ms as 4096 sgemm calls, 0.16-0.18 ms with this
// (reading the 16 MB: 0.15 ms).
template <class T>
T dot_unit(const T* x, const T* y, int64_t k) {
  constexpr int64_t w = kWidth<T>;
  Vec<T> s0(T(0)), s1(T(0)), s2(T(0)), s3(T(0));  // four chains hide the FMA latency
  int64_t p = 0;
  for (; p + 4 * w <= k; p += 4 * w) {
    s0 = xsimd::fma(Vec<T>::load_unaligned(x + p), Vec<T>::load_unaligned(y + p), s0);
    s1 = xsimd::fma(Vec<T>::load_unaligned(x + p + w), Vec<T>::load_unaligned(y + p + w), s1);
    s2 = xsimd::fma(Vec<T>::load_unaligned(x + p + 2 * w), Vec<T>::load_unaligned(y + p + 2 * w),
                    s2);
    s3 = xsimd::fma(Vec<T>::load_unaligned(x + p + 3 * w), Vec<T>::load_unaligned(y + p + 3 * w),
                    s3);
  }
  for (; p + w <= k; p += w)
    s0 = xsimd::fma(Vec<T>::load_unaligned(x + p), Vec<T>::load_unaligned(y + p), s0);
  T sum = xsimd::hadd((s0 + s1) + (s2 + s3));
  for (; p < k; ++p) sum += x[p] * y[p];
  return sum;
}

template <class T>
void gather(const T* x, int64_t stride, int64_t n, T* to) {
  for (int64_t i = 0; i < n; ++i) to[i] = x[i * stride];
}

// out[e], e = i * len + l: the dot product over K of x (row l of matrix i: x + x_batch[i] +
// l * x_step, elements x_k apart) and y (likewise; y_step is 0 for the one vector of matrix i).
template <class T>
struct Dots {
  const T *x, *y;
  const int64_t *x_batch, *y_batch;
  int64_t len, k, x_step, y_step, x_k, y_k;
  const T* x_at(int64_t i, int64_t l) const { return x + x_batch[i] + l * x_step; }
  const T* y_at(int64_t i, int64_t l) const { return y + y_batch[i] + l * y_step; }
};

// Calls fn(e, i, l) for e in [begin, end), e = i * len + l, without two divisions per output
// (they cost as much as a short dot product).
template <class Fn>
void for_outputs(int64_t begin, int64_t end, int64_t len, Fn&& fn) {
  int64_t i = begin / len, l = begin % len;
  for (int64_t e = begin; e < end; ++e) {
    fn(e, i, l);
    if (++l == len) l = 0, ++i;
  }
}

// Unit-stride x; y unit-stride too, or the vector of each matrix packed once (`pack`).
template <class T>
void dots_unit(const Dots<T>& d, bool pack, int64_t begin, int64_t end, T* out) {
  std::vector<T> buffer(pack ? d.k : 0);
  int64_t packed = -1;
  for_outputs(begin, end, d.len, [&](int64_t e, int64_t i, int64_t l) {
    const T* y = d.y_at(i, l);
    if (pack) {
      if (i != packed) gather(y, d.y_k, d.k, buffer.data()), packed = i;
      y = buffer.data();
    }
    out[e] = dot_unit(d.x_at(i, l), y, d.k);
  });
}

// Any strides: kTile dot products advance together over K, so that when consecutive outputs
// are neighbours in memory (x mapped on its last axis) each cache line serves all of them.
// vmap(dot) with x (512, 4096) mapped on axis 1 measured 7.1-9.1 ms as 4096 GEMMs, 1.0-1.9 ms
// so (a constant trip count for full tiles let GCC vectorize with gathers: 8.0 ms).
template <class T>
void dots_strided(const Dots<T>& d, int64_t begin, int64_t end, T* out) {
  constexpr int64_t kTile = 16;
  for (int64_t e0 = begin; e0 < end; e0 += kTile) {
    const int64_t t = std::min(kTile, end - e0);
    const T* x[kTile];
    const T* y[kTile];
    T acc[kTile] = {};
    for_outputs(e0, e0 + t, d.len, [&](int64_t e, int64_t i, int64_t l) {
      x[e - e0] = d.x_at(i, l), y[e - e0] = d.y_at(i, l);
    });
    for (int64_t p = 0; p < d.k; ++p)
      for (int64_t j = 0; j < t; ++j) acc[j] += x[j][p * d.x_k] * y[j][p * d.y_k];
    std::copy(acc, acc + t, out + e0);
  }
}

template <class T>
void run_dots(const Dots<T>& d, int64_t batch, T* out) {
  const bool x_unit = d.k == 1 || d.x_k == 1, y_unit = d.k == 1 || d.y_k == 1;
  // The one vector of a matrix-vector product is reused by `len` rows: pack it when strided.
  const bool pack = x_unit && !y_unit && d.y_step == 0 && d.len > 1;
  parallel_for(batch * d.len, std::max<int64_t>(1, kGrain / d.k), [&](int64_t begin, int64_t end) {
    if (x_unit && (y_unit || pack))
      dots_unit(d, pack, begin, end, out);
    else
      dots_strided(d, begin, end, out);
  });
}

// ---- sums of scaled rows ------------------------------------------------------------------------

// out[i, l] = sum over p of v_i[p] * r_i[p, l], where each row r_i[p, :] is contiguous: a
// matrix-vector product whose matrix is contiguous along the output (M == 1 with a row-major
// rhs, N == 1 with a column-major lhs).
template <class T>
struct RowSums {
  const T *v, *r;
  const int64_t *v_batch, *r_batch;
  int64_t len, k, v_k, r_k;
};

// y[0, n) += s * row[0, n)
template <class T>
void axpy(T s, const T* row, T* y, int64_t n) {
  constexpr int64_t w = kWidth<T>;
  const Vec<T> vs(s);
  int64_t l = 0;
  for (; l + w <= n; l += w)
    xsimd::fma(vs, Vec<T>::load_unaligned(row + l), Vec<T>::load_unaligned(y + l))
        .store_unaligned(y + l);
  for (; l < n; ++l) y[l] += s * row[l];
}

template <class T>
void run_row_sums(const RowSums<T>& d, int64_t batch, T* out) {
  // Column blocks keep the accumulated outputs in L1, and split a small batch between threads.
  int64_t block = std::min(d.len, kBlock);
  const int64_t threads = num_threads();
  if (batch < threads) {
    const int64_t share = (d.len + threads - 1) / threads;
    block = std::min(block, std::max(kWidth<T>, (share + kWidth<T> - 1) / kWidth<T> * kWidth<T>));
  }
  const int64_t blocks = (d.len + block - 1) / block;
  const int64_t grain = std::max<int64_t>(1, kGrain / (d.k * block));
  parallel_for(batch * blocks, grain, [&](int64_t begin, int64_t end) {
    for (int64_t item = begin; item < end; ++item) {
      const int64_t i = item / blocks, l0 = item % blocks * block;
      const int64_t n = std::min(block, d.len - l0);
      T* y = out + i * d.len + l0;
      const T* v = d.v + d.v_batch[i];
      const T* r = d.r + d.r_batch[i] + l0;
      std::fill(y, y + n, T(0));
      for (int64_t p = 0; p < d.k; ++p) axpy(v[p * d.v_k], r + p * d.r_k, y, n);
    }
  });
}

// ---- outer products -----------------------------------------------------------------------------

// out[i, r, c] = a_i[r] * b_i[c] (K == 1).
template <class T>
struct Outer {
  const T *a, *b;
  const int64_t *a_batch, *b_batch;
  int64_t m, n, a_m, b_n;
};

template <class T>
void store_stream(T* p, const Vec<T>& v) {
#if defined(__AVX512F__)
  if constexpr (sizeof(Vec<T>) == 64) {
    if constexpr (std::is_same_v<T, float>)
      _mm512_stream_ps(p, v);
    else
      _mm512_stream_pd(p, v);
    return;
  }
#endif
#if defined(__AVX__)
  if constexpr (sizeof(Vec<T>) == 32) {
    if constexpr (std::is_same_v<T, float>)
      _mm256_stream_ps(p, v);
    else
      _mm256_stream_pd(p, v);
    return;
  }
#endif
  v.store_aligned(p);  // no streaming store for this width: an ordinary one
}

void stream_fence() {
#if defined(__SSE2__)
  _mm_sfence();  // streaming stores are weakly ordered: publish them before the join
#endif
}

// dst[0, n) = s * src[0, n); streaming stores from the first vector-aligned element.
template <class T>
void scale_row(T s, const T* src, T* dst, int64_t n, bool stream) {
  constexpr int64_t w = kWidth<T>;
  const Vec<T> vs(s);
  int64_t c = 0;
  if (stream) {
    for (; c < n && reinterpret_cast<uintptr_t>(dst + c) % sizeof(Vec<T>) != 0; ++c)
      dst[c] = s * src[c];
    for (; c + w <= n; c += w) store_stream(dst + c, vs * Vec<T>::load_unaligned(src + c));
  } else {
    for (; c + w <= n; c += w) (vs * Vec<T>::load_unaligned(src + c)).store_unaligned(dst + c);
  }
  for (; c < n; ++c) dst[c] = s * src[c];
}

// One sgemm with K = 1 per matrix measured 21-26 ms for (256, 784, 1) x (256, 1, 512) (411 MB
// written), this loop 7.8-8.9 ms.
template <class T>
void run_outer(const Outer<T>& d, int64_t batch, T* out) {
  const bool stream = batch * d.m * d.n * int64_t(sizeof(T)) >= kStreamBytes;
  parallel_for(batch * d.m, std::max<int64_t>(1, kGrain / d.n), [&](int64_t begin, int64_t end) {
    std::vector<T> buffer(d.b_n == 1 ? 0 : d.n);  // b_i packed once when strided
    int64_t packed = -1;
    for (int64_t row = begin; row < end; ++row) {
      const int64_t i = row / d.m, r = row % d.m;
      const T* b = d.b + d.b_batch[i];
      if (d.b_n != 1) {
        if (i != packed) gather(b, d.b_n, d.n, buffer.data()), packed = i;
        b = buffer.data();
      }
      scale_row(d.a[d.a_batch[i] + r * d.a_m], b, out + row * d.n, d.n, stream);
    }
    if (stream) stream_fence();
  });
}

// ---- dispatch -----------------------------------------------------------------------------------

// M == 1 or N == 1 (with K > 1 unless M == N == 1: small_products sends the other K == 1
// products to run_outer): dot products when the matrix is contiguous along K (or nothing is),
// else sums of its rows when it is contiguous along the output. xsimd measured 15.0 ms beside 17.3
// (cblas_sgemv) and 24.0 (sgemm) for (256, 1, 784) x (256, 784, 512); 14.5 beside 17.2 and
// 16.8 for (256, 512, 784) x (256, 784, 1); reading the 411 MB alone took 14.7.
template <class T>
void matrix_vector(const StridedBatch<T>& a, const StridedBatch<T>& b, int64_t batch, T* out) {
  const int64_t k = a.cols;
  if (a.rows == 1 && b.cols == 1) {
    run_dots(Dots<T>{a.data, b.data, a.batch_offsets, b.batch_offsets, 1, k, 0, 0, a.col_stride,
                     b.row_stride},
             batch, out);
    return;
  }
  // The matrix (len x K, or K x len) and the vector (K) of each product.
  const bool lhs_matrix = b.cols == 1;
  const StridedBatch<T>& mat = lhs_matrix ? a : b;
  const StridedBatch<T>& vec = lhs_matrix ? b : a;
  const int64_t len = lhs_matrix ? a.rows : b.cols;
  const int64_t mat_l = lhs_matrix ? a.row_stride : b.col_stride;
  const int64_t mat_k = lhs_matrix ? a.col_stride : b.row_stride;
  const int64_t vec_k = lhs_matrix ? b.row_stride : a.col_stride;
  if (mat_k != 1 && mat_l == 1) {
    run_row_sums(
        RowSums<T>{vec.data, mat.data, vec.batch_offsets, mat.batch_offsets, len, k, vec_k, mat_k},
        batch, out);
    return;
  }
  run_dots(Dots<T>{mat.data, vec.data, mat.batch_offsets, vec.batch_offsets, len, k, mat_l, 0,
                   mat_k, vec_k},
           batch, out);
}

}  // namespace

// K == 1 with M or N > 1 is an outer product: rows of b scaled by the elements of a. When N ==
// 1 it is one row the other way round, a's column scaled by b's one element. As M * N dot
// products of length 1 each output cost a call and a horizontal sum: perex_linear's per-example
// weight gradients, (10, 32) x (10, 1) -> (10, 32, 1), took ~1.7 of its ~5.4 us.
template <class T>
void small_products(const StridedBatch<T>& a, const StridedBatch<T>& b, int64_t batch, T* out) {
  const bool outer = a.cols == 1 && (a.rows > 1 || b.cols > 1);
  if (outer && b.cols == 1)
    run_outer(
        Outer<T>{b.data, a.data, b.batch_offsets, a.batch_offsets, 1, a.rows, 0, a.row_stride},
        batch, out);
  else if (outer)
    run_outer(Outer<T>{a.data, b.data, a.batch_offsets, b.batch_offsets, a.rows, b.cols,
                       a.row_stride, b.col_stride},
              batch, out);
  else
    matrix_vector(a, b, batch, out);
}

template void small_products<float>(const StridedBatch<float>&, const StridedBatch<float>&, int64_t,
                                    float*);
template void small_products<double>(const StridedBatch<double>&, const StridedBatch<double>&,
                                     int64_t, double*);

}  // namespace lanes::kernels
