// What the reduction kernels share (src/kernels/reduce.cpp, arg_reduce.cpp): the combining
// operations and the leaf, a contiguous run summed in SIMD accumulators. Internal to kernels/.
#pragma once

// GCC 12 reports xsimd's AVX-512 placeholders as "(may be) used uninitialized"; false positive.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"

#include <immintrin.h>
#include <xsimd/xsimd.hpp>

#include <algorithm>
#include <array>
#include <cstdint>
#include <limits>
#include <type_traits>

namespace lanes::kernels::reduce_leaves {

constexpr int64_t kBlock = 2048;   // elements per leaf of a row reduction
constexpr int64_t kGrain = 32768;  // elements a thread should get at least

template <class T>
constexpr bool kFloat = std::is_same_v<T, float> || std::is_same_v<T, double>;

template <class T>
bool is_nan(T v) {
  if constexpr (kFloat<T>)
    return v != v;
  else
    return false;
}

// ---- combining operations: identity, apply on scalars and on xsimd batches (floats) -------------

/// cond ? a : b for scalars and for batches.
template <class V>
V pick(bool cond, const V& a, const V& b) {
  return cond ? a : b;
}
/// Whether v is NaN, for scalars and batches: xsimd's batch a != a is an ordered compare (false
/// for NaN under AVX and AVX-512), so batches ask xsimd::isnan.
template <class V>
bool nan_of(const V& v) {
  return v != v;
}
template <class T, class A>
xsimd::batch_bool<T, A> nan_of(const xsimd::batch<T, A>& v) {
  return xsimd::isnan(v);
}
template <class T, class A>
xsimd::batch<T, A> pick(const xsimd::batch_bool<T, A>& cond, const xsimd::batch<T, A>& a,
                        const xsimd::batch<T, A>& b) {
  return xsimd::select(cond, a, b);
}

// Integer sums and products run on the unsigned twin of the dtype (see dispatch()). max/min keep
// the accumulator a unless b wins or a is NaN; a NaN b wins since a > NaN is false.
// clang-format off
struct SumOp {
  template <class T> static T identity() { return kFloat<T> ? T(-0.0) : T(0); }
  template <class V> static V apply(const V& a, const V& b) { return a + b; }
};
struct ProdOp {
  template <class T> static T identity() { return T(1); }
  template <class V> static V apply(const V& a, const V& b) { return a * b; }
};
struct MaxOp {
  template <class T> static T identity() {
    return kFloat<T> ? -std::numeric_limits<T>::infinity() : std::numeric_limits<T>::lowest();
  }
  template <class V> static V apply(const V& a, const V& b) { return pick((a > b) | nan_of(a), a, b); }
};
struct MinOp {
  template <class T> static T identity() {
    return kFloat<T> ? std::numeric_limits<T>::infinity() : std::numeric_limits<T>::max();
  }
  template <class V> static V apply(const V& a, const V& b) { return pick((a < b) | nan_of(a), a, b); }
};
// clang-format on

// ---- leaves -----------------------------------------------------------------------------------

/// The number of slots of a leaf: 4 SIMD registers of T.
template <class T>
constexpr int64_t kSlots = 4 * int64_t(xsimd::batch<T>::size);

/// Folds slots [0, used) of s (kSlots<T> of them, the rest unused) as the leaf's tree does:
/// s[i] = op(s[i], s[i + h]) for h = kSlots / 2, ..., 1. An unused slot holds the identity, which
/// changes nothing, so the fold skips it.
template <class Op, class T>
T fold_slots(T* s, int64_t used) {
  for (int64_t h = kSlots<T> / 2; h >= 1; h /= 2)
    for (int64_t i = 0; i < h && i + h < used; ++i) s[i] = Op::apply(s[i], s[i + h]);
  return s[0];
}

/// Lane 0 of s[k] = op(s[k], s[k + h]) for h = W/2, ..., 1 over the lanes of v: the last steps of
/// fold_slots, within one register. On AVX-512 by lane permutes, lane k < h meeting lane k + h as
/// the scalar fold has them (the other lanes are never read), which made a max over rows of 64
/// floats 2.4x faster than storing the register and folding its lanes one by one.
template <class Op, class T, class A>
T fold_register(const xsimd::batch<T, A>& v) {
  using B = xsimd::batch<T, A>;
#if defined(__AVX512F__)
  if constexpr (std::is_same_v<T, float> && B::size == 16) {
    __m512 r = v;
    r = Op::apply(B(r), B(_mm512_shuffle_f32x4(r, r, _MM_SHUFFLE(1, 0, 3, 2))));
    r = Op::apply(B(r), B(_mm512_shuffle_f32x4(r, r, _MM_SHUFFLE(2, 3, 0, 1))));
    r = Op::apply(B(r), B(_mm512_permute_ps(r, _MM_SHUFFLE(1, 0, 3, 2))));
    r = Op::apply(B(r), B(_mm512_permute_ps(r, _MM_SHUFFLE(2, 3, 0, 1))));
    return _mm512_cvtss_f32(r);
  }
  if constexpr (std::is_same_v<T, double> && B::size == 8) {
    __m512d r = v;
    r = Op::apply(B(r), B(_mm512_shuffle_f64x2(r, r, _MM_SHUFFLE(1, 0, 3, 2))));
    r = Op::apply(B(r), B(_mm512_shuffle_f64x2(r, r, _MM_SHUFFLE(2, 3, 0, 1))));
    r = Op::apply(B(r), B(_mm512_permute_pd(r, 0x55)));
    return _mm512_cvtsd_f64(r);
  }
#endif
  alignas(64) std::array<T, B::size> s;
  v.store_aligned(s.data());
  for (size_t h = B::size / 2; h >= 1; h /= 2)
    for (size_t k = 0; k < h; ++k) s[k] = Op::apply(s[k], s[k + h]);
  return s[0];
}

/// Reduction of n contiguous elements (a leaf, n <= kBlock). Floats follow the canonical order,
/// which every reduction kernel reproduces whatever the layout, so a value never depends on how
/// its inputs sit in memory or on how many rows or lanes are reduced together (batch invariance,
/// README): element i goes to slot i % kSlots (the 4 SIMD accumulators), each slot combines its
/// elements in order starting from the identity, and fold_slots combines the slots. The sum's
/// identity is -0.0 (x + -0.0 == x for every x, +0.0 turns -0.0 into +0.0). Integers use 4 scalar
/// accumulators (exact in any order).
///
/// A short leaf (n < kSlots) has its elements as the slots, and the unused slots hold the
/// identity: op(x, identity) is x, bit for bit, for every op and x (NaNs and signed zeros
/// included), so folding them too changes nothing and the fold runs in registers as a long
/// leaf's does.
template <class Op, class T>
T reduce_contiguous(const T* p, int64_t n) {
  const T id = Op::template identity<T>();
  if constexpr (kFloat<T>) {
    using B = xsimd::batch<T>;
    constexpr int64_t W = B::size, S = kSlots<T>;
    alignas(64) std::array<T, S> s;
    if (n == 0) return id;
    B a0(id), a1(id), a2(id), a3(id);
    int64_t i = 0;
    for (; i + S <= n; i += S) {
      a0 = Op::apply(a0, B::load_unaligned(p + i));
      a1 = Op::apply(a1, B::load_unaligned(p + i + W));
      a2 = Op::apply(a2, B::load_unaligned(p + i + 2 * W));
      a3 = Op::apply(a3, B::load_unaligned(p + i + 3 * W));
    }
    if (i < n) {  // the tail (or a short leaf), padded with the identity
      s.fill(id);
      std::copy(p + i, p + n, s.begin());
      a0 = Op::apply(a0, B::load_aligned(s.data()));
      a1 = Op::apply(a1, B::load_aligned(s.data() + W));
      a2 = Op::apply(a2, B::load_aligned(s.data() + 2 * W));
      a3 = Op::apply(a3, B::load_aligned(s.data() + 3 * W));
    }
    // fold_slots over whole registers (h = 2W, W), then within one.
    return fold_register<Op>(Op::apply(Op::apply(a0, a2), Op::apply(a1, a3)));
  }
  T a[4] = {id, id, id, id};
  int64_t i = 0;
  for (; i + 4 <= n; i += 4)
    for (int k = 0; k < 4; ++k) a[k] = Op::apply(a[k], p[i + k]);
  for (; i < n; ++i) a[0] = Op::apply(a[0], p[i]);
  return Op::apply(Op::apply(a[0], a[1]), Op::apply(a[2], a[3]));
}

}  // namespace lanes::kernels::reduce_leaves
