// Dtype conversion of one element (`convert`) and of a contiguous row (`convert_row`): what the
// cast kernel and a fused chain's convert step run. The row form computes exactly what the
// element form does, element by element, on xsimd batches where the conversion needs selects.
//
// The compiler vectorizes a plain conversion loop (uint8 -> float, float -> double, int32 ->
// uint8) well, but not the saturating float -> int one: its NaN and bound selects mix a float
// mask with integer lanes of another width, and the loop ran 2.5-8x slower than a plain one. The
// row form therefore makes each float value safe to convert in the float domain first (xsimd
// batches of one width), then converts with a plain loop or a same-width xsimd batch_cast.
#pragma once

// GCC 12 reports the _mm512_undefined_* placeholders inside its own AVX-512 intrinsics as
// "(may be) used uninitialized" when xsimd inlines them; the warning is a false positive.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"

#include <immintrin.h>
#include <xsimd/xsimd.hpp>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>

namespace lanes::kernels {

/// One element converted without undefined behaviour: float -> int truncates toward zero and
/// saturates (NaN -> 0), as XLA does; int -> int wraps; anything -> bool is x != 0.
template <class To, class From>
To convert(From v) {
  if constexpr (std::is_same_v<To, bool>) {
    return v != From(0);
  } else if constexpr (std::is_floating_point_v<From> && std::is_integral_v<To>) {
    // [lo, hi) is where the truncating conversion is defined: lo = min, hi = max + 1, both zero or
    // powers of two, so exact in From.
    constexpr From lo = static_cast<From>(std::numeric_limits<To>::min());
    constexpr From hi = From(2) * static_cast<From>(std::numeric_limits<To>::max() / 2 + 1);
    const From inside = (v >= lo && v < hi) ? v : From(0);  // NaN fails both tests
    To r = static_cast<To>(inside);
    r = v >= hi ? std::numeric_limits<To>::max() : r;
    return v < lo ? std::numeric_limits<To>::min() : r;
  } else {
    return static_cast<To>(v);
  }
}

namespace convert_detail {

template <class T>
using Batch = xsimd::batch<T>;

// Elements per block: the float-domain pass writes a block to an L1 buffer, the plain loop reads
// it back (2 KiB of doubles).
constexpr int64_t kBlock = 256;

/// Whether To's whole range is exact in From: then clamping in From to [min, max] (NaN -> 0)
/// gives values whose truncation is defined and equals `convert` (uint8 from float; int32 from
/// double). Not so for int32 from float or int64 from either: their max rounds up to max + 1.
template <class From, class To>
inline constexpr bool kClampable =
    std::numeric_limits<To>::digits <= std::numeric_limits<From>::digits;

/// The signed integer type of F's width: int32 for float, int64 for double.
template <class F>
using SameWidthInt = std::conditional_t<sizeof(F) == 4, int32_t, int64_t>;

/// `convert` from a float type F to the signed integer type I of its width (int32 from float,
/// int64 from double), on a batch. I's max is not exact in F (it rounds to max + 1), so values
/// are clamped to [min, top], top the largest F below max + 1, and values >= max + 1 then get the
/// low bits that top's truncation lacks (top = max + 1 - 2^k: its low k bits are zero) or-ed in.
/// xsimd 8 has no cast between masks of floats and integers; the mask's bits serve.
template <class F, class I>
Batch<I> saturating_cast(const Batch<F>& v) {
  constexpr F lo = static_cast<F>(std::numeric_limits<I>::min());  // -2^31 or -2^63: exact
  constexpr F hi = -lo;
  constexpr F top = hi - hi / F(int64_t{1} << std::numeric_limits<F>::digits);
  constexpr I missing = std::numeric_limits<I>::max() - static_cast<I>(top);
  const Batch<F> c =
      xsimd::min(xsimd::max(xsimd::select(v == v, v, Batch<F>(F(0))), Batch<F>(lo)), Batch<F>(top));
  const Batch<I> above = xsimd::bitwise_cast<Batch<I>>(xsimd::bitwise_cast(v >= Batch<F>(hi)));
  return xsimd::batch_cast<I>(c) | (above & Batch<I>(missing));
}

/// A float batch converted toward the integer type To, as the integers of the float's width:
/// `convert<To>` itself when To has that width, else values in To's range that a plain narrowing
/// cast finishes (To's range exact in F: clamped there with NaN -> 0, then truncated).
template <class To, class F>
Batch<SameWidthInt<F>> to_int_batch(const Batch<F>& v) {
  using I = SameWidthInt<F>;
  if constexpr (kClampable<F, To>) {
    const Batch<F> lo(static_cast<F>(std::numeric_limits<To>::min()));
    const Batch<F> hi(static_cast<F>(std::numeric_limits<To>::max()));
    // NaN first: min/max's NaN handling differs between ISAs.
    return xsimd::batch_cast<I>(
        xsimd::min(xsimd::max(xsimd::select(v == v, v, Batch<F>(F(0))), lo), hi));
  } else {
    static_assert(std::is_same_v<To, I>, "to_int_batch: To must be clampable or of F's width");
    return saturating_cast<F, I>(v);
  }
}

// With 16-lane AVX-512 batches, uint8 widens to float32 and int32 narrows to uint8 in registers
// (vpmovzxbd, vpmovdb: xsimd 8 has neither), so a conversion, or a fused chain around one, runs a
// batch at a time with no buffer.
#if defined(__AVX512F__)
inline constexpr bool kAvx512Batches = std::is_base_of_v<xsimd::avx512f, xsimd::default_arch>;
#else
inline constexpr bool kAvx512Batches = false;
#endif

/// A batch of float32 from In = float, int32 or (kAvx512Batches) uint8 at p.
template <class In>
Batch<float> load_as_float(const In* p) {
  if constexpr (std::is_same_v<In, float>) {
    return Batch<float>::load_unaligned(p);
  } else if constexpr (std::is_same_v<In, int32_t>) {
    return xsimd::batch_cast<float>(Batch<int32_t>::load_unaligned(p));
  } else {
    static_assert(std::is_same_v<In, uint8_t> && kAvx512Batches, "load_as_float: no such load");
#if defined(__AVX512F__)
    const __m128i bytes = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    return Batch<float>(_mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(bytes)));
#endif
  }
}

/// convert<Out> of each lane of v stored at p, for Out = float, int32 or (kAvx512Batches) uint8.
template <class Out>
void store_converted(const Batch<float>& v, Out* p) {
  if constexpr (std::is_same_v<Out, float>) {
    v.store_unaligned(p);
  } else if constexpr (std::is_same_v<Out, int32_t>) {
    to_int_batch<int32_t>(v).store_unaligned(p);
  } else {
    static_assert(std::is_same_v<Out, uint8_t> && kAvx512Batches, "store_converted: no such store");
#if defined(__AVX512F__)
    const __m512i r = to_int_batch<uint8_t>(v);  // in [0, 255]
    _mm_storeu_si128(reinterpret_cast<__m128i*>(p), _mm512_cvtepi32_epi8(r));
#endif
  }
}

/// x (n <= kBlock floats) through to_int_batch<To> into buf; returns how many elements went
/// through whole batches (the rest, fewer than a batch, is left to the caller).
template <class From, class To>
int64_t clamp_block(const From* x, int64_t n, SameWidthInt<From>* buf) {
  constexpr int64_t W = Batch<From>::size;
  int64_t i = 0;
  for (; i + W <= n; i += W)
    to_int_batch<To>(Batch<From>::load_unaligned(x + i)).store_aligned(buf + i);
  return i;
}

/// float -> uint8, double -> uint8/int32: clamp and truncate in batches, then a plain narrowing
/// loop (which the compiler vectorizes).
template <class From, class To>
void clamped_row(const From* x, To* out, int64_t n) {
  if constexpr (std::is_same_v<From, float> && std::is_same_v<To, uint8_t> && kAvx512Batches) {
    constexpr int64_t W = Batch<float>::size;
    int64_t i = 0;
    for (; i + W <= n; i += W) store_converted(Batch<float>::load_unaligned(x + i), out + i);
    for (; i < n; ++i) out[i] = convert<To>(x[i]);
    return;
  }
  alignas(64) SameWidthInt<From> buf[kBlock];
  for (int64_t b = 0; b < n; b += kBlock) {
    const int64_t m = std::min(kBlock, n - b);
    const int64_t done = clamp_block<From, To>(x + b, m, buf);
    for (int64_t i = 0; i < done; ++i) out[b + i] = static_cast<To>(buf[i]);
    for (int64_t i = done; i < m; ++i) out[b + i] = convert<To>(x[b + i]);
  }
}

/// float -> int32, double -> int64 (I of F's width), whole in xsimd batches.
template <class F, class I>
void saturating_row(const F* x, I* out, int64_t n) {
  constexpr int64_t W = Batch<F>::size;
  int64_t i = 0;
  for (; i + W <= n; i += W)
    to_int_batch<I>(Batch<F>::load_unaligned(x + i)).store_unaligned(out + i);
  for (; i < n; ++i) out[i] = convert<I>(x[i]);
}

/// float -> int64: widened to double first (exact), then as double -> int64.
inline void float_to_int64_row(const float* x, int64_t* out, int64_t n) {
  alignas(64) double buf[kBlock];
  for (int64_t b = 0; b < n; b += kBlock) {
    const int64_t m = std::min(kBlock, n - b);
    for (int64_t i = 0; i < m; ++i) buf[i] = x[b + i];
    saturating_row<double, int64_t>(buf, out + b, m);
  }
}

}  // namespace convert_detail

