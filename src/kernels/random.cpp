#include "kernels/random.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <numbers>
#include <type_traits>

#include "lanes/parallel.h"

namespace lanes::kernels {

namespace {

constexpr uint32_t kParity = 0x1BD11BDA;  // Threefry's key schedule
constexpr int kLockstep = 16;  // counters hashed in lockstep (fixed trip counts vectorize)
// A hash is ~100 integer operations: a few thousand make a chunk worth a thread dispatch.
constexpr int64_t kDrawGrain = 4096;

// N counters' words, hashed in lockstep: Block for runs of outputs, Lanes<1> for one hash.
template <int N>
struct Lanes {
  alignas(64) uint32_t x0[N];
  alignas(64) uint32_t x1[N];
};
using Block = Lanes<kLockstep>;

// One Threefry round on every lane. The rotation is a template argument so that the loop
// vectorizes (a runtime rotation amount makes the compiler give up on it).
template <int R, int N>
inline void round(Lanes<N>& b) {
  for (int j = 0; j < N; ++j) {
    b.x0[j] += b.x1[j];
    b.x1[j] = ((b.x1[j] << R) | (b.x1[j] >> (32 - R))) ^ b.x0[j];
  }
}

template <int N>
inline void inject(Lanes<N>& b, uint32_t k0, uint32_t k1) {
  for (int j = 0; j < N; ++j) b.x0[j] += k0, b.x1[j] += k1;
}

// Four rounds with Threefry-2x32's rotations R_32x2 (13, 15, 26, 6 / 17, 29, 16, 24), then a
// key injection.
template <bool kFirstHalf, int N>
inline void four_rounds(Lanes<N>& b, const uint32_t* ks, uint32_t s) {
  if constexpr (kFirstHalf) {
    round<13>(b), round<15>(b), round<26>(b), round<6>(b);
  } else {
    round<17>(b), round<29>(b), round<16>(b), round<24>(b);
  }
  inject(b, ks[s % 3], ks[(s + 1) % 3] + s);
}

// Threefry-2x32-20 of the N counters in b, in place.
template <int N>
void hash(uint32_t k0, uint32_t k1, Lanes<N>& b) {
  const uint32_t ks[3] = {k0, k1, kParity ^ k0 ^ k1};
  inject(b, ks[0], ks[1]);
  four_rounds<true>(b, ks, 1);
  four_rounds<false>(b, ks, 2);
  four_rounds<true>(b, ks, 3);
  four_rounds<false>(b, ks, 4);
  four_rounds<true>(b, ks, 5);
}

// The counters first, first + 1, ... as (high word, low word) pairs.
void load_counters(uint64_t first, Block& b) {
  for (int j = 0; j < kLockstep; ++j) {
    const uint64_t c = first + uint64_t(j);
    b.x0[j] = static_cast<uint32_t>(c >> 32);
    b.x1[j] = static_cast<uint32_t>(c);
  }
}

// Calls emit(pos, n, block) for every run of n <= kLockstep outputs starting at flat position pos
// of a (nkeys, per_key) output, block holding the hashes of those positions' counters. In
// parallel over positions; each value depends only on its key and counter.
template <class Emit>
void for_each_hash(const int64_t* keys, int64_t nkeys, int64_t per_key, Emit&& emit) {
  parallel_for(nkeys * per_key, kDrawGrain, [&](int64_t begin, int64_t end) {
    Block b;
    for (int64_t pos = begin; pos < end;) {
      const int64_t q = pos / per_key, i = pos % per_key;
      const int64_t n = std::min<int64_t>({end - pos, per_key - i, kLockstep});
      const auto key = static_cast<uint64_t>(keys[q]);
      load_counters(static_cast<uint64_t>(i), b);
      hash(static_cast<uint32_t>(key >> 32), static_cast<uint32_t>(key), b);
      emit(pos, n, b);
      pos += n;
    }
  });
}

// 64 bits of a hash: y0 << 32 | y1.
inline uint64_t wide(uint32_t y0, uint32_t y1) { return uint64_t(y0) << 32 | y1; }

// The top 23 (52) bits as the mantissa of a float in [1, 2), minus 1: exactly [0, 1).
inline float unit_float(uint32_t bits) {
  return std::bit_cast<float>((bits >> 9) | 0x3f800000u) - 1.0f;
}
inline double unit_double(uint64_t bits) {
  return std::bit_cast<double>((bits >> 12) | 0x3ff0000000000000ull) - 1.0;
}
// Lane j of a block as a float of type T: float32 from y0 ^ y1, float64 from y0 << 32 | y1.
template <class T>
inline T unit(const Block& b, int j) {
  if constexpr (std::is_same_v<T, float>)
    return unit_float(b.x0[j] ^ b.x1[j]);
  else
    return unit_double(wide(b.x0[j], b.x1[j]));
}

Shape concat(const Shape& a, const Shape& b) {
  Shape out = a;
  out.insert(out.end(), b.begin(), b.end());
  return out;
}

}  // namespace

std::array<uint32_t, 2> threefry2x32(std::array<uint32_t, 2> key, std::array<uint32_t, 2> counter) {
  Lanes<1> b{{counter[0]}, {counter[1]}};
  hash(key[0], key[1], b);
  return {b.x0[0], b.x1[0]};
}

Tensor random_split(const Tensor& keys, int64_t n) {
  const Tensor k = keys.contiguous();
  Tensor out = Tensor::empty(concat(keys.shape(), {n}), DType::Int64);
  int64_t* dst = out.mutable_data<int64_t>();
  for_each_hash(k.data<int64_t>(), k.numel(), n, [&](int64_t pos, int64_t m, const Block& b) {
    for (int64_t j = 0; j < m; ++j) dst[pos + j] = static_cast<int64_t>(wide(b.x0[j], b.x1[j]));
  });
  return out;
}

Tensor random_fold_in(const Tensor& keys, const Tensor& data) {
  const Tensor k = keys.contiguous(), d = data.contiguous();
  Tensor out = Tensor::empty(keys.shape(), DType::Int64);
  const int64_t* pk = k.data<int64_t>();
  const int64_t* pd = d.data<int64_t>();
  int64_t* dst = out.mutable_data<int64_t>();
  parallel_for(out.numel(), kDrawGrain, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      const auto key = static_cast<uint64_t>(pk[i]), c = static_cast<uint64_t>(pd[i]);
      const auto y =
          threefry2x32({uint32_t(key >> 32), uint32_t(key)}, {uint32_t(c >> 32), uint32_t(c)});
      dst[i] = static_cast<int64_t>(wide(y[0], y[1]));
    }
  });
  return out;
}

