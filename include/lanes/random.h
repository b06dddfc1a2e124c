// Counter-based random numbers with explicit keys (as jax.random).
//
// A Key is a 0-d Int64 tensor holding 64 bits of Threefry-2x32 key. Every number is a pure
// function of (key, position), so the same key gives the same numbers on any thread count and
// in any order of evaluation. Derive new keys with split / fold_in; never reuse a key for two
// different purposes.
#pragma once

#include <cstdint>
#include <vector>

#include "lanes/tensor.h"

namespace lanes::random {

struct Key {
  Tensor bits;  // shape (), Int64
};

Key key(uint64_t seed);
/// n independent keys derived from `key`.
std::vector<Key> split(const Key& key, int64_t n = 2);
/// A key derived from `key` and `data` (jax.random.fold_in).
Key fold_in(const Key& key, uint64_t data);

/// Uniform in [lo, hi).
Tensor uniform(const Key& key, const Shape& shape, double lo = 0.0, double hi = 1.0,
               DType dtype = DType::Float32);
/// Standard normal.
Tensor normal(const Key& key, const Shape& shape, DType dtype = DType::Float32);
/// Bool tensor, true with probability p.
Tensor bernoulli(const Key& key, double p, const Shape& shape);

}  // namespace lanes::random
