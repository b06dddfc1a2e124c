// GCC 12 reports xsimd's AVX-512 placeholders as "(may be) used uninitialized"; false positive.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"

#include "kernels/gemm_in_order.h"

#include <xsimd/xsimd.hpp>

#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <type_traits>
#include <vector>

#include "lanes/parallel.h"

namespace lanes::kernels {

namespace {

template <class T>
using Vec = xsimd::batch<T>;
constexpr int64_t kDepth = kInOrderPass;  // a panel (kDepth x its width) stays in L1/L2
constexpr int64_t kBlockRows = 96;        // rows per job: their slice of A stays in L2

/// x * y + z rounded once, in every build. xsimd 8's fma is `x * y + z` on AVX-512, fused only
/// when the compiler contracts it (it did at -O3, not in the sanitizer builds at -O2), so the
/// instruction is named here; without one, lane by lane std::fma (exact, slow).
template <class T>
Vec<T> fused(const Vec<T>& x, const Vec<T>& y, const Vec<T>& z) {
  constexpr bool f32 = std::is_same_v<T, float>;
#if defined(__AVX512F__)
  if constexpr (sizeof(Vec<T>) == 64) {
    if constexpr (f32)
      return _mm512_fmadd_ps(x, y, z);
    else
      return _mm512_fmadd_pd(x, y, z);
  }
#endif
#if defined(__FMA__)
  if constexpr (sizeof(Vec<T>) == 32) {
    if constexpr (f32)
      return _mm256_fmadd_ps(x, y, z);
    else
      return _mm256_fmadd_pd(x, y, z);
  }
  if constexpr (sizeof(Vec<T>) == 16) {
    if constexpr (f32)
      return _mm_fmadd_ps(x, y, z);
    else
      return _mm_fmadd_pd(x, y, z);
  }
#endif
  constexpr size_t W = Vec<T>::size;
  alignas(64) T a[W], b[W], c[W];
  x.store_aligned(a), y.store_aligned(b), z.store_aligned(c);
  for (size_t i = 0; i < W; ++i) c[i] = std::fma(a[i], b[i], c[i]);
  return Vec<T>::load_aligned(c);
}

/// Columns [j0, j0 + w) of rows [p0, p0 + d) of b as a dense (d x width) panel, zero-padded.
template <class T>
void pack_panel(Strided<const T> b, int64_t p0, int64_t d, int64_t j0, int64_t w, int64_t width,
                T* panel) {
  for (int64_t p = 0; p < d; ++p) {
    T* dst = panel + p * width;
    const T* src = b.data + (p0 + p) * b.rows + j0 * b.cols;
    if (b.cols == 1)
      std::copy_n(src, w, dst);
    else
      for (int64_t j = 0; j < w; ++j) dst[j] = src[j * b.cols];
    std::fill(dst + w, dst + width, T(0));
  }
}

/// Where a tile's results go: C itself (rows `ld` apart, unit columns, the whole tile width), or
/// a dense scratch tile copied from and to C by the caller.
template <class T>
struct TileOut {
  T* data;
  int64_t ld;
};

/// One pass's chain per element over rows [0, d) of the panel, c[r][j] = fma(a[r][p],
/// panel[p][j], c[r][j]) for p in order from -0, stored to out (first pass) or added to it.
template <int R, int V, class T>
void tile(const T* a, int64_t ars, int64_t acs, const T* panel, int64_t d, bool first,
          TileOut<T> out) {
  using Vc = Vec<T>;
  constexpr int64_t W = Vc::size, P = V * W;
  Vc c[R][V];
  for (int r = 0; r < R; ++r)
    for (int v = 0; v < V; ++v) c[r][v] = Vc(T(-0.0));  // fma(a, b, -0) == a * b
  for (int64_t p = 0; p < d; ++p) {
    Vc b[V];
    for (int v = 0; v < V; ++v) b[v] = Vc::load_aligned(panel + p * P + v * W);
    for (int r = 0; r < R; ++r) {
      const Vc ar(a[r * ars + p * acs]);
      for (int v = 0; v < V; ++v) c[r][v] = fused(ar, b[v], c[r][v]);
    }
  }
  for (int r = 0; r < R; ++r)
    for (int v = 0; v < V; ++v) {
      T* o = out.data + r * out.ld + v * W;
      (first ? c[r][v] : Vc::load_unaligned(o) + c[r][v]).store_unaligned(o);
    }
}

template <class T>
using TileFn = void (*)(const T*, int64_t, int64_t, const T*, int64_t, bool, TileOut<T>);

/// Tiles of V registers' width: 6 rows for V = 2, 12 for V = 1 (a narrow product).
template <int V, class T>
struct Tiles {
  static constexpr int64_t kRows = V == 2 ? 6 : 12;
  static constexpr TileFn<T> at[] = {tile<1, V, T>, tile<2, V, T>,  tile<3, V, T>,  tile<4, V, T>,
                                     tile<5, V, T>, tile<6, V, T>,  tile<7, V, T>,  tile<8, V, T>,
                                     tile<9, V, T>, tile<10, V, T>, tile<11, V, T>, tile<12, V, T>};
};

/// Rows [i0, i1) of C, panel jp (width P): the pass over k rows [p0, p0 + d).
template <int V, class T>
void block(Strided<const T> a, Strided<T> c, int64_t n, int64_t i0, int64_t i1, int64_t jp,
           int64_t p0, int64_t d, bool first, const T* panel) {
  constexpr int64_t P = V * int64_t(Vec<T>::size), TR = Tiles<V, T>::kRows;
  const int64_t j0 = jp * P, w = std::min(P, n - j0);
  const bool direct = c.cols == 1 && w == P;  // C's rows take the tile's stores as they are
  alignas(64) T scratch[TR * P];
  for (int64_t i = i0; i < i1; i += TR) {
    const int64_t rows = std::min(TR, i1 - i);
    T* ci = c.data + i * c.rows + j0 * c.cols;
    const TileOut<T> out = direct ? TileOut<T>{ci, c.rows} : TileOut<T>{scratch, P};
    if (!direct && !first)
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t j = 0; j < w; ++j) scratch[r * P + j] = ci[r * c.rows + j * c.cols];
    Tiles<V, T>::at[rows - 1](a.data + i * a.rows + p0 * a.cols, a.rows, a.cols, panel, d, first,
                              out);
    if (!direct)
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t j = 0; j < w; ++j) ci[r * c.rows + j * c.cols] = scratch[r * P + j];
  }
}

