// Counter-based random numbers: Threefry-2x32 with 20 rounds (Salmon et al., "Parallel random
// numbers: as easy as 1, 2, 3", SC 2011), laid out as jax.random's partitionable Threefry.
//
// A key is 64 bits held in an Int64: the Threefry key words are (k0, k1) = (bits >> 32, bits &
// 0xffffffff). Element i of anything drawn from a key hashes the counter (i >> 32, i &
// 0xffffffff) under that key to (y0, y1), so every number is a pure function of (key, flat
// index): the same on any thread count, in any chunking, and for any shape with the same
// number of elements.
//  - split:   key i is y0 << 32 | y1 of counter i.
//  - fold_in: the key y0 << 32 | y1 of counter `data` (as jax: fold_in(k, i) == split(k, n)[i]).
//  - uniform: float32 from the 32 bits y0 ^ y1, float64 from the 64 bits y0 << 32 | y1: the top
//    23 / 52 bits become the mantissa of a float in [1, 2), minus 1, so [0, 1) exactly.
//
// The kernels take keys of any shape K (vmap batches keys as leading dims) and put the drawn
// dims after them.
#pragma once

#include <array>
#include <cstdint>

#include "lanes/tensor.h"

namespace lanes::kernels {

/// Threefry-2x32-20 of one counter: returns (y0, y1).
std::array<uint32_t, 2> threefry2x32(std::array<uint32_t, 2> key, std::array<uint32_t, 2> counter);

/// keys (K), Int64 -> (K..., n) Int64: n keys derived from each key.
Tensor random_split(const Tensor& keys, int64_t n);
/// keys, data: Int64 of one shape -> keys of that shape, each key folded with its data.
Tensor random_fold_in(const Tensor& keys, const Tensor& data);
/// keys (K), Int64 -> (K..., shape) of `dtype` (Float32 or Float64), uniform in [0, 1).
Tensor random_uniform(const Tensor& keys, const Shape& shape, DType dtype);
/// keys (K) -> (K..., shape) Int64: the 64 bits y0 << 32 | y1 of each position.
Tensor random_bits(const Tensor& keys, const Shape& shape);
/// keys (K) -> (K..., shape) of `dtype` (Int32 or Int64) in [lo, hi): lo + the high 64 bits of
/// the 128-bit product of the 64 random bits and hi - lo (Lemire's multiply-shift).
Tensor random_int(const Tensor& keys, const Shape& shape, int64_t lo, int64_t hi, DType dtype);
/// keys (K) -> (K..., shape) of a float dtype: standard normals conditioned on [lo, hi], the
/// inverse normal CDF of the float64 uniform (64 bits as above) mapped onto [Phi(lo), Phi(hi)),
/// computed in float64 on the side of zero where Phi is small (exact tails), then rounded.
Tensor random_truncated_normal(const Tensor& keys, const Shape& shape, double lo, double hi,
                               DType dtype);

}  // namespace lanes::kernels
