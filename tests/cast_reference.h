// An independent reference for dtype conversion, written from the rules in
// src/kernels/elementwise.h with float64/int64 arithmetic (not the kernels' code): float -> int
// truncates toward zero and saturates, NaN -> 0; int -> int wraps; anything -> bool is x != 0;
// to a float type, the nearest value. And the edge values each dtype's conversions are tested on.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "lanes/lanes.h"

namespace cast_ref {

template <class To, class From>
To convert(From v) {
  if constexpr (std::is_same_v<To, bool>) {
    return std::is_floating_point_v<From> ? !(double(v) == 0.0) : int64_t(v) != 0;
  } else if constexpr (std::is_floating_point_v<From> && std::is_integral_v<To>) {
    const double d = double(v);  // exact for float and double
    if (std::isnan(d)) return To(0);
    const int bits = std::numeric_limits<To>::digits;  // value bits: 8, 31, 63
    const double hi = std::ldexp(1.0, bits);
    const double lo = std::is_signed_v<To> ? -hi : 0.0;
    if (d >= hi) return std::numeric_limits<To>::max();
    if (d < lo) return std::numeric_limits<To>::min();
    return To(int64_t(std::trunc(d)));  // in [lo, hi): fits To
  } else if constexpr (std::is_integral_v<From> && std::is_integral_v<To>) {
    const int64_t x = int64_t(v);
    if constexpr (sizeof(To) == 8) {
      return To(x);
    } else {
      const int64_t m = int64_t(1) << (8 * sizeof(To));  // 2^8 or 2^32
      int64_t r = ((x % m) + m) % m;                     // in [0, m)
      if (std::is_signed_v<To> && r >= m / 2) r -= m;
      return To(r);
    }
  } else {
    return static_cast<To>(v);  // to a float type (bool as 0 or 1), or float -> float
  }
}

/// Values of T that sit on or next to the bounds of every conversion from T.
template <class T>
std::vector<T> edges() {
  std::vector<int64_t> ints = {0,
                               1,
                               -1,
                               2,
                               127,
                               128,
                               255,
                               256,
                               -128,
                               -129,
                               65535,
                               (1LL << 24) + 1,
                               INT32_MAX,
                               INT32_MAX - 1,
                               INT32_MIN,
                               INT32_MIN + 1,
                               1LL << 31,
                               (1LL << 32) + 5,
                               -(1LL << 32) - 7,
                               (1LL << 53) + 1,
                               INT64_MAX,
                               INT64_MAX - 1,
                               INT64_MIN,
                               INT64_MIN + 1};
  std::vector<T> out;
  if constexpr (std::is_same_v<T, bool>) {
    out = {false, true};
  } else if constexpr (std::is_integral_v<T>) {
    for (int64_t v : ints) out.push_back(convert<T>(v));
  } else {
    using L = std::numeric_limits<T>;
    const T inf = L::infinity();
    out = {L::quiet_NaN(),  -L::quiet_NaN(),  inf,        -inf,      T(0),     -T(0),
           L::denorm_min(), -L::denorm_min(), L::min(),   -L::min(), T(0.3),   T(-0.3),
           T(0.5),          T(-0.5),          T(0.999),   T(-0.999), T(1.5),   T(-1.5),
           T(2.5),          T(1e10),          T(-1e10),   T(1e20),   T(-1e20), T(3e38),
           T(-3e38),        L::max(),         L::lowest()};
    if constexpr (std::is_same_v<T, double>) out.insert(out.end(), {1e300, -1e300});
    // Each integer bound, the neighbouring values of T, and +-1 and +-0.5 around it.
    for (int64_t v : ints) {
      const T b = T(v);
      out.insert(out.end(), {b, std::nextafter(b, inf), std::nextafter(b, -inf), T(b + 1), T(b - 1),
                             T(b + T(0.5)), T(b - T(0.5))});
    }
  }
  return out;
}

/// Whether a and b are the same value: NaN equals NaN, and 0 and -0 differ.
template <class T>
bool same(T a, T b) {
  if constexpr (std::is_floating_point_v<T>) {
    if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
    return a == b && std::signbit(a) == std::signbit(b);
  } else {
    return a == b;
  }
}

template <class T>
std::string show(T v) {
  if constexpr (std::is_floating_point_v<T>) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.17g", double(v));
    return buf;
  } else {
    return std::to_string(int64_t(v));
  }
}

/// n values of T cycling through edges<T>() from `start`.
template <class T>
lanes::Tensor edge_tensor(int64_t n, int64_t start, std::vector<T>* values) {
  const std::vector<T> e = edges<T>();
  lanes::Tensor t = lanes::Tensor::empty({n}, lanes::dtype_of<T>());
  T* p = t.mutable_data<T>();
  values->resize(size_t(n));
  for (int64_t i = 0; i < n; ++i)
    p[i] = (*values)[size_t(i)] = e[size_t((start + i) % int64_t(e.size()))];
  return t;
}

/// Every (from, to) pair of dtypes.
template <class Fn>
void for_each_pair(Fn&& fn) {
  for (lanes::DType from : {lanes::kBool, lanes::kUInt8, lanes::kInt32, lanes::kInt64,
                            lanes::kFloat32, lanes::kFloat64})
    for (lanes::DType to : {lanes::kBool, lanes::kUInt8, lanes::kInt32, lanes::kInt64,
                            lanes::kFloat32, lanes::kFloat64})
      lanes::visit_dtype(from, [&](auto f) {
        lanes::visit_dtype(
            to, [&](auto t) { fn(typename decltype(f)::type{}, typename decltype(t)::type{}); });
      });
}

/// The sizes that put edge values in the SIMD body and in the tail of every batch width.
inline const std::vector<int64_t> kSizes = {1, 7, 16, 33, 1000, 4099};

}  // namespace cast_ref