Tensor random_uniform(const Tensor& keys, const Shape& shape, DType dtype) {
  const Tensor k = keys.contiguous();
  Tensor out = Tensor::empty(concat(keys.shape(), shape), dtype);
  visit_dtype(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_floating_point_v<T>) {
      T* dst = out.mutable_data<T>();
      for_each_hash(k.data<int64_t>(), k.numel(), shape_numel(shape),
                    [&](int64_t pos, int64_t m, const Block& b) {
                      if (m == kLockstep)  // fixed trip count: vectorized
                        for (int j = 0; j < kLockstep; ++j) dst[pos + j] = unit<T>(b, j);
                      else
                        for (int j = 0; j < m; ++j) dst[pos + j] = unit<T>(b, j);
                    });
    }
  });
  return out;
}

}  // namespace lanes::kernels

namespace lanes::kernels {

namespace {

__extension__ typedef unsigned __int128 U128;  // GCC and Clang; the high half of a 64x64 product

// Phi(x), the standard normal CDF, accurate in the lower tail (erfc has no cancellation there).
double normal_cdf(double x) { return 0.5 * std::erfc(-x / std::numbers::sqrt2); }

// Phi^-1(p) for p in (0, 1): Acklam's rational approximation (relative error 1.2e-9), then one
// Halley step on Phi(x) - p, which brings it to float64 accuracy. 0 -> -inf, 1 -> +inf.
double normal_quantile(double p) {
  if (p <= 0.0) return -std::numeric_limits<double>::infinity();
  if (p >= 1.0) return std::numeric_limits<double>::infinity();
  static const double a[] = {-3.969683028665376e+01, 2.209460984245205e+02,  -2.759285104469687e+02,
                             1.383577518672690e+02,  -3.066479806614716e+01, 2.506628277459239e+00};
  static const double b[] = {-5.447609879822406e+01, 1.615858368580409e+02, -1.556989798598866e+02,
                             6.680131188771972e+01, -1.328068155288572e+01};
  static const double c[] = {-7.784894002430293e-03, -3.223964580411365e-01, -2.400758277161838e+00,
                             -2.549732539343734e+00, 4.374664141464968e+00,  2.938163982698783e+00};
  static const double d[] = {7.784695709041462e-03, 3.224671290700398e-01, 2.445134137142996e+00,
                             3.754408661907416e+00};
  constexpr double kLow = 0.02425;
  double x;
  if (p < kLow || p > 1 - kLow) {
    const double q = std::sqrt(-2 * std::log(p < kLow ? p : 1 - p));
    x = (((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) /
        ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1);
    if (p > 1 - kLow) x = -x;
  } else {
    const double q = p - 0.5, r = q * q;
    x = (((((a[0] * r + a[1]) * r + a[2]) * r + a[3]) * r + a[4]) * r + a[5]) * q /
        (((((b[0] * r + b[1]) * r + b[2]) * r + b[3]) * r + b[4]) * r + 1);
  }
  const double e = normal_cdf(x) - p;
  const double u = e * std::sqrt(2 * std::numbers::pi) * std::exp(x * x / 2);
  return x - u / (1 + x * u / 2);
}

}  // namespace

Tensor random_bits(const Tensor& keys, const Shape& shape) {
  const Tensor k = keys.contiguous();
  Tensor out = Tensor::empty(concat(keys.shape(), shape), DType::Int64);
  int64_t* dst = out.mutable_data<int64_t>();
  for_each_hash(k.data<int64_t>(), k.numel(), shape_numel(shape),
                [&](int64_t pos, int64_t m, const Block& b) {
                  for (int64_t j = 0; j < m; ++j)
                    dst[pos + j] = static_cast<int64_t>(wide(b.x0[j], b.x1[j]));
                });
  return out;
}

Tensor random_int(const Tensor& keys, const Shape& shape, int64_t lo, int64_t hi, DType dtype) {
  const Tensor k = keys.contiguous();
  Tensor out = Tensor::empty(concat(keys.shape(), shape), dtype);
  // hi - lo as an unsigned 64-bit span: exact even for the whole int64 range.
  const uint64_t span = static_cast<uint64_t>(hi) - static_cast<uint64_t>(lo);
  visit_dtype(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_same_v<T, int32_t> || std::is_same_v<T, int64_t>) {
      T* dst = out.mutable_data<T>();
      for_each_hash(k.data<int64_t>(), k.numel(), shape_numel(shape),
                    [&](int64_t pos, int64_t m, const Block& b) {
                      for (int64_t j = 0; j < m; ++j) {
                        const U128 prod = static_cast<U128>(wide(b.x0[j], b.x1[j])) * span;
                        const uint64_t offset = static_cast<uint64_t>(prod >> 64);
                        dst[pos + j] = static_cast<T>(static_cast<uint64_t>(lo) + offset);
                      }
                    });
    }
  });
  return out;
}

Tensor random_truncated_normal(const Tensor& keys, const Shape& shape, double lo, double hi,
                               DType dtype) {
  const Tensor k = keys.contiguous();
  Tensor out = Tensor::empty(concat(keys.shape(), shape), dtype);
  // On [lo, hi] above zero, sample -x on [-hi, -lo], where Phi is small and accurate.
  const bool flip = lo > 0;
  const double a = normal_cdf(flip ? -hi : lo), b = normal_cdf(flip ? -lo : hi);
  visit_dtype(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_floating_point_v<T>) {
      T* dst = out.mutable_data<T>();
      for_each_hash(k.data<int64_t>(), k.numel(), shape_numel(shape),
                    [&](int64_t pos, int64_t m, const Block& blk) {
                      for (int64_t j = 0; j < m; ++j) {
                        const double u = unit_double(wide(blk.x0[j], blk.x1[j]));
                        double x = normal_quantile(a + u * (b - a));
                        x = std::clamp(flip ? -x : x, lo, hi);
                        dst[pos + j] = static_cast<T>(x);
                      }
                    });
    }
  });
  return out;
}

}  // namespace lanes::kernels
