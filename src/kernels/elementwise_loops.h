// The loop machinery of the elementwise kernels: one n-d iteration space shared by the output
// and its operands, split over threads, and row loops that run an op functor on xsimd batches
// (float32/float64 functors with `simd = true`) or element by element.
//
// An op functor F has `template <class V> V operator()(V...) const` for V = T (scalar, used for
// integer dtypes and ops without a batch form) and V = xsimd::batch<T> (when F::simd and T is
// float/double), plus `static constexpr bool simd` and `static constexpr int64_t grain` (the
// elements one thread should get at least: ~32K for cheap ops, ~8K for exp-class ones).
//
// Batch-form ops never run scalar code, not even for the tail or for strided operands: the tail
// is padded into a full batch and strided rows are gathered into a buffer, so a value gives the
// same result wherever it sits (contiguous, strided, broadcast, vmapped or not).
#pragma once

// GCC 12 reports the _mm512_undefined_* placeholders inside its own AVX-512 intrinsics as
// "(may be) used uninitialized" when xsimd inlines them; the warning is a false positive.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"

#include <xsimd/xsimd.hpp>
#if defined(__AVX512F__)
#include <immintrin.h>
#endif

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdlib>
#include <type_traits>

#include "core/strided.h"
#include "lanes/parallel.h"
#include "lanes/tensor.h"