template <int V, class T>
void run(int64_t m, int64_t n, int64_t k, Strided<const T> a, Strided<const T> b, Strided<T> c,
         bool accumulate) {
  constexpr int64_t P = V * int64_t(Vec<T>::size);
  const int64_t panels = (n + P - 1) / P, blocks = (m + kBlockRows - 1) / kBlockRows;
  // The caller's thread packs (with helpers writing into it) and owns the buffer; pool workers
  // never start a product of their own while running a chunk of this one.
  thread_local std::vector<T, xsimd::aligned_allocator<T>> panel_store;
  const double job_flops =
      2.0 * double(std::min(m, kBlockRows)) * double(P) * double(std::min(k, kDepth));
  const int64_t grain = std::max<int64_t>(1, int64_t(2e5 / job_flops));
  for (int64_t p0 = 0; p0 < k; p0 += kDepth) {
    const int64_t d = std::min(kDepth, k - p0);
    panel_store.resize(size_t(panels * d * P));
    T* store = panel_store.data();
    parallel_for(panels, std::max<int64_t>(1, 8192 / (d * P)), [&](int64_t jb, int64_t je) {
      for (int64_t jp = jb; jp < je; ++jp)
        pack_panel(b, p0, d, jp * P, std::min(P, n - jp * P), P, store + jp * d * P);
    });
    parallel_for(panels * blocks, grain, [&](int64_t jb, int64_t je) {
      for (int64_t job = jb; job < je; ++job) {
        const int64_t ib = job / panels, jp = job % panels;
        block<V>(a, c, n, ib * kBlockRows, std::min(m, (ib + 1) * kBlockRows), jp, p0, d,
                 p0 == 0 && !accumulate, store + jp * d * P);
      }
    });
  }
}

}  // namespace

template <class T>
void gemm_in_order(int64_t m, int64_t n, int64_t k, Strided<const T> a, Strided<const T> b,
                   Strided<T> c, bool accumulate) {
  constexpr int64_t W = Vec<T>::size;
  if (m == 0 || n == 0) return;
  auto at = [&](int64_t i, int64_t j) -> T& { return c.data[i * c.rows + j * c.cols]; };
  if (k <= 1) {  // no sum: the chain is its first step, the plain product (an outer product)
    parallel_for(m, std::max<int64_t>(1, 32768 / n), [&](int64_t i0, int64_t i1) {
      for (int64_t i = i0; i < i1; ++i) {
        const T ai = k == 0 ? T(0) : a.data[i * a.rows];
        for (int64_t j = 0; j < n; ++j) {
          const T pass = k == 0 ? T(0) : ai * b.data[j * b.cols];
          at(i, j) = accumulate ? (k == 0 ? at(i, j) : at(i, j) + pass) : pass;
        }
      }
    });
    return;
  }
  // A few columns (3 to W / 2) and many rows: C^T = B^T A^T packs A instead (the same chains),
  // so the rows fill the SIMD lanes. Fewer (a matrix-vector product), or few rows: interleaved
  // scalar chains, which cost less than packing A would.
  if (n < W / 2 && n > 2 && m >= 4 * W)
    return gemm_in_order<T>(n, m, k, {b.data, b.cols, b.rows}, {a.data, a.cols, a.rows},
                            {c.data, c.cols, c.rows}, accumulate);
  if (n < W / 2)
    return chains<T>(m * n, k, a.cols, b.rows, accumulate, [&](int64_t o) {
      return Chain<T>{a.data + o / n * a.rows, b.data + o % n * b.cols, &at(o / n, o % n)};
    });
  if (n <= W)
    run<1>(m, n, k, a, b, c, accumulate);
  else
    run<2>(m, n, k, a, b, c, accumulate);
}

template void gemm_in_order<float>(int64_t, int64_t, int64_t, Strided<const float>,
                                   Strided<const float>, Strided<float>, bool);
template void gemm_in_order<double>(int64_t, int64_t, int64_t, Strided<const double>,
                                    Strided<const double>, Strided<double>, bool);

}  // namespace lanes::kernels
