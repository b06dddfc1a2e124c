// lanes::random (jax.random): keys, split, fold_in, and the distributions composed from the
// random primitives and elementwise ops. The conversions follow jax so that the numbers are an
// exact function of (key, index): uniform(lo, hi) = max(lo, u * (hi - lo) + lo) with u in
// [0, 1); bernoulli = uniform < p.
#include <cmath>
#include <limits>
#include <numbers>

#include "lanes/array_ops.h"
#include "lanes/autodiff.h"
#include "lanes/random.h"
#include "ops/internal.h"
#include "primitives/random.h"

namespace lanes::random {

using ops::apply;

namespace {

void check_key(const Key& key, const char* op) {
  check(key.bits.defined(), op, ": key is an undefined tensor");
  check(key.bits.dtype() == DType::Int64 && key.bits.ndim() == 0, op,
        ": key must be a 0-d int64 tensor (random::key), got ", dtype_name(key.bits.dtype()),
        fmt(key.bits.shape()));
}

void check_float(DType dtype, const char* op) {
  check(is_floating(dtype), op, ": dtype must be float32 or float64, got ", dtype_name(dtype));
}

void check_shape(const Shape& shape, const char* op) {
  for (int64_t d : shape) check(d >= 0, op, ": negative dimension in shape ", fmt(shape));
}

Tensor int64_scalar(uint64_t bits) {
  return tensor(std::vector<int64_t>{static_cast<int64_t>(bits)}, Shape{});
}

// Whether v is finite once stored in dtype (float32 overflows long before double).
bool finite_in(double v, DType dtype) {
  return dtype == DType::Float32 ? std::isfinite(static_cast<float>(v)) : std::isfinite(v);
}

}  // namespace

Key key(uint64_t seed) { return Key{int64_scalar(seed)}; }

std::vector<Key> split(const Key& key, int64_t n) {
  check_key(key, "random.split");
  check(n >= 0, "random.split: the number of keys must be >= 0, got ", n);
  const Tensor keys = apply<prim::RandomSplit>({key.bits}, n);
  std::vector<Key> out;
  out.reserve(n);
  for (int64_t i = 0; i < n; ++i) out.push_back(Key{reshape(slice_axis(keys, 0, i, i + 1), {})});
  return out;
}

Key fold_in(const Key& key, uint64_t data) {
  check_key(key, "random.fold_in");
  return Key{apply<prim::RandomFoldIn>({key.bits, int64_scalar(data)})};
}

Key fold_in(const Key& key, const Tensor& data) {
  check_key(key, "random.fold_in");
  check(data.defined(), "random.fold_in: data is an undefined tensor");
  check(data.ndim() == 0 && (data.dtype() == DType::Int64 || data.dtype() == DType::Int32),
        "random.fold_in: data must be a 0-d int32 or int64 tensor, got ", dtype_name(data.dtype()),
        fmt(data.shape()));
  const Tensor d = data.dtype() == DType::Int64 ? data : cast(data, DType::Int64);
  return Key{apply<prim::RandomFoldIn>({key.bits, d})};
}

Tensor uniform(const Key& key, const Shape& shape, double lo, double hi, DType dtype) {
  check_key(key, "random.uniform");
  check_float(dtype, "random.uniform");
  check_shape(shape, "random.uniform");
  check(lo < hi && finite_in(lo, dtype) && finite_in(hi, dtype) && finite_in(hi - lo, dtype),
        "random.uniform: needs finite lo < hi (in ", dtype_name(dtype), "), got lo = ", lo,
        ", hi = ", hi);
  const Tensor u = apply<prim::RandomUniform>({key.bits}, shape, dtype);
  if (lo == 0.0 && hi == 1.0) return u;
  return maximum(u * (hi - lo) + lo, lo);
}

// Box-Muller with the uniforms of split(key)[0] and split(key)[1] (drawn by one primitive over
// both keys): sqrt(-2 log(1 - u1)) cos(2 pi u2). 1 - u1 is in (0, 1], so the log is finite.
// The elementwise kernels compute every element the same way wherever it lies, so the numbers
// are reproducible on any thread count.
Tensor normal(const Key& key, const Shape& shape, DType dtype) {
  check_key(key, "random.normal");
  check_float(dtype, "random.normal");
  check_shape(shape, "random.normal");
  const Tensor keys = apply<prim::RandomSplit>({key.bits}, 2);
  const Tensor u = apply<prim::RandomUniform>({keys}, shape, dtype);  // (2, shape...)
  const Tensor u1 = reshape(slice_axis(u, 0, 0, 1), shape);
  const Tensor u2 = reshape(slice_axis(u, 0, 1, 2), shape);
  const Tensor radius = sqrt(log(1.0 - u1) * -2.0);
  return radius * cos(u2 * (2.0 * std::numbers::pi));
}

Tensor bernoulli(const Key& key, double p, const Shape& shape) {
  check_key(key, "random.bernoulli");
  check(p >= 0.0 && p <= 1.0, "random.bernoulli: p must be in [0, 1], got ", p);
  check_shape(shape, "random.bernoulli");
  return uniform(key, shape) < p;
}

Tensor randint(const Key& key, const Shape& shape, int64_t lo, int64_t hi, DType dtype) {
  check_key(key, "random.randint");
  check(dtype == DType::Int32 || dtype == DType::Int64,
        "random.randint: dtype must be int32 or int64, got ", dtype_name(dtype));
  check_shape(shape, "random.randint");
  check(lo < hi, "random.randint: needs lo < hi, got lo = ", lo, ", hi = ", hi);
  check(dtype == DType::Int64 || (lo >= std::numeric_limits<int32_t>::min() &&
                                  hi - 1 <= std::numeric_limits<int32_t>::max()),
        "random.randint: [", lo, ", ", hi, ") does not fit int32");
  return apply<prim::RandomInt>({key.bits}, shape, lo, hi, dtype);
}

// Gumbel-max: argmax(logits + g) with g = -log(-log(u)) is a sample of softmax(logits). u = 0
// gives g = -inf: that entry is simply not chosen.
Tensor categorical(const Key& key, const Tensor& logits, int64_t axis) {
  check_key(key, "random.categorical");
  check(logits.defined(), "random.categorical: logits is an undefined tensor");
  check(is_floating(logits.dtype()), "random.categorical: logits must be float, got ",
        dtype_name(logits.dtype()));
  const int64_t n = logits.ndim();
  check(n >= 1 && axis >= -n && axis < n, "random.categorical: axis ", axis,
        " out of range for logits of shape ", fmt(logits.shape()));
  check(logits.shape(axis < 0 ? axis + n : axis) > 0,
        "random.categorical: no categories along axis ", axis, " of logits of shape ",
        fmt(logits.shape()));
  const Tensor u = apply<prim::RandomUniform>({key.bits}, logits.shape(), logits.dtype());
  const Tensor gumbel = -log(-log(u));
  return argmax(stop_gradient(logits) + gumbel, axis);
}

Tensor permutation(const Key& key, int64_t n) {
  check_key(key, "random.permutation");
  check(n >= 0, "random.permutation: n must be >= 0, got ", n);
  return argsort(apply<prim::RandomBits>({key.bits}, Shape{n}));
}

Tensor permutation(const Key& key, const Tensor& x) {
  check(x.defined(), "random.permutation: x is an undefined tensor");
  check(x.ndim() >= 1, "random.permutation: x needs an axis to shuffle, got shape ",
        fmt(x.shape()));
  return take(x, permutation(key, x.shape(0)), 0);
}

Tensor truncated_normal(const Key& key, double lo, double hi, const Shape& shape, DType dtype) {
  check_key(key, "random.truncated_normal");
  check_float(dtype, "random.truncated_normal");
  check_shape(shape, "random.truncated_normal");
  check(std::isfinite(lo) && std::isfinite(hi) && lo < hi,
        "random.truncated_normal: needs finite lo < hi, got lo = ", lo, ", hi = ", hi);
  return apply<prim::RandomTruncatedNormal>({key.bits}, shape, lo, hi, dtype);
}

Tensor fold_in_each(const Tensor& keys, const Tensor& data) {
  check(keys.defined() && keys.dtype() == DType::Int64 && data.defined() &&
            data.dtype() == DType::Int64,
        "random.fold_in_each: keys and data must be int64 tensors");
  return apply<prim::RandomFoldIn>({keys, data});
}

Tensor uniform_each(const Tensor& keys, const Shape& shape, DType dtype) {
  check(keys.defined() && keys.dtype() == DType::Int64,
        "random.uniform_each: keys must be an int64 tensor");
  check_float(dtype, "random.uniform_each");
  check_shape(shape, "random.uniform_each");
  return apply<prim::RandomUniform>({keys}, shape, dtype);
}

}  // namespace lanes::random