namespace lanes::kernels::loops {

template <class T>
inline constexpr bool kFloat = std::is_same_v<T, float> || std::is_same_v<T, double>;

/// Whether functor F runs on xsimd batches of T.
template <class F, class T>
inline constexpr bool kSimd = F::simd&& kFloat<T>;

/// Elements per gather buffer for strided operands (a few KB: stays in L1).
inline constexpr int64_t kBuffer = 512;

/// The coalesced iteration space of an output (operand 0, contiguous) and K-1 inputs.
template <size_t K>
struct Space {
  Shape shape;
  std::array<Strides, K> strides;
};

/// The output may be a dense permutation (empty_in_order_of): its dims are then visited in
/// memory order, which makes it contiguous again for the row loops.
template <size_t K>
Space<K> make_space(const Tensor& out, const std::array<const Tensor*, K - 1>& inputs) {
  Space<K> s{out.shape(), {}};
  s.strides[0] = out.strides();
  for (size_t k = 1; k < K; ++k) s.strides[k] = inputs[k - 1]->strides();
  if (!out.is_contiguous()) {
    const std::vector<size_t> order = detail::memory_order(s.strides[0]);
    Space<K> sorted{Shape(order.size()), {}};
    for (size_t i = 0; i < order.size(); ++i) {
      sorted.shape[i] = s.shape[order[i]];
      for (size_t k = 0; k < K; ++k) sorted.strides[k].push_back(s.strides[k][order[i]]);
    }
    s = std::move(sorted);
  }
  detail::coalesce(s.shape, s.strides);
  return s;
}

/// Whether some input walks the last dim with a larger stride than the one before it (a
/// transposed view): row-by-row iteration would then touch a new cache line - and, for wide
/// tensors, a new page - per element, so the last two dims are visited in tiles instead. Unless
/// the last two dims span few elements: then the lines a row touches are still cached for the
/// next rows, and whole rows beat 16-element tiles (a (100, 32, 128) add of a transposed operand
/// took 0.63 ms in tiles, 0.17 ms by rows).
template <size_t K>
bool needs_tiles(const Space<K>& s) {
  constexpr int64_t kCachedSlab = int64_t{1} << 15;  // elements: 128 KiB of float32, in L2
  const size_t nd = s.shape.size();
  if (nd < 2 || s.shape[nd - 1] * s.shape[nd - 2] <= kCachedSlab) return false;
  for (size_t k = 1; k < K; ++k) {
    const int64_t inner = std::abs(s.strides[k][nd - 1]), outer = std::abs(s.strides[k][nd - 2]);
    if (inner > 1 && outer != 0 && outer < inner) return true;
  }
  return false;
}

/// A run of rows for a kernel: `count` rows of `n` elements; operand k's row r starts at element
/// offset[k] + r * row_step[k] and steps by step[k] along the row (step[0] is 1: the output is
/// contiguous). Kernels loop the rows of a run themselves: a call per 32-element row, with the
/// offsets passed through memory, cost as much as the row's arithmetic.
template <size_t K>
struct Run {
  std::array<int64_t, K> offset, step, row_step;
  int64_t n, count;
};

/// for_rows over kTile x kTile tiles of the last two dims: each tile is one run of up to kTile
/// rows of kTile elements. A work unit is kTile rows across all columns; units are split between
/// threads.
template <size_t K, class Kernel>
void for_tiles(const Space<K>& s, int64_t grain, Kernel&& kernel) {
  constexpr int64_t kTile = 16;  // small: power-of-two strides alias in cache sets and the TLB
  const size_t nd = s.shape.size();
  const int64_t rows = s.shape[nd - 2], cols = s.shape[nd - 1];
  const int64_t row_tiles = (rows + kTile - 1) / kTile;
  int64_t outer = 1;
  for (size_t d = 0; d + 2 < nd; ++d) outer *= s.shape[d];
  Run<K> run{};
  for (size_t k = 0; k < K; ++k) {
    run.step[k] = s.strides[k][nd - 1];
    run.row_step[k] = s.strides[k][nd - 2];
  }
  const int64_t unit = std::min(rows, kTile) * cols;
  parallel_for(outer * row_tiles, std::max<int64_t>(1, grain / std::max<int64_t>(unit, 1)),
               [&](int64_t b, int64_t e) {
                 Run<K> r = run;
                 for (int64_t u = b; u < e; ++u) {
                   std::array<int64_t, K> base{};
                   for (int64_t d = static_cast<int64_t>(nd) - 3, rest = u / row_tiles; d >= 0;
                        --d) {
                     const int64_t i = rest % s.shape[d];
                     rest /= s.shape[d];
                     for (size_t k = 0; k < K; ++k) base[k] += i * s.strides[k][d];
                   }
                   const int64_t r0 = u % row_tiles * kTile;
                   r.count = std::min(rows, r0 + kTile) - r0;
                   for (int64_t c0 = 0; c0 < cols; c0 += kTile) {
                     r.n = std::min(kTile, cols - c0);
                     for (size_t k = 0; k < K; ++k)
                       r.offset[k] = base[k] + r0 * run.row_step[k] + c0 * run.step[k];
                     kernel(r);
                   }
                 }
               });
}

/// Calls kernel(run) over the space in runs of rows (see Run). A single row (contiguous data) is
/// split into chunks, several rows are split between threads whole, transposed inputs go tile by
/// tile.
template <size_t K, class Kernel>
void for_rows(const Space<K>& s, int64_t grain, Kernel&& kernel) {
  const int64_t len = s.shape.back(), rows = detail::num_rows(s.shape);
  if (len == 0 || rows == 0) return;
  if (needs_tiles(s)) return for_tiles(s, grain, kernel);
  const size_t nd = s.shape.size();
  Run<K> run{};
  for (size_t k = 0; k < K; ++k) {
    run.step[k] = s.strides[k][nd - 1];
    run.row_step[k] = nd >= 2 ? s.strides[k][nd - 2] : 0;
  }
  if (rows == 1) {
    parallel_for(len, grain, [&](int64_t b, int64_t e) {
      Run<K> r = run;
      for (size_t k = 0; k < K; ++k) r.offset[k] = b * run.step[k];
      r.n = e - b;
      r.count = 1;
      kernel(r);
    });
    return;
  }
  parallel_for(rows, std::max<int64_t>(1, grain / len), [&](int64_t b, int64_t e) {
    detail::for_each_row_run(s.shape, s.strides, b, e,
                             [&](const std::array<int64_t, K>& off, int64_t count) {
                               Run<K> r = run;
                               r.offset = off;
                               r.n = len;
                               r.count = count;
                               kernel(r);
                             });
  });
}

// ---- batch helpers --------------------------------------------------------------------------

template <class T>
using Batch = xsimd::batch<T>;

#if defined(__AVX512F__)
/// Whether a tail of T in and R out runs on AVX-512 masked loads and stores (float or double
/// batches of 512 bits).
template <class T, class R, class... In>
constexpr bool kMaskedTail =
    std::is_same_v<T, R> && (std::is_same_v<In, T> && ...) &&
    ((std::is_same_v<T, float> && std::is_same_v<typename Batch<T>::register_type, __m512>) ||
     (std::is_same_v<T, double> && std::is_same_v<typename Batch<T>::register_type, __m512d>));

// The first m elements at src, the other lanes src[0] (a value the op already sees: no spurious
// traps); masked lanes are not read, so no fault past the end either.
template <class T>
Batch<T> masked_load(const T* src, int64_t m) {
  if constexpr (std::is_same_v<T, float>)
    return _mm512_mask_loadu_ps(_mm512_set1_ps(src[0]), __mmask16((1u << m) - 1), src);
  else
    return _mm512_mask_loadu_pd(_mm512_set1_pd(src[0]), __mmask8((1u << m) - 1), src);
}

template <class T>
void masked_store(T* out, int64_t m, const Batch<T>& v) {
  if constexpr (std::is_same_v<T, float>)
    _mm512_mask_storeu_ps(out, __mmask16((1u << m) - 1), v);
  else
    _mm512_mask_storeu_pd(out, __mmask8((1u << m) - 1), v);
}
#endif

/// The last m < W elements of a simd_contiguous run, through a padded batch. Out of line: its
/// buffers give the caller a heavy stack frame, which short rows (32 elements) paid on every row.
template <class T, class R, class F, class... In>
[[gnu::noinline]] void simd_tail(R* out, int64_t m, F f, const In*... in) {
  constexpr int64_t W = Batch<T>::size;
#if defined(__AVX512F__)
  // Masked loads and stores where they exist. A padded copy on the stack, loaded as one vector,
  // cannot take its value from the narrower stores that wrote it: the load waits for every
  // earlier store to reach the cache. After a row of output stores that missed it, that wait held
  // more than half of jacobian_square's profile samples (1000-wide rows, 8-element tails); the
  // kernel is memory-bound, so the wait moved into the row's stores and the call gained ~3%.
  if constexpr (kMaskedTail<T, R, In...>) {
    masked_store(out, m, f(masked_load(in, m)...));
    return;
  }
#endif
  auto pad = [&](const T* src, T* buf) {
    std::copy(src, src + m, buf);
    std::fill(buf + m, buf + W, src[0]);  // a value the op already sees: no spurious traps
    return Batch<T>::load_unaligned(buf);
  };
  alignas(64) T bufs[sizeof...(In)][W];
  int k = 0;
  alignas(64) R res[W];
  auto padded = [&](const T* src) { return pad(src, bufs[k++]); };
  // Evaluation order of function arguments is unspecified; k only picks distinct buffers.
  f(padded(in)...).store_unaligned(res);
  std::copy(res, res + m, out);
}

/// Runs f over n contiguous elements in batches; the tail goes through a padded batch.
template <class T, class R, class F, class... In>
inline void simd_contiguous(R* out, int64_t n, F f, const In*... in) {
  constexpr int64_t W = Batch<T>::size;
  int64_t i = 0;
  for (; i + W <= n; i += W) f(Batch<T>::load_unaligned(in + i)...).store_unaligned(out + i);
  if (i < n) simd_tail<T>(out + i, n - i, f, (in + i)...);
}

/// Copies n elements at stride `step` into buf (step 0 reads one element).
template <class T>
void gather(const T* src, int64_t step, int64_t n, T* buf) {
  if (step == 0) {
    std::fill(buf, buf + n, src[0]);
  } else {
    for (int64_t i = 0; i < n; ++i) buf[i] = src[i * step];
  }
}

// ---- unary ----------------------------------------------------------------------------------

template <class T, class R, class F>
void unary_row(R* out, const T* x, int64_t sx, int64_t n, F f) {
  if constexpr (kSimd<F, T>) {
    if (sx == 1) return simd_contiguous<T>(out, n, f, x);
    if (sx == 0) {  // a broadcast scalar: compute once
      R v;
      simd_contiguous<T>(&v, 1, f, x);
      return std::fill(out, out + n, v);
    }
    alignas(64) T buf[kBuffer];
    for (int64_t i = 0; i < n; i += kBuffer) {
      const int64_t m = std::min(kBuffer, n - i);
      gather(x + i * sx, sx, m, buf);
      simd_contiguous<T>(out + i, m, f, static_cast<const T*>(buf));
    }
  } else {
    if (sx == 1) {
      for (int64_t i = 0; i < n; ++i) out[i] = f(x[i]);
    } else {
      for (int64_t i = 0; i < n; ++i) out[i] = f(x[i * sx]);
    }
  }
}

/// out = f(x) elementwise, out a fresh contiguous tensor of x's shape.
template <class T, class R, class F>
void unary(const Tensor& x, const Tensor& out, F f) {
  const auto s = make_space<2>(out, {&x});
  const T* xb = x.data<T>();
  R* ob = out.mutable_data<R>();
  for_rows(s, F::grain, [&](const Run<2>& r) {
    for (int64_t i = 0; i < r.count; ++i)
      unary_row<T, R>(ob + r.offset[0] + i * r.row_step[0], xb + r.offset[1] + i * r.row_step[1],
                      r.step[1], r.n, f);
  });
}

// ---- binary ---------------------------------------------------------------------------------

template <class T, class R, class F>
void binary_row_simd(R* out, const T* a, int64_t sa, const T* b, int64_t sb, int64_t n, F f) {
  if (sa == 1 && sb == 1) return simd_contiguous<T>(out, n, f, a, b);
  if (sa == 0 && sb == 0) {
    R v;
    simd_contiguous<T>(&v, 1, f, a, b);
    return std::fill(out, out + n, v);
  }
  if (sa == 1 && sb == 0) {  // tensor op scalar: broadcast once, no buffer
    constexpr int64_t W = Batch<T>::size;
    const Batch<T> vb(b[0]);
    int64_t i = 0;
    for (; i + W <= n; i += W) f(Batch<T>::load_unaligned(a + i), vb).store_unaligned(out + i);
    if (i < n) {
      alignas(64) T buf[W];
      std::fill(buf, buf + W, b[0]);
      simd_contiguous<T>(out + i, n - i, f, a + i, static_cast<const T*>(buf));
    }
    return;
  }
  alignas(64) T bufa[kBuffer], bufb[kBuffer];
  for (int64_t i = 0; i < n; i += kBuffer) {
    const int64_t m = std::min(kBuffer, n - i);
    const T* pa = a + i * sa;
    const T* pb = b + i * sb;
    if (sa != 1) gather(pa, sa, m, bufa), pa = bufa;
    if (sb != 1) gather(pb, sb, m, bufb), pb = bufb;
    simd_contiguous<T>(out + i, m, f, pa, pb);
  }
}

template <class T, class R, class F>
void binary_row(R* out, const T* a, int64_t sa, const T* b, int64_t sb, int64_t n, F f) {
  if constexpr (kSimd<F, T>) {
    binary_row_simd<T, R>(out, a, sa, b, sb, n, f);
  } else if (sa == 1 && sb == 1) {
    for (int64_t i = 0; i < n; ++i) out[i] = f(a[i], b[i]);
  } else if (sa == 1 && sb == 0) {
    const T vb = b[0];
    for (int64_t i = 0; i < n; ++i) out[i] = f(a[i], vb);
  } else if (sa == 0 && sb == 1) {
    const T va = a[0];
    for (int64_t i = 0; i < n; ++i) out[i] = f(va, b[i]);
  } else {
    for (int64_t i = 0; i < n; ++i) out[i] = f(a[i * sa], b[i * sb]);
  }
}

/// A run of rows shorter than a batch (a bias added to (8, 512, 10)) as one long row: operands
/// dense across the run are read in place, one whose rows all repeat one row is tiled into a
/// buffer. Row by row, every row went through the padded tail. Returns false for other layouts.
template <class T, class R, class F>
bool binary_short_rows(R* out, const T* a, const T* b, const Run<3>& r, F f) {
  const int64_t n = r.n;
  if (!kSimd<F, T> || n >= int64_t(Batch<T>::size) || r.count == 1 || r.row_step[0] != n)
    return false;
  auto dense = [&](size_t k) { return r.step[k] == 1 && r.row_step[k] == n; };
  auto repeats = [&](size_t k) { return r.step[k] == 1 && r.row_step[k] == 0; };
  if (!(dense(1) || repeats(1)) || !(dense(2) || repeats(2))) return false;
  const int64_t per = kBuffer / n;  // rows per chunk
  alignas(64) T tiled[2][kBuffer];
  for (int64_t i = 0; i < per; ++i) {
    if (repeats(1)) std::copy(a, a + n, tiled[0] + i * n);
    if (repeats(2)) std::copy(b, b + n, tiled[1] + i * n);
  }
  for (int64_t row = 0; row < r.count; row += per) {
    const int64_t m = std::min(per, r.count - row) * n;
    simd_contiguous<T>(out + row * n, m, f, repeats(1) ? tiled[0] : a + row * n,
                       repeats(2) ? tiled[1] : b + row * n);
  }
  return true;
}

/// out = f(a, b) elementwise; a, b of out's shape (any strides).
template <class T, class R, class F>
void binary(const Tensor& a, const Tensor& b, const Tensor& out, F f) {
  const auto s = make_space<3>(out, {&a, &b});
  const T* ab = a.data<T>();
  const T* bb = b.data<T>();
  R* ob = out.mutable_data<R>();
  for_rows(s, F::grain, [&](const Run<3>& r) {
    if constexpr (kSimd<F, T>) {
      if (binary_short_rows<T>(ob + r.offset[0], ab + r.offset[1], bb + r.offset[2], r, f)) return;
    }
    for (int64_t i = 0; i < r.count; ++i)
      binary_row<T, R>(ob + r.offset[0] + i * r.row_step[0], ab + r.offset[1] + i * r.row_step[1],
                       r.step[1], bb + r.offset[2] + i * r.row_step[2], r.step[2], r.n, f);
  });
}

}  // namespace lanes::kernels::loops
