// What the reduction kernels share (src/kernels/reduce.cpp, arg_reduce.cpp): the combining
// operations and the leaf, a contiguous run summed in SIMD accumulators. Internal to kernels/.
#pragma once

// GCC 12 reports xsimd's AVX-512 placeholders as "(may be) used uninitialized"; false positive.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"

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
template <class T, class A>
xsimd::batch<T, A> pick(const xsimd::batch_bool<T, A>& cond, const xsimd::batch<T, A>& a,
                        const xsimd::batch<T, A>& b) {
  return xsimd::select(cond, a, b);
}

// Integer sums and products run on the unsigned twin of the dtype (see dispatch()). max/min keep
// the accumulator a unless b wins or a is NaN; a NaN b wins since a > NaN is false.
// clang-format off
struct SumOp {
  template <class T> static T identity() { return T(0); }
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
  template <class V> static V apply(const V& a, const V& b) { return pick((a > b) | (a != a), a, b); }
};
struct MinOp {
  template <class T> static T identity() {
    return kFloat<T> ? std::numeric_limits<T>::infinity() : std::numeric_limits<T>::max();
  }
  template <class V> static V apply(const V& a, const V& b) { return pick((a < b) | (a != a), a, b); }
};
// clang-format on

// ---- leaves -----------------------------------------------------------------------------------

/// Reduction of n contiguous elements: 4 SIMD accumulators, the tail padded with the identity,
/// then a tree over the lanes. Integers use 4 scalar accumulators (exact in any order).
template <class Op, class T>
T reduce_contiguous(const T* p, int64_t n) {
  const T id = Op::template identity<T>();
  if constexpr (kFloat<T>) {
    using B = xsimd::batch<T>;
    constexpr int64_t W = B::size;
    if (n >= W) {
      B a0(id), a1(id), a2(id), a3(id);
      int64_t i = 0;
      for (; i + 4 * W <= n; i += 4 * W) {
        a0 = Op::apply(a0, B::load_unaligned(p + i));
        a1 = Op::apply(a1, B::load_unaligned(p + i + W));
        a2 = Op::apply(a2, B::load_unaligned(p + i + 2 * W));
        a3 = Op::apply(a3, B::load_unaligned(p + i + 3 * W));
      }
      for (; i + W <= n; i += W) a0 = Op::apply(a0, B::load_unaligned(p + i));
      if (i < n) {
        std::array<T, W> tail;
        tail.fill(id);
        std::copy(p + i, p + n, tail.begin());
        a1 = Op::apply(a1, B::load_unaligned(tail.data()));
      }
      std::array<T, W> lanes;
      Op::apply(Op::apply(a0, a1), Op::apply(a2, a3)).store_unaligned(lanes.data());
      for (int64_t w = W / 2; w >= 1; w /= 2)
        for (int64_t k = 0; k < w; ++k) lanes[k] = Op::apply(lanes[k], lanes[k + w]);
      return lanes[0];
    }
  }
  T a[4] = {id, id, id, id};
  int64_t i = 0;
  for (; i + 4 <= n; i += 4)
    for (int k = 0; k < 4; ++k) a[k] = Op::apply(a[k], p[i + k]);
  for (; i < n; ++i) a[0] = Op::apply(a[0], p[i]);
  return Op::apply(Op::apply(a[0], a[1]), Op::apply(a[2], a[3]));
}

}  // namespace lanes::kernels::reduce_leaves
