// lanes::random rows. The reference is an independent Threefry-2x32-20 written here from the
// Random123 specification, plus the same float conversions (jax's), so uniform and bernoulli
// values are checked exactly; normal goes through float log/cos and is checked to a few ulps.
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
    }};

}  // namespace
