// Op-table rows of the elementwise family: every op over every dtype it accepts, numpy
// broadcasting ((3, 4) with (3, 4), (4,), (3, 1) and 0-d), weak scalars, mixed-dtype promotion
// and large inputs (threaded, SIMD). References are std:: float64 math; float32 results are
// compared against the float64 value within rtol_float32.
#include <cmath>

#include "op_table.h"

using namespace optable;

namespace {

using Fn1 = Tensor (*)(const Tensor&);
using Fn2 = Tensor (*)(const Tensor&, const Tensor&);
using Sample = std::function<std::vector<Tensor>(DType, Gen&)>;

DType float_of(DType d) { return lanes::is_floating(d) ? d : DType::Float32; }

/// What storing exact results in `d` gives: uint8 arithmetic wraps modulo 256, other integers
/// truncate (the samples keep them in range), bool is != 0, floats stay float64 references.
Ref in_dtype(const Ref& r, DType d) {
  if (d == DType::UInt8)
    return map1(r, [](double v) {
      const double m = std::fmod(std::trunc(v), 256.0);
      return m < 0 ? m + 256 : m;
    });
  if (lanes::is_floating(d)) return r;
  return round_to(r, d);
}

Expected same_dtype(const Ref& r, DType d) { return {in_dtype(r, d), d}; }
Expected float_result(const Ref& r, DType d) { return {r, float_of(d)}; }
Expected bool_result(const Ref& r, DType) { return {r, DType::Bool}; }

// ---- unary ------------------------------------------------------------------------------------

OpRow unary(std::string name, std::string op, std::vector<DType> dtypes, Fn1 fn,
            std::function<double(double)> f, double lo, double hi,
            Expected (*result)(const Ref&, DType), double rtol = 2e-6, bool diff = true,
            Shape shape = {3, 4}) {
  OpRow r;
  r.name = std::move(name);
  r.op = std::move(op);
  r.dtypes = std::move(dtypes);
  r.sample = [=](DType d, Gen& g) { return std::vector<Tensor>{g.uniform(shape, d, lo, hi)}; };
  r.call = [fn](const std::vector<Tensor>& in) { return fn(in[0]); };
  r.reference = [f, result](const std::vector<Ref>& in, DType d) {
    return result(map1(in[0], f), d);
  };
  r.rtol_float32 = rtol;
  r.differentiable = diff;
  return r;
}

/// exp-class rows: a (3, 4) row on every number dtype (integers become float32) and a large
/// float row (> 100K elements: threads and full SIMD batches).
void add_math(std::vector<OpRow>& rows, const std::string& op, Fn1 fn,
              std::function<double(double)> f, double lo, double hi, double rtol) {
  rows.push_back(unary(op, op, kAll, fn, f, lo, hi, float_result, rtol));
  rows.push_back(
      unary(op + "_large", op, kFloats, fn, f, lo, hi, float_result, rtol, true, {320, 330}));
}

double sigmoid_ref(double x) { return 1.0 / (1.0 + std::exp(-x)); }
double sign_ref(double x) { return x > 0 ? 1.0 : x < 0 ? -1.0 : 0.0; }

// Halves (ties) and random values: round must go to even on the ties.
std::vector<Tensor> rounding_sample(DType d, Gen& g) {
  Tensor x = g.uniform({4, 5}, DType::Float64, -4, 4);
  std::vector<double> v = x.to_vector<double>();
  for (size_t i = 0; i < v.size(); i += 2) v[i] = std::floor(v[i]) + 0.5;
  return {lanes::cast(lanes::tensor(v, {4, 5}), d)};
}

OpRow rounding(std::string op, Fn1 fn, double (*f)(double)) {
  OpRow r = unary(op, op, kAll, fn, f, -4, 4, same_dtype, 0, false, {4, 5});
  r.sample = rounding_sample;
  return r;
}

// ---- binary -----------------------------------------------------------------------------------

struct Pattern {
  const char* suffix;
  Shape a, b;
};
const Pattern kPatterns[] = {{"", {3, 4}, {3, 4}},
                             {"_bcast_row", {3, 4}, {4}},
                             {"_bcast_col", {3, 4}, {3, 1}},
                             {"_scalar", {3, 4}, {}},
                             {"_scalar_lhs", {}, {2, 3}}};

using BinarySample = std::function<std::vector<Tensor>(DType, Gen&, const Shape&, const Shape&)>;

BinarySample uniform2(double lo, double hi) {
  return [=](DType d, Gen& g, const Shape& a, const Shape& b) {
    return std::vector<Tensor>{g.uniform(a, d, lo, hi), g.uniform(b, d, lo, hi)};
  };
}

/// Divisors away from zero.
std::vector<Tensor> division_sample(DType d, Gen& g, const Shape& a, const Shape& b) {
  return {g.uniform(a, d, -4, 4), d == DType::Bool ? lanes::ones(b, d) : g.nonzero(b, d, 0.5, 3)};
}

/// Floats: positive bases, exponents in [-2, 2]; integers: small bases, exponents 0..4.
std::vector<Tensor> pow_sample(DType d, Gen& g, const Shape& a, const Shape& b) {
  if (lanes::is_floating(d)) return {g.uniform(a, d, 0.25, 3), g.uniform(b, d, -2, 2)};
  return {g.uniform(a, d, -3, 3), g.uniform(b, d, 0, 4)};
}

void add_binary(std::vector<OpRow>& rows, const std::string& op, std::vector<DType> dtypes, Fn2 fn,
                std::function<double(double, double)> f, BinarySample sample,
                Expected (*result)(const Ref&, DType), double rtol = 2e-6, bool diff = true) {
  for (const Pattern& p : kPatterns) {
    OpRow r;
    r.name = op + p.suffix;
    r.op = op;
    r.dtypes = dtypes;
    r.sample = [sample, p](DType d, Gen& g) { return sample(d, g, p.a, p.b); };
    r.call = [fn](const std::vector<Tensor>& in) { return fn(in[0], in[1]); };
    r.reference = [f, result](const std::vector<Ref>& in, DType d) {
      return result(map2(in[0], in[1], f), d);
    };
    r.rtol_float32 = rtol;
    r.differentiable = diff;
    rows.push_back(std::move(r));
  }
}

/// A row whose call and dtypes are free-form (weak scalars, mixed dtypes).
OpRow custom(std::string name, std::string op, std::vector<DType> dtypes, Sample sample,
             std::function<Tensor(const std::vector<Tensor>&)> call,
             std::function<Expected(const std::vector<Ref>&, DType)> reference, bool diff = false) {
  OpRow r;
  r.name = std::move(name);
  r.op = std::move(op);
  r.dtypes = std::move(dtypes);
  r.sample = std::move(sample);
  r.call = std::move(call);
  r.reference = std::move(reference);
  r.differentiable = diff;
  return r;
}

Sample one(Shape shape, double lo = -2, double hi = 2) {
  return [=](DType d, Gen& g) { return std::vector<Tensor>{g.uniform(shape, d, lo, hi)}; };
}

std::vector<OpRow> make_rows() {
  std::vector<OpRow> rows;

  // Arithmetic. Bool add/multiply are or/and (jnp); uint8 wraps around.
  add_binary(
      rows, "add", kAll, lanes::add, [](double a, double b) { return a + b; }, uniform2(-4, 4),
      same_dtype);
  add_binary(
      rows, "subtract", kNumbers, lanes::subtract, [](double a, double b) { return a - b; },
      uniform2(-4, 4), same_dtype);
  add_binary(
      rows, "multiply", kAll, lanes::multiply, [](double a, double b) { return a * b; },
      uniform2(-4, 4), same_dtype);
  add_binary(
      rows, "divide", kAll, lanes::divide, [](double a, double b) { return a / b; },
      division_sample, float_result);
  add_binary(
      rows, "pow", kNumbers, lanes::pow, [](double a, double b) { return std::pow(a, b); },
      pow_sample, same_dtype, 4e-6);
  add_binary(
      rows, "maximum", kAll, lanes::maximum, [](double a, double b) { return std::max(a, b); },
      uniform2(-4, 4), same_dtype);
  add_binary(
      rows, "minimum", kAll, lanes::minimum, [](double a, double b) { return std::min(a, b); },
      uniform2(-4, 4), same_dtype);
  add_binary(
      rows, "atan2", kAll, lanes::atan2, [](double a, double b) { return std::atan2(a, b); },
      uniform2(-4, 4), float_result, 4e-6);

  // Comparisons and logical ops give Bool; logical ops treat nonzero as true.
  const std::pair<const char*, std::pair<Fn2, double (*)(double, double)>> compares[] = {
      {"equal", {lanes::equal, [](double a, double b) { return double(a == b); }}},
      {"not_equal", {lanes::not_equal, [](double a, double b) { return double(a != b); }}},
      {"less", {lanes::less, [](double a, double b) { return double(a < b); }}},
      {"less_equal", {lanes::less_equal, [](double a, double b) { return double(a <= b); }}},
      {"greater", {lanes::greater, [](double a, double b) { return double(a > b); }}},
      {"greater_equal", {lanes::greater_equal, [](double a, double b) { return double(a >= b); }}},
      {"logical_and",
       {lanes::logical_and, [](double a, double b) { return double(a != 0 && b != 0); }}},
      {"logical_or",
       {lanes::logical_or, [](double a, double b) { return double(a != 0 || b != 0); }}},
      {"logical_xor",
       {lanes::logical_xor, [](double a, double b) { return double((a != 0) != (b != 0)); }}}};
  for (const auto& [op, fns] : compares)  // integer samples so ties (== 0 too) occur
    add_binary(rows, op, kAll, fns.first, fns.second, uniform2(-2, 2), bool_result, 0, false);

  // Bitwise ops on bools and integers keep the dtype (two's complement on the sampled values).
  const std::vector<DType> kBits = {DType::Bool, DType::UInt8, DType::Int32, DType::Int64};
  const std::pair<const char*, std::pair<Fn2, double (*)(double, double)>> bitwise[] = {
      {"bitwise_and",
       {lanes::bitwise_and, [](double a, double b) { return double(int64_t(a) & int64_t(b)); }}},
      {"bitwise_or",
       {lanes::bitwise_or, [](double a, double b) { return double(int64_t(a) | int64_t(b)); }}},
      {"bitwise_xor",
       {lanes::bitwise_xor, [](double a, double b) { return double(int64_t(a) ^ int64_t(b)); }}}};
  for (const auto& [op, fns] : bitwise)
    add_binary(rows, op, kBits, fns.first, fns.second, uniform2(-9, 9), same_dtype, 0, false);
  // Shifts on integers, counts from -2 to 9 (uint8's wrap to 254, 255): a count outside the
  // width gives numpy's 0, or -1 for a negative value shifted right.
  const std::vector<DType> kShifted = {DType::UInt8, DType::Int32, DType::Int64};
  auto outside = [](double count) { return count < 0 || count >= 64; };
  add_binary(
      rows, "left_shift", kShifted, lanes::left_shift,
      [=](double a, double b) {
        return outside(b) ? 0.0 : double(int64_t(uint64_t(int64_t(a)) << int64_t(b)));
      },
      uniform2(-2, 9), same_dtype, 0, false);
  add_binary(
      rows, "right_shift", kShifted, lanes::right_shift,
      [=](double a, double b) {
        return outside(b) ? (a < 0 ? -1.0 : 0.0) : double(int64_t(a) >> int64_t(b));
      },
      uniform2(-2, 9), same_dtype, 0, false);

  // Unary math (integers and bool become float32).
  add_math(
      rows, "exp", lanes::exp, [](double x) { return std::exp(x); }, -10, 10, 3e-7);
  add_math(
      rows, "log", lanes::log, [](double x) { return std::log(x); }, 0.01, 100, 3e-7);
  add_math(
      rows, "log1p", lanes::log1p, [](double x) { return std::log1p(x); }, -0.9, 10, 3e-7);
  add_math(
      rows, "expm1", lanes::expm1, [](double x) { return std::expm1(x); }, -3, 3, 3e-7);
  add_math(
      rows, "sqrt", lanes::sqrt, [](double x) { return std::sqrt(x); }, 0, 100, 2e-7);
  add_math(
      rows, "rsqrt", lanes::rsqrt, [](double x) { return 1 / std::sqrt(x); }, 0.01, 100, 3e-7);
  add_math(
      rows, "tanh", lanes::tanh, [](double x) { return std::tanh(x); }, -5, 5, 3e-7);
  add_math(rows, "sigmoid", lanes::sigmoid, sigmoid_ref, -20, 20, 4e-7);
  add_math(
      rows, "sin", lanes::sin, [](double x) { return std::sin(x); }, -10, 10, 3e-7);
  add_math(
      rows, "cos", lanes::cos, [](double x) { return std::cos(x); }, -10, 10, 3e-7);
  add_math(
      rows, "erf", lanes::erf, [](double x) { return std::erf(x); }, -4, 4, 3e-7);
  for (OpRow& r : rows)  // sin/cos cross zero: relative error is meaningless there
    if (r.op == "sin" || r.op == "cos" || r.op == "expm1" || r.op == "log1p" || r.op == "erf" ||
        r.op == "tanh" || r.op == "atan2")
      r.atol_float32 = 1e-7;

  // Sign-like ops keep the dtype; negative of uint8 wraps (numpy).
  rows.push_back(unary(
      "negative", "negative", kNumbers, lanes::negative, [](double x) { return -x; }, -4, 4,
      same_dtype));
  rows.push_back(unary(
      "abs", "abs", kAll, lanes::abs, [](double x) { return std::abs(x); }, -4, 4, same_dtype));
  rows.push_back(
      unary("sign", "sign", kNumbers, lanes::sign, sign_ref, -3, 3, same_dtype, 0, false));
  rows.push_back(unary(
      "square", "square", kNumbers, lanes::square, [](double x) { return x * x; }, -4, 4,
      same_dtype));
  rows.push_back(unary(
      "relu", "relu", kNumbers, lanes::relu, [](double x) { return std::max(x, 0.0); }, -4, 4,
      same_dtype));
  rows.push_back(rounding("floor", lanes::floor, [](double x) { return std::floor(x); }));
  rows.push_back(rounding("ceil", lanes::ceil, [](double x) { return std::ceil(x); }));
  rows.push_back(rounding("round", lanes::round, [](double x) { return std::nearbyint(x); }));
  rows.push_back(unary(
      "logical_not", "logical_not", kAll, lanes::logical_not,
      [](double x) { return double(x == 0); }, -2, 2, bool_result, 0, false));

  // clip keeps the dtype; integer bounds round inward (ceil(lo), floor(hi)).
  rows.push_back(custom(
      "clip", "clip", kNumbers, one({3, 4}, -3, 3),
      [](const std::vector<Tensor>& in) { return lanes::clip(in[0], -0.5, 1.5); },
      [](const std::vector<Ref>& in, DType d) {
        const bool f = lanes::is_floating(d);
        const double lo = f ? -0.5 : 0, hi = f ? 1.5 : 1;
        return Expected{map1(in[0], [=](double x) { return std::clamp(x, lo, hi); }), d};
      },
      true));

  // where: cond bool, the three broadcast together, a and b promoted.
  const std::pair<const char*, std::array<Shape, 3>> where_shapes[] = {
      {"where", {Shape{3, 4}, Shape{3, 4}, Shape{3, 4}}},
      {"where_bcast", {Shape{3, 1}, Shape{3, 4}, Shape{4}}},
      {"where_scalar", {Shape{3, 4}, Shape{}, Shape{3, 4}}},
      {"where_large", {Shape{320, 1}, Shape{320, 330}, Shape{330}}}};
  for (const auto& [name, s] : where_shapes)
    rows.push_back(custom(
        name, "where", kAll,
        [s](DType d, Gen& g) {
          return std::vector<Tensor>{g.uniform(s[0], DType::Bool), g.uniform(s[1], d),
                                     g.uniform(s[2], d)};
        },
        [](const std::vector<Tensor>& in) { return lanes::where(in[0], in[1], in[2]); },
        [](const std::vector<Ref>& in, DType d) {
          return Expected{map3(in[0], in[1], in[2],
                               [](double c, double a, double b) { return c != 0 ? a : b; }),
                          d};
        },
        true));

  // where with a scalar branch: weakly typed, so the tensor branch's dtype is kept.
  auto cond_and = [](Shape c, Shape x) {
    return [c, x](DType d, Gen& g) {
      return std::vector<Tensor>{g.uniform(c, DType::Bool), g.uniform(x, d)};
    };
  };
  rows.push_back(custom(
      "where_scalar_else", "where", kNumbers, cond_and({3, 1}, {3, 4}),
      [](const std::vector<Tensor>& in) { return lanes::where(in[0], in[1], 2); },
      [](const std::vector<Ref>& in, DType d) {
        return Expected{map2(in[0], in[1], [](double c, double a) { return c != 0 ? a : 2.0; }), d};
      },
      true));
  rows.push_back(custom(
      "where_scalar_then", "where", kFloats, cond_and({4}, {2, 4}),
      [](const std::vector<Tensor>& in) { return lanes::where(in[0], -0.25, in[1]); },
      [](const std::vector<Ref>& in, DType d) {
        return Expected{map2(in[0], in[1], [](double c, double b) { return c != 0 ? -0.25 : b; }),
                        d};
      },
      true));

  // clip with tensor bounds broadcast against x: minimum(maximum(x, lo), hi).
  rows.push_back(custom(
      "clip_tensor_bounds", "clip", kNumbers,
      [](DType d, Gen& g) {
        return std::vector<Tensor>{g.uniform({3, 4}, d, -3, 3), g.uniform({4}, d, -2, 0),
                                   g.uniform({3, 1}, d, 0, 2)};
      },
      [](const std::vector<Tensor>& in) { return lanes::clip(in[0], in[1], in[2]); },
      [](const std::vector<Ref>& in, DType d) {
        return Expected{
            map3(in[0], in[1], in[2],
                 [](double x, double lo, double hi) { return std::min(std::max(x, lo), hi); }),
            d};
      },
      true));

  // cast: to every dtype from every dtype (float -> int truncates, -> bool is != 0).
  for (DType to : kAll) {
    const double lo = to == DType::UInt8 ? 0 : -3;
    rows.push_back(custom(
        std::string("cast_to_") + lanes::dtype_name(to), "cast", kAll, one({3, 4}, lo, 3),
        [to](const std::vector<Tensor>& in) { return lanes::cast(in[0], to); },
        [to](const std::vector<Ref>& in, DType) {
          return Expected{round_to(in[0], to), to};
        },
        to == DType::Float64));  // float32 finite differences are noise
  }
  rows.push_back(custom(
      "cast_large", "cast", kFloats, one({320, 330}, -100, 100),
      [](const std::vector<Tensor>& in) { return lanes::cast(in[0], DType::Int32); },
      [](const std::vector<Ref>& in, DType) {
        return Expected{round_to(in[0], DType::Int32), DType::Int32};
      }));

  // Weak scalars: the tensor's dtype wins unless the scalar's kind is higher.
  rows.push_back(custom(
      "multiply_weak_float", "multiply", kAll, one({3, 4}),
      [](const std::vector<Tensor>& in) { return in[0] * 2.0; },
      [](const std::vector<Ref>& in, DType d) {
        return Expected{map1(in[0], [](double x) { return 2 * x; }), lanes::promote_weak(d, true)};
      },
      true));
  rows.push_back(custom(
      "multiply_int_by_half", "multiply", {DType::UInt8, DType::Int32, DType::Int64}, one({3, 4}),
      [](const std::vector<Tensor>& in) { return in[0] * 0.5; },
      [](const std::vector<Ref>& in, DType) {
        return Expected{map1(in[0], [](double x) { return 0.5 * x; }), DType::Float32};
      }));
  rows.push_back(custom(
      "add_weak_int", "add", kAll, one({3, 4}),
      [](const std::vector<Tensor>& in) { return in[0] + 1; },
      [](const std::vector<Ref>& in, DType d) {
        const DType t = lanes::promote_weak(d, false);
        return Expected{in_dtype(map1(in[0], [](double x) { return x + 1; }), t), t};
      },
      true));
  rows.push_back(custom(
      "subtract_weak_lhs", "subtract", kNumbers, one({3, 4}, 0, 4),
      [](const std::vector<Tensor>& in) { return 3 - in[0]; },
      [](const std::vector<Ref>& in, DType d) {
        return Expected{in_dtype(map1(in[0], [](double x) { return 3 - x; }), d), d};
      },
      true));
  rows.push_back(custom(
      "divide_weak_lhs", "divide", kNumbers,
      [](DType d, Gen& g) {
        return std::vector<Tensor>{g.nonzero({3, 4}, d, 0.5, 3)};
      },
      [](const std::vector<Tensor>& in) { return 1.0 / in[0]; },
      [](const std::vector<Ref>& in, DType d) {
        return Expected{map1(in[0], [](double x) { return 1 / x; }), float_of(d)};
      },
      true));
  rows.push_back(custom(
      "greater_weak_float", "greater", kAll, one({3, 4}),
      [](const std::vector<Tensor>& in) { return in[0] > 0.5; },
      [](const std::vector<Ref>& in, DType) {
        return Expected{map1(in[0], [](double x) { return double(x > 0.5); }), DType::Bool};
      }));
  rows.push_back(custom(
      "pow_weak_int", "pow", kNumbers, one({3, 4}, 0, 3),
      [](const std::vector<Tensor>& in) { return lanes::pow(in[0], 2); },
      [](const std::vector<Ref>& in, DType d) {
        return Expected{in_dtype(map1(in[0], [](double x) { return x * x; }), d), d};
      },
      true));
  rows.push_back(custom(
      "maximum_weak", "maximum", kNumbers, one({3, 4}),
      [](const std::vector<Tensor>& in) { return lanes::maximum(in[0], 1); },
      [](const std::vector<Ref>& in, DType d) {
        return Expected{map1(in[0], [](double x) { return std::max(x, 1.0); }), d};
      },
      true));
  rows.push_back(custom(
      "minimum_weak", "minimum", kNumbers, one({3, 4}),
      [](const std::vector<Tensor>& in) { return lanes::minimum(in[0], 1); },
      [](const std::vector<Ref>& in, DType d) {
        return Expected{map1(in[0], [](double x) { return std::min(x, 1.0); }), d};
      },
      true));

  // Mixed dtypes promote as jnp: int32 + float32 -> float32, uint8 + int32 -> int32, ...
  const std::array<DType, 2> mixes[] = {{DType::Int32, DType::Float32},
                                        {DType::UInt8, DType::Int32},
                                        {DType::Bool, DType::Float64},
                                        {DType::Float32, DType::Float64},
                                        {DType::Int64, DType::Float32}};
  for (const auto& m : mixes) {
    const DType a = m[0], b = m[1];
    rows.push_back(custom(
        std::string("add_") + lanes::dtype_name(a) + "_" + lanes::dtype_name(b), "add",
        {DType::Float64},
        [a, b](DType, Gen& g) {
          return std::vector<Tensor>{g.uniform({3, 4}, a), g.uniform({4}, b)};
        },
        [](const std::vector<Tensor>& in) { return in[0] + in[1]; },
        [b](const std::vector<Ref>& in, DType) {
          return Expected{map2(in[0], in[1], [](double x, double y) { return x + y; }), b};
        }));
  }
  rows.push_back(custom(
      "divide_int_true_division", "divide", {DType::Int32, DType::Int64, DType::UInt8},
      [](DType d, Gen& g) {
        return std::vector<Tensor>{g.uniform({3, 4}, d, 0, 9), g.nonzero({3, 4}, d, 1, 4)};
      },
      [](const std::vector<Tensor>& in) { return in[0] / in[1]; },
      [](const std::vector<Ref>& in, DType) {
        return Expected{map2(in[0], in[1], [](double x, double y) { return x / y; }),
                        DType::Float32};
      }));

  // Large operands: threaded loops, broadcast rows, SIMD bodies and tails.
  rows.push_back(custom(
      "add_large", "add", kNumbers,
      [](DType d, Gen& g) {
        return std::vector<Tensor>{g.uniform({320, 330}, d, -50, 50), g.uniform({330}, d, 0, 50)};
      },
      [](const std::vector<Tensor>& in) { return in[0] + in[1]; },
      [](const std::vector<Ref>& in, DType d) {
        return same_dtype(map2(in[0], in[1], [](double x, double y) { return x + y; }), d);
      },
      true));
  rows.push_back(custom(
      "multiply_large_weak", "multiply", kFloats, one({100003}),
      [](const std::vector<Tensor>& in) { return in[0] * 3.0; },
      [](const std::vector<Ref>& in, DType d) {
        return Expected{map1(in[0], [](double x) { return 3 * x; }), d};
      },
      true));
  rows.push_back(custom(
      "less_large", "less", kNumbers,
      [](DType d, Gen& g) {
        return std::vector<Tensor>{g.uniform({320, 330}, d), g.uniform({320, 1}, d)};
      },
      [](const std::vector<Tensor>& in) { return in[0] < in[1]; },
      [](const std::vector<Ref>& in, DType) {
        return Expected{map2(in[0], in[1], [](double x, double y) { return double(x < y); }),
                        DType::Bool};
      }));
  return rows;
}

std::vector<ErrorRow> make_errors() {
  std::vector<ErrorRow> errors;
  const std::pair<const char*, Fn2> binaries[] = {{"add", lanes::add},
                                                  {"subtract", lanes::subtract},
                                                  {"multiply", lanes::multiply},
                                                  {"divide", lanes::divide},
                                                  {"pow", lanes::pow},
                                                  {"maximum", lanes::maximum},
                                                  {"minimum", lanes::minimum},
                                                  {"atan2", lanes::atan2},
                                                  {"equal", lanes::equal},
                                                  {"less", lanes::less},
                                                  {"logical_and", lanes::logical_and}};
  for (const auto& [op, fn] : binaries) {
    errors.push_back({std::string(op) + "_broadcast_mismatch",
                      [fn = fn] {
                        fn(lanes::zeros({3, 4}), lanes::zeros({5}));
                      },
                      {op, "(3, 4)", "(5,)"}});
    errors.push_back({std::string(op) + "_undefined",
                      [fn = fn] { fn(lanes::zeros({3}), Tensor()); },
                      {op, "undefined"}});
  }
  errors.push_back({"clip_bounds_shape",
                    [] {
                      lanes::clip(lanes::zeros({2, 3}), lanes::zeros({3}), lanes::zeros({4}));
                    },
                    {"clip", "hi", "(2, 3)", "(4,)"}});
  errors.push_back({"clip_undefined_lo",
                    [] { lanes::clip(lanes::zeros({2}), Tensor(), lanes::zeros({2})); },
                    {"clip", "lo"}});
  errors.push_back({"where_non_bool_cond",
                    [] { lanes::where(lanes::zeros({3}), lanes::zeros({3}), lanes::zeros({3})); },
                    {"where", "bool", "float32", "(3,)"}});
  errors.push_back(
      {"where_broadcast_mismatch",
       [] {
         lanes::where(lanes::zeros({2, 3}, DType::Bool), lanes::zeros({3}), lanes::zeros({4}));
       },
       {"where", "(3,)", "(4,)"}});
  errors.push_back(
      {"where_cond_broadcast_mismatch",
       [] { lanes::where(lanes::zeros({2}, DType::Bool), lanes::zeros({3}), lanes::zeros({3})); },
       {"where", "(2,)", "(3,)"}});
  errors.push_back(
      {"cast_undefined", [] { lanes::cast(Tensor(), DType::Float32); }, {"cast", "undefined"}});
  errors.push_back({"exp_undefined", [] { lanes::exp(Tensor()); }, {"exp", "undefined"}});
  errors.push_back(
      {"negative_undefined", [] { lanes::negative(Tensor()); }, {"negative", "undefined"}});
  errors.push_back(
      {"subtract_bool",
       [] { lanes::subtract(lanes::ones({2}, DType::Bool), lanes::ones({2}, DType::Bool)); },
       {"subtract", "bool"}});
  errors.push_back(
      {"pow_bool",
       [] { lanes::pow(lanes::ones({2}, DType::Bool), lanes::ones({2}, DType::Bool)); },
       {"pow", "bool"}});
  errors.push_back({"negative_bool",
                    [] { lanes::negative(lanes::ones({2}, DType::Bool)); },
                    {"negative", "bool", "(2,)"}});
  errors.push_back(
      {"sign_bool", [] { lanes::sign(lanes::ones({2}, DType::Bool)); }, {"sign", "bool", "(2,)"}});
  errors.push_back({"weak_scalar_undefined", [] { (void)(Tensor() * 2.0); }, {"undefined"}});
  return errors;
}

Rows rows{make_rows(), make_errors()};

}  // namespace
