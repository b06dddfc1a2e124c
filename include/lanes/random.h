// Counter-based random numbers with explicit keys (as jax.random) and stateful generators.
//
// A Key is a 0-d Int64 tensor holding 64 bits of Threefry-2x32 key. Every number is a pure
// function of (key, position), so the same key gives the same numbers on any thread count and
// in any order of evaluation. Derive new keys with split / fold_in; never reuse a key for two
// different purposes.
//
// A Generator is a stateful source of keys (torch.Generator with jax's keys inside). The stream
// is exact: Generator(seed) holds the key k = key(seed) and a counter n starting at 0, and each
// draw takes the key fold_in(k, n) and increments n. So normal(gen, shape) is
// normal(fold_in(key(seed), n), shape) for the n-th draw: reproducible from the seed, the same
// on any thread count. Generator::from_key(k) starts the same stream from the key k. Copies of
// a Generator share one stream. Concurrent draws are safe (the counter is atomic); which thread
// gets which key is then up to the scheduler.
//
// Generators under transforms (lanes/implicit.h): compile reads the counter at each call (a
// compiled function draws new numbers on every call, the same as eager, and advances the
// generator as eager would); vmap follows VmapOptions::randomness (the default is an error;
// Same: one key K per vmapped call; Different: lane i gets the key fold_in(K, i), and its j-th
// draw in that call uses fold_in(fold_in(K, i), j), which is what Generator::from_key(
// fold_in(K, i)) gives the per-example loop). Either way the generator advances by one key per
// vmapped call. Draws inside a cond / while / scan body are traced once: use explicit keys there.
//
// Derivatives: the numbers are functions of the keys only, so nothing flows back through a
// draw. Parameters that are host numbers (lo, hi, p, rate) have no derivative; categorical's
// logits get a zero gradient (as in jax: argmax is piecewise constant).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "lanes/tensor.h"

namespace lanes {

namespace detail {
/// A Generator's stream: its key and the number of keys taken.
struct GeneratorState {
  uint64_t key = 0;
  std::atomic<uint64_t> counter{0};
};
}  // namespace detail

namespace random {

struct Key {
  Tensor bits;  // shape (), Int64
};

Key key(uint64_t seed);
/// n independent keys derived from `key`.
std::vector<Key> split(const Key& key, int64_t n = 2);
/// A key derived from `key` and `data` (jax.random.fold_in).
Key fold_in(const Key& key, uint64_t data);
/// The same with data a 0-d integer tensor (int64 bits; int32 is sign-extended), traced and
/// batchable: bit-identical to fold_in(key, data) with the same host integer.
Key fold_in(const Key& key, const Tensor& data);

/// A stateful source of keys (see the top of this file). Cheap to copy; copies share the stream.
class Generator {
 public:
  explicit Generator(uint64_t seed);
  /// The stream of key k: its n-th key is fold_in(k, n). k must be concrete.
  static Generator from_key(const Key& k);
  /// The next key of the stream (inside a transform: as lanes/implicit.h says).
  Key next_key() const;
  /// Keys taken so far, and rewinding / skipping (to save and restore a stream).
  uint64_t counter() const;
  void set_counter(uint64_t n) const;
  /// The key the stream derives from.
  Key base_key() const;
  const std::shared_ptr<detail::GeneratorState>& state() const { return state_; }

 private:
  std::shared_ptr<detail::GeneratorState> state_;
};

/// Uniform in [lo, hi).
Tensor uniform(const Key& key, const Shape& shape, double lo = 0.0, double hi = 1.0,
               DType dtype = DType::Float32);
/// Standard normal.
Tensor normal(const Key& key, const Shape& shape, DType dtype = DType::Float32);
/// Bool tensor, true with probability p.
Tensor bernoulli(const Key& key, double p, const Shape& shape);
/// Integers uniform in [lo, hi) (Int32 or Int64): lo + floor(b * (hi - lo) / 2^64) for 64
/// random bits b (Lemire's multiply-shift, bias below (hi - lo) / 2^64).
Tensor randint(const Key& key, const Shape& shape, int64_t lo, int64_t hi,
               DType dtype = DType::Int64);
/// Samples of the categorical distribution given by unnormalized log-probabilities along `axis`
/// (Int64, logits' shape without `axis`): argmax(logits + Gumbel noise) as jax. Traced logits
/// are fine (and batch under vmap); their gradient is zero.
Tensor categorical(const Key& key, const Tensor& logits, int64_t axis = -1);
/// A random permutation of 0..n-1 (Int64): the order that sorts n 64-bit random numbers.
Tensor permutation(const Key& key, int64_t n);
/// x with its first axis shuffled: take(x, permutation(key, x.shape(0))).
Tensor permutation(const Key& key, const Tensor& x);
/// Standard normal conditioned on [lo, hi] (finite, lo < hi), by inverting the normal CDF of a
/// uniform in [Phi(lo), Phi(hi)) in float64 (the tail nearer zero, so far tails stay accurate).
Tensor truncated_normal(const Key& key, double lo, double hi, const Shape& shape,
                        DType dtype = DType::Float32);

// The same draws from a Generator: each takes one key, gen.next_key().
Tensor uniform(const Generator& gen, const Shape& shape, double lo = 0.0, double hi = 1.0,
               DType dtype = DType::Float32);
Tensor normal(const Generator& gen, const Shape& shape, DType dtype = DType::Float32);
Tensor bernoulli(const Generator& gen, double p, const Shape& shape);
Tensor randint(const Generator& gen, const Shape& shape, int64_t lo, int64_t hi,
               DType dtype = DType::Int64);
Tensor categorical(const Generator& gen, const Tensor& logits, int64_t axis = -1);
Tensor permutation(const Generator& gen, int64_t n);
Tensor permutation(const Generator& gen, const Tensor& x);
Tensor truncated_normal(const Generator& gen, double lo, double hi, const Shape& shape,
                        DType dtype = DType::Float32);

// Hand-batched draws: what vmap makes of a draw from a mapped key, for code that batches by
// hand. `keys` holds key bits of any shape K (Int64).
/// keys folded with data (Int64, keys' shape): fold_in of each key with its datum.
Tensor fold_in_each(const Tensor& keys, const Tensor& data);
/// (K..., shape): row k is uniform(key k, shape) in [0, 1).
Tensor uniform_each(const Tensor& keys, const Shape& shape, DType dtype = DType::Float32);

}  // namespace random

/// Inverted dropout: when training, each element is kept with probability 1 - rate and scaled
/// by 1 / (1 - rate), else zeroed: where(uniform(key, x.shape) < 1 - rate, x * (1 / (1 - rate)),
/// 0) with the float32 uniform and 1 - rate, 1 / (1 - rate) rounded to x's dtype. Not training:
/// x itself, and nothing is drawn (a Generator does not advance). Training with a Generator
/// always takes one key, whatever the rate. rate is in [0, 1). Gradients flow through the kept
/// elements (times the scale); the mask has none.
Tensor dropout(const Tensor& x, double rate, const random::Key& key, bool training);
Tensor dropout(const Tensor& x, double rate, const random::Generator& gen, bool training);

}  // namespace lanes
