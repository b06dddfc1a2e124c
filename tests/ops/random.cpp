// lanes::random rows. The reference is an independent Threefry-2x32-20 written here from the
// Random123 specification, plus the same float conversions (jax's), so uniform and bernoulli
// values are checked exactly; normal goes through float log/cos and is checked to a few ulps.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <numbers>

#include "op_table.h"

namespace {

using namespace optable;
namespace random = lanes::random;

// ---- the reference ---------------------------------------------------------------------------

struct Words {
  uint32_t hi, lo;
};

uint32_t rotate_left(uint32_t x, unsigned r) { return (x << r) | (x >> (32u - r)); }

// Threefry-2x32 with 20 rounds: a key injection every 4 rounds (and before the first).
Words threefry(uint64_t key, uint64_t counter) {
  static const unsigned rotation[8] = {13, 15, 26, 6, 17, 29, 16, 24};
  const uint32_t k[3] = {uint32_t(key >> 32), uint32_t(key),
                         uint32_t(key >> 32) ^ uint32_t(key) ^ 0x1BD11BDAu};
  uint32_t x0 = uint32_t(counter >> 32) + k[0];
  uint32_t x1 = uint32_t(counter) + k[1];
  for (unsigned round = 0; round < 20; ++round) {
    x0 += x1;
    x1 = rotate_left(x1, rotation[round % 8]) ^ x0;
    if (round % 4 == 3) {
      const unsigned s = round / 4 + 1;
      x0 += k[s % 3];
      x1 += k[(s + 1) % 3] + s;
    }
  }
  return {x0, x1};
}

uint64_t as_key(Words w) { return uint64_t(w.hi) << 32 | w.lo; }
uint64_t split_key(uint64_t key, uint64_t i) { return as_key(threefry(key, i)); }

float unit_f32(uint64_t key, uint64_t i) {
  const Words w = threefry(key, i);
  const uint32_t bits = ((w.hi ^ w.lo) >> 9) | 0x3f800000u;
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f - 1.0f;
}

double unit_f64(uint64_t key, uint64_t i) {
  const uint64_t bits = (as_key(threefry(key, i)) >> 12) | 0x3ff0000000000000ull;
  double f;
  std::memcpy(&f, &bits, sizeof f);
  return f - 1.0;
}

double unit(DType dtype, uint64_t key, uint64_t i) {
  return dtype == DType::Float32 ? unit_f32(key, i) : unit_f64(key, i);
}

// Stores v in dtype and reads it back: the rounding of one float32 operation.
double in(DType dtype, double v) { return dtype == DType::Float32 ? double(float(v)) : v; }

uint64_t key_of(const Ref& r) { return static_cast<uint64_t>(static_cast<int64_t>(r.data[0])); }

// A key exactly representable as a double (the reference sees inputs as float64), with bits in
// both Threefry key words and sometimes the sign bit.
Tensor sample_key(Gen& gen) {
  const auto magnitude = static_cast<int64_t>(gen.rng() >> 11);
  const int64_t bits = gen.rng() & 1 ? -magnitude : magnitude;
  return lanes::tensor(std::vector<int64_t>{bits}, Shape{});
}

// ---- rows -------------------------------------------------------------------------------------

OpRow random_row(const std::string& name, const std::string& op,
                 std::function<Tensor(const random::Key&)> call,
                 std::function<Expected(uint64_t key)> reference) {
  OpRow r;
  r.name = name;
  r.op = op;
  r.dtypes = {DType::Int64};  // the key's
  r.sample = [](DType, Gen& gen) -> std::vector<Tensor> { return {sample_key(gen)}; };
  r.call = [call](const std::vector<Tensor>& in) { return call(random::Key{in[0]}); };
  r.reference = [reference](const std::vector<Ref>& in, DType) { return reference(key_of(in[0])); };
  r.rtol_float32 = 0;  // exact
  r.atol_float32 = 0;
  return r;
}

OpRow uniform_row(const std::string& name, Shape shape, double lo, double hi, DType dtype) {
  return random_row(
      name, "random_uniform",
      [=](const random::Key& k) { return random::uniform(k, shape, lo, hi, dtype); },
      [=](uint64_t key) {
        Ref out(shape);
        for (int64_t i = 0; i < out.numel(); ++i) {
          const double u = unit(dtype, key, i);
          const double scaled = in(dtype, in(dtype, u * in(dtype, hi - lo)) + in(dtype, lo));
          out.data[i] = lo == 0 && hi == 1 ? u : std::max(scaled, in(dtype, lo));
        }
        return Expected{out, dtype};
      });
}

// Box-Muller on the uniforms of split(key)[0] and split(key)[1], each float32 step rounded.
OpRow normal_row(const std::string& name, Shape shape, DType dtype) {
  OpRow r = random_row(
      name, "random_normal", [=](const random::Key& k) { return random::normal(k, shape, dtype); },
      [=](uint64_t key) {
        const uint64_t k1 = split_key(key, 0), k2 = split_key(key, 1);
        Ref out(shape);
        for (int64_t i = 0; i < out.numel(); ++i) {
          const double u1 = unit(dtype, k1, i), u2 = unit(dtype, k2, i);
          const double log_term = in(dtype, std::log(in(dtype, 1.0 - u1)));
          const double radius = in(dtype, std::sqrt(in(dtype, log_term * -2.0)));
          const double angle = in(dtype, u2 * in(dtype, 2.0 * std::numbers::pi));
          out.data[i] = radius * in(dtype, std::cos(angle));
        }
        return Expected{round_to(out, dtype), dtype};
      });
  r.rtol_float32 = 1e-5;  // float log and cos are within a few ulps, not exact
  r.atol_float32 = 1e-6;
  return r;
}

OpRow bernoulli_row(const std::string& name, Shape shape, double p) {
  return random_row(
      name, "random_bernoulli",
      [=](const random::Key& k) { return random::bernoulli(k, p, shape); },
      [=](uint64_t key) {
        Ref out(shape);
        for (int64_t i = 0; i < out.numel(); ++i) out.data[i] = unit_f32(key, i) < float(p);
        return Expected{out, DType::Bool};
      });
}

OpRow split_row() {
  return random_row(
      "random_split_5", "random_split",
      [](const random::Key& k) {
        std::vector<Tensor> bits;
        for (const random::Key& s : random::split(k, 5)) bits.push_back(s.bits);
        return lanes::stack(bits);
      },
      [](uint64_t key) {
        Ref out(Shape{5});
        for (int64_t i = 0; i < 5; ++i) out.data[i] = double(int64_t(split_key(key, i)));
        return Expected{out, DType::Int64};
      });
}

OpRow fold_in_row() {
  constexpr uint64_t kData = 0xfedcba9876543210ull;
  return random_row(
      "random_fold_in", "random_fold_in",
      [](const random::Key& k) { return random::fold_in(k, kData).bits; },
      [](uint64_t key) {
        return Expected{Ref(Shape{}, {double(int64_t(split_key(key, kData)))}), DType::Int64};
      });
}

// lo + the high 64 bits of (64 random bits) * (hi - lo): Lemire's multiply-shift.
OpRow randint_row(const std::string& name, Shape shape, int64_t lo, int64_t hi, DType dtype) {
  return random_row(
      name, "random_randint",
      [=](const random::Key& k) { return random::randint(k, shape, lo, hi, dtype); },
      [=](uint64_t key) {
        Ref out(shape);
        const uint64_t span = uint64_t(hi) - uint64_t(lo);
        for (int64_t i = 0; i < out.numel(); ++i) {
          __extension__ typedef unsigned __int128 U128;
          const uint64_t high = uint64_t((U128(as_key(threefry(key, uint64_t(i)))) * span) >> 64);
          out.data[i] = double(int64_t(uint64_t(lo) + high));
        }
        return Expected{out, dtype};
      });
}

// The indices in the order of their 64-bit random numbers (as int64, ties by index).
OpRow permutation_row(int64_t n) {
  return random_row(
      "random_permutation_" + std::to_string(n), "random_permutation",
      [=](const random::Key& k) { return random::permutation(k, n); },
      [=](uint64_t key) {
        std::vector<int64_t> idx(n);
        for (int64_t i = 0; i < n; ++i) idx[i] = i;
        auto bits = [&](int64_t i) { return int64_t(as_key(threefry(key, uint64_t(i)))); };
        std::stable_sort(idx.begin(), idx.end(),
                         [&](int64_t a, int64_t b) { return bits(a) < bits(b); });
        Ref out(Shape{n});
        for (int64_t i = 0; i < n; ++i) out.data[i] = double(idx[i]);
        return Expected{out, DType::Int64};
      });
}

// Gumbel-max over fixed float64 logits: argmax of logits - log(-log(u)).
OpRow categorical_row() {
  const Shape shape{6, 5};
  std::vector<double> logits(30);
  for (size_t i = 0; i < logits.size(); ++i) logits[i] = std::sin(double(i)) * 2.0;
  return random_row(
      "random_categorical", "random_categorical",
      [=](const random::Key& k) { return random::categorical(k, lanes::tensor(logits, shape)); },
      [=](uint64_t key) {
        Ref out(Shape{6});
        for (int64_t r = 0; r < 6; ++r) {
          double best = -INFINITY;
          for (int64_t c = 0; c < 5; ++c) {
            const double u = unit_f64(key, uint64_t(r * 5 + c));
            const double v = logits[r * 5 + c] - std::log(-std::log(u));
            if (v > best) best = v, out.data[r] = double(c);
          }
        }
        return Expected{out, DType::Int64};
      });
}

// The quantile of a + u (b - a) of the normal CDF, found by bisection on erfc (not the
// kernel's rational approximation), on the side of zero where the CDF is small.
OpRow truncated_normal_row(const std::string& name, Shape shape, double lo, double hi) {
  OpRow r = random_row(
      name, "random_truncated_normal",
      [=](const random::Key& k) { return random::truncated_normal(k, lo, hi, shape); },
      [=](uint64_t key) {
        auto cdf = [](double x) { return 0.5 * std::erfc(-x / std::sqrt(2.0)); };
        const bool flip = lo > 0;
        const double a0 = flip ? -hi : lo, b0 = flip ? -lo : hi;
        const double a = cdf(a0), b = cdf(b0);
        Ref out(shape);
        for (int64_t i = 0; i < out.numel(); ++i) {
          const double p = a + unit_f64(key, uint64_t(i)) * (b - a);
          double l = a0, h = b0;
          for (int it = 0; it < 200; ++it) {
            const double m = 0.5 * (l + h);
            (cdf(m) < p ? l : h) = m;
          }
          out.data[i] = flip ? -0.5 * (l + h) : 0.5 * (l + h);
        }
        return Expected{round_to(out, DType::Float32), DType::Float32};
      });
  r.rtol_float32 = 1e-6;
  r.atol_float32 = 1e-6;
  return r;
}

// fold_in with the datum as a 0-d int64 tensor.
OpRow fold_in_tensor_row() {
  constexpr int64_t kData = -0x123456789abcdefll;
  return random_row(
      "random_fold_in_tensor", "random_fold_in",
      [](const random::Key& k) {
        return random::fold_in(k, lanes::tensor(std::vector<int64_t>{kData}, Shape{})).bits;
      },
      [](uint64_t key) {
        return Expected{Ref(Shape{}, {double(int64_t(split_key(key, uint64_t(kData))))}),
                        DType::Int64};
      });
}

// Inverted dropout: x / (1 - rate) where the float32 uniform is below 1 - rate, else 0.
OpRow dropout_row(double rate) {
  const Shape shape{4, 9};
  std::vector<float> x(36);
  for (size_t i = 0; i < x.size(); ++i) x[i] = float(i) * 0.25f - 3.0f;
  return random_row(
      "dropout_" + std::to_string(int(rate * 100)), "dropout",
      [=](const random::Key& k) { return lanes::dropout(lanes::tensor(x, shape), rate, k, true); },
      [=](uint64_t key) {
        Ref out(shape);
        const float scale = float(1.0 / (1.0 - rate));
        for (int64_t i = 0; i < out.numel(); ++i)
          out.data[i] = unit_f32(key, uint64_t(i)) < float(1.0 - rate) ? double(x[i] * scale) : 0;
        return Expected{out, DType::Float32};
      });
}

random::Key bad_key(const Tensor& bits) { return random::Key{bits}; }

static Rows rows{
    {
        uniform_row("random_uniform_unit_f32", {3, 50}, 0.0, 1.0, DType::Float32),
        uniform_row("random_uniform_range_f32", {7, 9}, -2.0, 3.0, DType::Float32),
        uniform_row("random_uniform_unit_f64", {5, 13}, 0.0, 1.0, DType::Float64),
        uniform_row("random_uniform_range_f64", {2, 3, 11}, -1.5, 0.25, DType::Float64),
        uniform_row("random_uniform_scalar", {}, 10.0, 20.0, DType::Float32),
        uniform_row("random_uniform_empty", {4, 0}, 0.0, 1.0, DType::Float32),
        normal_row("random_normal_f32", {4, 33}, DType::Float32),
        normal_row("random_normal_f64", {37}, DType::Float64),
        bernoulli_row("random_bernoulli_p03", {5, 40}, 0.3),
        bernoulli_row("random_bernoulli_p0", {17}, 0.0),
        bernoulli_row("random_bernoulli_p1", {17}, 1.0),
        split_row(),
        fold_in_row(),
        randint_row("random_randint", {5, 7}, -20, 33, DType::Int64),
        randint_row("random_randint_i32", {40}, 0, 1000000, DType::Int32),
        randint_row("random_randint_one", {6}, 7, 8, DType::Int64),
        permutation_row(1),
        permutation_row(37),
        categorical_row(),
        truncated_normal_row("random_truncated_normal", {3, 20}, -1.0, 2.0),
        truncated_normal_row("random_truncated_normal_tail", {25}, 5.0, 6.0),
        truncated_normal_row("random_truncated_normal_lower_tail", {25}, -30.0, -29.5),
        fold_in_tensor_row(),
        dropout_row(0.1),
        dropout_row(0.5),
    },
    {
        {"random_uniform_int_dtype",
         [] { random::uniform(random::key(0), {2}, 0, 1, DType::Int32); },
         {"uniform", "dtype", "int32"}},
        {"random_uniform_bool_dtype",
         [] { random::uniform(random::key(0), {2}, 0, 1, DType::Bool); },
         {"uniform", "dtype", "bool"}},
        {"random_uniform_lo_equals_hi",
         [] { random::uniform(random::key(0), {2}, 1.0, 1.0); },
         {"uniform", "lo", "hi"}},
        {"random_uniform_lo_above_hi",
         [] { random::uniform(random::key(0), {2}, 2.0, 1.0); },
         {"uniform", "lo = 2", "hi = 1"}},
        {"random_uniform_nan_bound",
         [] { random::uniform(random::key(0), {2}, NAN, 1.0); },
         {"uniform", "lo"}},
        {"random_uniform_infinite_bound",
         [] { random::uniform(random::key(0), {2}, 0.0, INFINITY); },
         {"uniform", "hi"}},
        {"random_uniform_beyond_float32",
         [] { random::uniform(random::key(0), {2}, 0.0, 1e39); },
         {"uniform", "float32"}},
        {"random_uniform_negative_shape",
         [] {
           random::uniform(random::key(0), {2, -1});
         },
         {"uniform", "(2, -1)"}},
        {"random_normal_int_dtype",
         [] { random::normal(random::key(0), {2}, DType::Int64); },
         {"normal", "dtype", "int64"}},
        {"random_bernoulli_p_above_1",
         [] { random::bernoulli(random::key(0), 1.5, {2}); },
         {"bernoulli", "p", "1.5"}},
        {"random_bernoulli_p_negative",
         [] { random::bernoulli(random::key(0), -0.1, {2}); },
         {"bernoulli", "p", "-0.1"}},
        {"random_bernoulli_p_nan",
         [] { random::bernoulli(random::key(0), NAN, {2}); },
         {"bernoulli", "p"}},
        {"random_key_float",
         [] { random::uniform(bad_key(lanes::zeros({})), {2}); },
         {"uniform", "key", "float32"}},
        {"random_key_int32",
         [] { random::normal(bad_key(lanes::zeros({}, DType::Int32)), {2}); },
         {"normal", "key", "int32"}},
        {"random_key_1d",
         [] { random::bernoulli(bad_key(lanes::zeros({2}, DType::Int64)), 0.5, {2}); },
         {"bernoulli", "key", "(2,)"}},
        {"random_key_undefined",
         [] { random::split(bad_key(Tensor())); },
         {"split", "key", "undefined"}},
        {"random_split_key_2d",
         [] {
           random::split(bad_key(lanes::zeros({1, 1}, DType::Int64)));
         },
         {"split", "key", "(1, 1)"}},
        {"random_fold_in_key_float",
         [] { random::fold_in(bad_key(lanes::zeros({})), 3); },
         {"fold_in", "key", "float32"}},
        {"random_split_negative", [] { random::split(random::key(0), -1); }, {"split", "-1"}},
        {"random_randint_empty_range",
         [] { random::randint(random::key(0), {2}, 3, 3); },
         {"randint", "lo = 3", "hi = 3"}},
        {"random_randint_float_dtype",
         [] { random::randint(random::key(0), {2}, 0, 3, DType::Float32); },
         {"randint", "dtype", "float32"}},
        {"random_randint_int32_overflow",
         [] { random::randint(random::key(0), {2}, 0, int64_t(1) << 40, DType::Int32); },
         {"randint", "int32"}},
        {"random_categorical_int_logits",
         [] { random::categorical(random::key(0), lanes::zeros({3}, DType::Int32)); },
         {"categorical", "logits", "int32"}},
        {"random_categorical_axis",
         [] { random::categorical(random::key(0), lanes::zeros({3}), 1); },
         {"categorical", "axis 1"}},
        {"random_categorical_no_categories",
         [] {
           random::categorical(random::key(0), lanes::zeros({3, 0}));
         },
         {"categorical", "no categories"}},
        {"random_permutation_negative",
         [] { random::permutation(random::key(0), -2); },
         {"permutation", "-2"}},
        {"random_permutation_scalar",
         [] { random::permutation(random::key(0), lanes::zeros({})); },
         {"permutation", "shape ()"}},
        {"random_truncated_normal_bounds",
         [] { random::truncated_normal(random::key(0), 1.0, -1.0, {2}); },
         {"truncated_normal", "lo = 1", "hi = -1"}},
        {"random_truncated_normal_infinite",
         [] { random::truncated_normal(random::key(0), -INFINITY, 0.0, {2}); },
         {"truncated_normal", "finite"}},
        {"random_fold_in_float_data",
         [] { random::fold_in(random::key(0), lanes::zeros({})); },
         {"fold_in", "data", "float32"}},
        {"random_fold_in_vector_data",
         [] { random::fold_in(random::key(0), lanes::zeros({2}, DType::Int64)); },
         {"fold_in", "data", "(2,)"}},
        {"dropout_rate_one",
         [] { lanes::dropout(lanes::ones({2}), 1.0, random::key(0), true); },
         {"dropout", "rate", "1"}},
        {"dropout_int_x",
         [] { lanes::dropout(lanes::ones({2}, DType::Int32), 0.5, random::key(0), true); },
         {"dropout", "int32"}},
        {"random_generator_traced_key",
         [] {
           lanes::vmap([](const Tensor& k) {
             random::Generator::from_key({k});
             return k;
           })(lanes::zeros({2}, DType::Int64));
         },
         {"Generator", "traced"}},
    }};

}  // namespace
