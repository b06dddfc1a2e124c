// random::Generator (a counter over a key; lanes/random.h has the stream), the draws that take
// one, and dropout.
#include "lanes/implicit.h"
#include "lanes/random.h"
#include "ops/internal.h"

namespace lanes {

namespace random {

Generator::Generator(uint64_t seed) : state_(std::make_shared<detail::GeneratorState>()) {
  state_->key = seed;
}

Generator Generator::from_key(const Key& k) {
  check(k.bits.defined() && k.bits.dtype() == DType::Int64 && k.bits.ndim() == 0,
        "random.Generator.from_key: needs a 0-d int64 key (random::key)");
  check(!k.bits.is_tracer(),
        "random.Generator.from_key: the key is traced; a generator's key must be concrete");
  Generator g(0);
  g.state_->key = static_cast<uint64_t>(k.bits.item<int64_t>());
  return g;
}

Key Generator::next_key() const { return Key{detail::generator_key(state_)}; }
uint64_t Generator::counter() const { return state_->counter.load(); }
void Generator::set_counter(uint64_t n) const { state_->counter.store(n); }
Key Generator::base_key() const { return key(state_->key); }

Tensor uniform(const Generator& gen, const Shape& shape, double lo, double hi, DType dtype) {
  return uniform(gen.next_key(), shape, lo, hi, dtype);
}
Tensor normal(const Generator& gen, const Shape& shape, DType dtype) {
  return normal(gen.next_key(), shape, dtype);
}
Tensor bernoulli(const Generator& gen, double p, const Shape& shape) {
  return bernoulli(gen.next_key(), p, shape);
}
Tensor randint(const Generator& gen, const Shape& shape, int64_t lo, int64_t hi, DType dtype) {
  return randint(gen.next_key(), shape, lo, hi, dtype);
}
Tensor categorical(const Generator& gen, const Tensor& logits, int64_t axis) {
  return categorical(gen.next_key(), logits, axis);
}
Tensor permutation(const Generator& gen, int64_t n) { return permutation(gen.next_key(), n); }
Tensor permutation(const Generator& gen, const Tensor& x) { return permutation(gen.next_key(), x); }
Tensor truncated_normal(const Generator& gen, double lo, double hi, const Shape& shape,
                        DType dtype) {
  return truncated_normal(gen.next_key(), lo, hi, shape, dtype);
}

}  // namespace random

namespace {
void check_dropout(const Tensor& x, double rate) {
  check(x.defined(), "dropout: x is an undefined tensor");
  check(is_floating(x.dtype()), "dropout: x must be float, got ", dtype_name(x.dtype()));
  check(rate >= 0.0 && rate < 1.0, "dropout: rate must be in [0, 1), got ", rate);
}
}  // namespace

// The mask is bernoulli(key, 1 - rate): a float32 uniform below float32(1 - rate).
Tensor dropout(const Tensor& x, double rate, const random::Key& key, bool training) {
  check_dropout(x, rate);
  if (!training) return x;
  const Tensor keep = random::bernoulli(key, 1.0 - rate, x.shape());
  return where(keep, x * (1.0 / (1.0 - rate)), 0.0);
}

Tensor dropout(const Tensor& x, double rate, const random::Generator& gen, bool training) {
  check_dropout(x, rate);
  if (!training) return x;
  return dropout(x, rate, gen.next_key(), training);
}

}  // namespace lanes
