// SIMD math on xsimd batches where xsimd's own float32 functions are not accurate enough (the
// target is ~1 ulp against float64 math; tests/test_vector_math.cpp measures it):
//
// - exp: Cody-Waite reduction with an FMA-evaluated degree-7 polynomial and a two-step scale,
//   so subnormal results are kept (xsimd's float exp flushes them to zero) - <= 1 ulp.
// - logistic: 1 / (1 + exp(-|x|)) with the rounding errors of the sum and the division
//   recovered by FMA - <= ~1.5 ulp, where the naive formula reaches 2.4.
// - via_double: evaluates a float32 batch in float64 and rounds once (pow, atan2, sin, cos,
//   erf: xsimd's float versions are 2-60 ulp off).
// - lanewise: scalar std:: math per lane, for float64 erf and pow (xsimd's are 50-300 ulp off).
#pragma once

#include <xsimd/xsimd.hpp>

#include <cstdint>
#include <limits>
#include <type_traits>

namespace lanes::kernels::vm {

template <class A>
using F32 = xsimd::batch<float, A>;
template <class A>
using F64 = xsimd::batch<double, A>;

/// e^x for float32, <= 1 ulp including subnormal results; NaN and +-inf as std::exp.
/// n = round(x / ln2) comes from the shifter trick (1.5 * 2^23 added in one FMA leaves n in the
/// low mantissa bits), r = x - n ln2 (ln2 split in two for exactness), e^r from a degree-7
/// polynomial, and 2^n is added to the exponent bits. Inputs with |x| >= 86 (overflow,
/// subnormal results, NaN) take a slower path with a two-step scale.
template <class A>
F32<A> exp(F32<A> x) {
  using B = F32<A>;
  using I = xsimd::batch<int32_t, A>;
  auto poly = [](B r) {
    B p(1.9875691500e-4f);
    p = xsimd::fma(p, r, B(1.3981999507e-3f));
    p = xsimd::fma(p, r, B(8.3334519073e-3f));
    p = xsimd::fma(p, r, B(4.1665795894e-2f));
    p = xsimd::fma(p, r, B(1.6666665459e-1f));
    p = xsimd::fma(p, r, B(5.0000001201e-1f));
    return xsimd::fma(p, r * r, r) + B(1.0f);
  };
  const B shifter(12582912.0f);
  if (xsimd::all(xsimd::abs(x) < B(86.0f))) {
    const B t = xsimd::fma(x, B(1.44269504088896341f), shifter);
    const B n = t - shifter;
    B r = xsimd::fnma(n, B(0.693359375f), x);
    r = xsimd::fnma(n, B(-2.12194440e-4f), r);
    // (bits of t) << 23 == n << 23: the shifter's own bits shift out.
    const I e = xsimd::bitwise_cast<I>(t) << 23;
    return xsimd::bitwise_cast<B>(xsimd::bitwise_cast<I>(poly(r)) + e);
  }
  // Beyond +-104 the result is inf / 0 anyway; clamping keeps the exponent arithmetic in range.
  const B xc = xsimd::min(xsimd::max(x, B(-104.0f)), B(89.0f));
  const B n = xsimd::nearbyint(xc * B(1.44269504088896341f));
  B r = xsimd::fnma(n, B(0.693359375f), xc);
  r = xsimd::fnma(n, B(-2.12194440e-4f), r);
  // 2^n = 2^h * 2^(n-h), each factor normal, so 2^-150 <= result keeps its subnormal bits.
  const I ni = xsimd::to_int(n);
  const I h = ni >> 1;
  const B s1 = xsimd::bitwise_cast<B>((h + I(127)) << 23);
  const B s2 = xsimd::bitwise_cast<B>((ni - h + I(127)) << 23);
  const B y = poly(r) * s1 * s2;
  return xsimd::select(xsimd::isnan(x), x, y);
}

/// e^x for float64: xsimd's (<= 1 ulp).
template <class A>
F64<A> exp(F64<A> x) {
  return xsimd::exp(x);
}

/// 1 / (1 + e^-x), <= 1.5 ulp. With e = exp(-|x|) <= 1 the result is num / d, num = 1 (x >= 0)
/// or e (x < 0), d = 1 + e. d rounds with an error err recovered exactly (Fast2Sum); from an
/// approximate s ~ 1/d, q = num s is refined by one Newton step on the exact FMA residual
/// num - q d - q err, which squares the error of s: AVX-512's 14-bit reciprocal is enough.
template <class B>
B logistic(B x) {
  using T = typename B::value_type;
  const B one(T(1));
  const B e = exp(-xsimd::abs(x));
  const B d = one + e;
  const B err = (one - d) + e;  // d + err == 1 + e exactly
  B s;
  if constexpr (std::is_same_v<T, float> &&
                std::is_base_of_v<xsimd::avx512f, typename B::arch_type>)
    s = xsimd::reciprocal(d);
  else
    s = one / d;
  const B num = xsimd::select(x >= B(T(0)), one, e);
  const B q = num * s;
  const B y = xsimd::fma(s, xsimd::fnma(q, d, num) - q * err, q);
  return xsimd::select(xsimd::isnan(x), x, y);
}

/// f evaluated in float64 on the float32 lanes of x..., rounded once back to float32.
template <class F, class A, class... Rest>
F32<A> via_double(F f, F32<A> x, Rest... rest) {
  constexpr size_t W = F32<A>::size, H = F64<A>::size;
  alignas(64) float in[1 + sizeof...(Rest)][W];
  alignas(64) float out[W];
  x.store_aligned(in[0]);
  size_t k = 1;
  ((rest.store_aligned(in[k++])), ...);
  for (size_t i = 0; i < W; i += H) {
    alignas(64) double d[1 + sizeof...(Rest)][H];
    for (size_t j = 0; j <= sizeof...(Rest); ++j)
      for (size_t l = 0; l < H; ++l) d[j][l] = in[j][i + l];
    F64<A> y;
    if constexpr (sizeof...(Rest) == 0)
      y = f(F64<A>::load_aligned(d[0]));
    else
      y = f(F64<A>::load_aligned(d[0]), F64<A>::load_aligned(d[1]));
    alignas(64) double r[H];
    y.store_aligned(r);
    for (size_t l = 0; l < H; ++l) out[i + l] = static_cast<float>(r[l]);
  }
  return F32<A>::load_aligned(out);
}

/// atan2 with the signed-zero and infinity cases of std::atan2 (xsimd gives NaN for them).
template <class B>
B atan2(B y, B x) {
  using T = typename B::value_type;
  const B pi(T(3.14159265358979323846));
  const B r = xsimd::atan2(y, x);
  // y == 0: +-0 for x >= +0, +-pi for x <= -0 (sign of y kept).
  const B at_zero = xsimd::select(xsimd::signnz(x) < B(T(0)), pi, B(T(0))) | xsimd::bitofsign(y);
  // both infinite: +-pi/4 or +-3pi/4.
  const B quarter =
      xsimd::select(x > B(T(0)), pi * B(T(0.25)), pi * B(T(0.75))) | xsimd::bitofsign(y);
  B out = xsimd::select(y == B(T(0)) && !xsimd::isnan(x), at_zero, r);
  return xsimd::select(xsimd::isinf(y) && xsimd::isinf(x), quarter, out);
}

/// x^y for float32 results, computed in float64 as exp(y log|x|) (relative error ~1e-14, far
/// below a float32 ulp) with std::pow's special cases: x^0 = 1^y = 1 (even for NaN), negative
/// x needs an integer y (odd y keeps the sign), zeros and infinities as IEEE 754 says.
template <class A>
F64<A> pow_for_float(F64<A> x, F64<A> y) {
  using B = F64<A>;
  const B ax = xsimd::abs(x);
  B r = xsimd::exp(y * xsimd::log(ax));
  const auto integer = xsimd::floor(y) == y;
  const auto odd = integer && xsimd::floor(y * B(0.5)) != y * B(0.5);
  r = xsimd::select(odd && xsimd::signnz(x) < B(0.0), -r, r);
  r = xsimd::select(x < B(0.0) && !integer, B(std::numeric_limits<double>::quiet_NaN()), r);
  const auto one = y == B(0.0) || x == B(1.0) || (ax == B(1.0) && xsimd::isinf(y));
  return xsimd::select(one, B(1.0), r);
}

/// f applied lane by lane with scalar std:: math (float64 functions that xsimd computes too
/// inaccurately: erf, pow).
template <class F, class B, class... Rest>
B lanewise(F f, B x, Rest... rest) {
  using T = typename B::value_type;
  constexpr size_t W = B::size;
  alignas(64) T in[1 + sizeof...(Rest)][W];
  x.store_aligned(in[0]);
  size_t k = 1;
  ((rest.store_aligned(in[k++])), ...);
  alignas(64) T out[W];
  for (size_t i = 0; i < W; ++i) {
    if constexpr (sizeof...(Rest) == 0)
      out[i] = f(in[0][i]);
    else
      out[i] = f(in[0][i], in[1][i]);
  }
  return B::load_aligned(out);
}

}  // namespace lanes::kernels::vm