/// out[i] = convert<To>(x[i]) for n contiguous elements, bit for bit.
template <class From, class To>
void convert_row(const From* x, To* out, int64_t n) {
  namespace cd = convert_detail;
  if constexpr (std::is_same_v<From, To>) {
    std::memcpy(out, x, size_t(n) * sizeof(To));
  } else if constexpr (std::is_same_v<From, bool>) {
    // Bools are 0 or 1; read as bytes the loop vectorizes (as bool it ran scalar, 12x slower).
    const auto* bytes = reinterpret_cast<const uint8_t*>(x);
    for (int64_t i = 0; i < n; ++i) out[i] = static_cast<To>(bytes[i]);
  } else if constexpr (std::is_floating_point_v<From> && std::is_integral_v<To> &&
                       !std::is_same_v<To, bool>) {
    if constexpr (cd::kClampable<From, To>) {
      cd::clamped_row(x, out, n);
    } else if constexpr (sizeof(From) == sizeof(To) && std::is_signed_v<To>) {
      cd::saturating_row<From, To>(x, out, n);
    } else if constexpr (std::is_same_v<From, float> && std::is_same_v<To, int64_t>) {
      cd::float_to_int64_row(x, out, n);
    } else {
      for (int64_t i = 0; i < n; ++i) out[i] = convert<To>(x[i]);
    }
  } else {
    for (int64_t i = 0; i < n; ++i) out[i] = convert<To>(x[i]);
  }
}

}  // namespace lanes::kernels
