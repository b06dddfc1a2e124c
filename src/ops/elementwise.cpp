// Elementwise ops: numpy broadcasting and jax type promotion (lanes/dtype.h) over the
// elementwise primitives; square, relu and clip are composites.
#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <limits>

#include "ops/internal.h"
#include "primitives/elementwise.h"

namespace lanes {

using kernels::BinaryOp;
using kernels::UnaryOp;
using ops::apply;

namespace {

void need(const Tensor& x, const char* op, const char* arg) {
  check(x.defined(), op, ": ", arg, " is an undefined tensor");
}

// One primitive per kind, made once and shared: primitives are immutable, and a fresh one per
// op was an allocation on every traced and eager elementwise op.
template <class Prim, class Kind, size_t N>
const PrimitivePtr& shared(Kind kind) {
  static const std::array<PrimitivePtr, N> prims = [] {
    std::array<PrimitivePtr, N> out;
    for (size_t k = 0; k < N; ++k) out[k] = std::make_shared<const Prim>(Kind(k));
    return out;
  }();
  return prims.at(size_t(kind));
}
constexpr size_t kBinaryOps = size_t(BinaryOp::ShiftRight) + 1;
constexpr size_t kUnaryOps = size_t(UnaryOp::LogicalNot) + 1;

Tensor apply_binary(BinaryOp kind, const Tensor& x, const Tensor& y) {
  return bind1(shared<prim::Binary, BinaryOp, kBinaryOps>(kind), {x, y});
}
Tensor apply_unary(UnaryOp kind, const Tensor& x) {
  return bind1(shared<prim::Unary, UnaryOp, kUnaryOps>(kind), {x});
}

/// a and b promoted to one dtype (at least `floor`'s kind when given) and broadcast together.
std::pair<Tensor, Tensor> prepare(const Tensor& a, const Tensor& b, const char* op,
                                  bool to_float = false) {
  need(a, op, "lhs");
  need(b, op, "rhs");
  DType t = promote_types(a.dtype(), b.dtype());
  if (to_float && !is_floating(t)) t = DType::Float32;
  if (a.shape() == b.shape()) return {cast(a, t), cast(b, t)};  // most ops: no shape to build
  const Shape shape = ops::broadcast_shapes(a.shape(), b.shape(), op);
  return {broadcast_to(cast(a, t), shape), broadcast_to(cast(b, t), shape)};
}

Tensor binary(BinaryOp kind, const char* op, const Tensor& a, const Tensor& b,
              bool to_float = false) {
  auto [x, y] = prepare(a, b, op, to_float);
  check(kernels::binary_accepts(kind, x.dtype()), op, ": does not accept operands of dtype ",
        dtype_name(x.dtype()), " (shapes ", fmt(a.shape()), " and ", fmt(b.shape()), ")");
  return apply_binary(kind, x, y);
}

/// Math on floats; integer and bool inputs become float32 first, as in jnp.
Tensor math(UnaryOp kind, const char* op, const Tensor& x) {
  need(x, op, "x");
  return apply_unary(kind, is_floating(x.dtype()) ? x : cast(x, DType::Float32));
}

Tensor numeric(UnaryOp kind, const char* op, const Tensor& x) {
  need(x, op, "x");
  check(x.dtype() != DType::Bool, op, ": does not accept a bool tensor of shape ", fmt(x.shape()));
  return apply_unary(kind, x);
}

Tensor to_bool(const Tensor& x) { return cast(x, DType::Bool); }

}  // namespace

Tensor add(const Tensor& a, const Tensor& b) { return binary(BinaryOp::Add, "add", a, b); }
Tensor subtract(const Tensor& a, const Tensor& b) {
  return binary(BinaryOp::Sub, "subtract", a, b);
}
Tensor multiply(const Tensor& a, const Tensor& b) {
  return binary(BinaryOp::Mul, "multiply", a, b);
}
Tensor divide(const Tensor& a, const Tensor& b) {
  return binary(BinaryOp::Div, "divide", a, b, true);
}
Tensor pow(const Tensor& a, const Tensor& b) { return binary(BinaryOp::Pow, "pow", a, b); }
Tensor maximum(const Tensor& a, const Tensor& b) { return binary(BinaryOp::Max, "maximum", a, b); }
Tensor minimum(const Tensor& a, const Tensor& b) { return binary(BinaryOp::Min, "minimum", a, b); }
Tensor atan2(const Tensor& a, const Tensor& b) {
  return binary(BinaryOp::Atan2, "atan2", a, b, true);
}

Tensor negative(const Tensor& x) { return numeric(UnaryOp::Neg, "negative", x); }
Tensor exp(const Tensor& x) { return math(UnaryOp::Exp, "exp", x); }
Tensor log(const Tensor& x) { return math(UnaryOp::Log, "log", x); }
Tensor log1p(const Tensor& x) { return math(UnaryOp::Log1p, "log1p", x); }
Tensor expm1(const Tensor& x) { return math(UnaryOp::Expm1, "expm1", x); }
Tensor sqrt(const Tensor& x) { return math(UnaryOp::Sqrt, "sqrt", x); }
Tensor rsqrt(const Tensor& x) { return math(UnaryOp::Rsqrt, "rsqrt", x); }
Tensor tanh(const Tensor& x) { return math(UnaryOp::Tanh, "tanh", x); }
Tensor sigmoid(const Tensor& x) { return math(UnaryOp::Logistic, "sigmoid", x); }
Tensor sin(const Tensor& x) { return math(UnaryOp::Sin, "sin", x); }
Tensor cos(const Tensor& x) { return math(UnaryOp::Cos, "cos", x); }
Tensor erf(const Tensor& x) { return math(UnaryOp::Erf, "erf", x); }

// abs of bool and unsigned values is the identity (numpy keeps the dtype).
Tensor abs(const Tensor& x) {
  need(x, "abs", "x");
  if (x.dtype() == DType::Bool || x.dtype() == DType::UInt8) return x;
  return apply_unary(UnaryOp::Abs, x);
}
Tensor sign(const Tensor& x) { return numeric(UnaryOp::Sign, "sign", x); }

// Rounding integers changes nothing (jnp returns them as they are).
Tensor floor(const Tensor& x) {
  need(x, "floor", "x");
  return is_floating(x.dtype()) ? apply_unary(UnaryOp::Floor, x) : x;
}
Tensor ceil(const Tensor& x) {
  need(x, "ceil", "x");
  return is_floating(x.dtype()) ? apply_unary(UnaryOp::Ceil, x) : x;
}
Tensor round(const Tensor& x) {
  need(x, "round", "x");
  return is_floating(x.dtype()) ? apply_unary(UnaryOp::Round, x) : x;
}

Tensor square(const Tensor& x) {
  need(x, "square", "x");
  return multiply(x, x);
}

// A select rather than maximum(x, 0): the same values (NaN stays NaN), but the derivative at 0
// is 0, as jax.nn.relu defines it, not the 0.5 of maximum's evenly split tie.
Tensor relu(const Tensor& x) {
  need(x, "relu", "x");
  const Tensor zero = weak_scalar(0.0, false, x);
  return where(less_equal(x, zero), zero, x);
}

// The bounds are converted to x's dtype, which clip keeps; for integers they round inward
// (ceil(lo), floor(hi)) and clamp to the dtype's range, so the result is exact.
Tensor clip(const Tensor& x, double lo, double hi) {
  need(x, "clip", "x");
  if (is_floating(x.dtype()) || x.dtype() == DType::Bool)
    return minimum(maximum(x, scalar(lo, x.dtype())), scalar(hi, x.dtype()));
  const double min = x.dtype() == DType::UInt8   ? 0.0
                     : x.dtype() == DType::Int32 ? -2147483648.0
                                                 : -9.2e18;
  const double max = x.dtype() == DType::UInt8   ? 255.0
                     : x.dtype() == DType::Int32 ? 2147483647.0
                                                 : 9.2e18;
  auto bound = [&](double v) {
    return kernels::cast(scalar(std::clamp(v, min, max), DType::Float64), x.dtype());
  };
  return minimum(maximum(x, bound(std::ceil(lo))), bound(std::floor(hi)));
}

Tensor clip(const Tensor& x, const Tensor& lo, const Tensor& hi) {
  need(x, "clip", "x");
  need(lo, "clip", "lo");
  need(hi, "clip", "hi");
  // Checked here so a bad shape is reported as clip's, with all three shapes.
  const Shape xl = ops::broadcast_shapes(x.shape(), lo.shape(), "clip (x and lo)");
  ops::broadcast_shapes(xl, hi.shape(), "clip (x, lo and hi)");
  return minimum(maximum(x, lo), hi);
}

Tensor equal(const Tensor& a, const Tensor& b) { return binary(BinaryOp::Eq, "equal", a, b); }
Tensor not_equal(const Tensor& a, const Tensor& b) {
  return binary(BinaryOp::Ne, "not_equal", a, b);
}
Tensor less(const Tensor& a, const Tensor& b) { return binary(BinaryOp::Lt, "less", a, b); }
Tensor less_equal(const Tensor& a, const Tensor& b) {
  return binary(BinaryOp::Le, "less_equal", a, b);
}
Tensor greater(const Tensor& a, const Tensor& b) { return binary(BinaryOp::Gt, "greater", a, b); }
Tensor greater_equal(const Tensor& a, const Tensor& b) {
  return binary(BinaryOp::Ge, "greater_equal", a, b);
}

// Logical ops take any dtype, as numpy: nonzero is true.
Tensor logical_and(const Tensor& a, const Tensor& b) {
  need(a, "logical_and", "lhs");
  need(b, "logical_and", "rhs");
  return binary(BinaryOp::And, "logical_and", to_bool(a), to_bool(b));
}
Tensor logical_or(const Tensor& a, const Tensor& b) {
  need(a, "logical_or", "lhs");
  need(b, "logical_or", "rhs");
  return binary(BinaryOp::Or, "logical_or", to_bool(a), to_bool(b));
}
Tensor logical_xor(const Tensor& a, const Tensor& b) {
  need(a, "logical_xor", "lhs");
  need(b, "logical_xor", "rhs");
  return binary(BinaryOp::Xor, "logical_xor", to_bool(a), to_bool(b));
}

// Bitwise ops take bool and integer operands (numpy's promotion: bool with int32 is int32).
Tensor bitwise_and(const Tensor& a, const Tensor& b) {
  return binary(BinaryOp::And, "bitwise_and", a, b);
}
Tensor bitwise_or(const Tensor& a, const Tensor& b) {
  return binary(BinaryOp::Or, "bitwise_or", a, b);
}
Tensor bitwise_xor(const Tensor& a, const Tensor& b) {
  return binary(BinaryOp::Xor, "bitwise_xor", a, b);
}
Tensor left_shift(const Tensor& a, const Tensor& b) {
  return binary(BinaryOp::ShiftLeft, "left_shift", a, b);
}
Tensor right_shift(const Tensor& a, const Tensor& b) {
  return binary(BinaryOp::ShiftRight, "right_shift", a, b);
}
Tensor bitwise_not(const Tensor& x) {
  need(x, "bitwise_not", "x");
  if (x.dtype() == DType::Bool) return logical_not(x);
  check(is_integral(x.dtype()), "bitwise_not: takes bool or integer operands, got ",
        dtype_name(x.dtype()), " of shape ", fmt(x.shape()));
  // ~x is x ^ (all ones): -1 in the signed types, the type's maximum in uint8.
  return bitwise_xor(x, full({}, x.dtype() == DType::UInt8 ? 255.0 : -1.0, x.dtype()));
}

Tensor logical_not(const Tensor& x) {
  need(x, "logical_not", "x");
  return apply_unary(UnaryOp::LogicalNot, to_bool(x));
}

Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b) {
  need(cond, "where", "cond");
  check(cond.dtype() == DType::Bool, "where: cond must be bool, got ", dtype_name(cond.dtype()),
        " of shape ", fmt(cond.shape()));
  auto [x, y] = prepare(a, b, "where");
  const Shape shape = ops::broadcast_shapes(cond.shape(), x.shape(), "where");
  return apply<prim::Select>(
      {broadcast_to(cond, shape), broadcast_to(x, shape), broadcast_to(y, shape)});
}

Tensor cast(const Tensor& x, DType dtype) {
  need(x, "cast", "x");
  if (x.dtype() == dtype) return x;
  return apply<prim::Cast>({x}, dtype);
}

namespace {
// The same few scalars recur in every derivative rule (1 - y*y, t / (2y), -0.5) and in user code;
// each would cost two tensors and a cast kernel per op, which is a good part of what tracing a
// rule costs. Tensors are immutable, so one per (value, dtype) and thread is shared. Being
// shared, none of them is ever donated to a kernel's output (Tensor::sole_owner).
Tensor make_scalar(double value, DType dtype) {
  if (lanes::is_floating(dtype)) return kernels::cast(scalar(value, DType::Float64), dtype);
  // Integers: saturate into int64, then wrap into the dtype (uint8 - 1 wraps like numpy).
  return kernels::cast(kernels::cast(scalar(value, DType::Float64), DType::Int64), dtype);
}

Tensor shared_scalar(double value, DType dtype) {
  struct Entry {
    uint64_t bits;
    DType dtype;
    Tensor t;
  };
  constexpr size_t kKept = 64;
  thread_local std::vector<Entry> kept;
  const uint64_t bits = std::bit_cast<uint64_t>(value);  // tells 0.0 from -0.0, keeps NaNs apart
  for (const Entry& e : kept)
    if (e.bits == bits && e.dtype == dtype) return e.t;
  if (kept.size() == kKept) kept.erase(kept.begin());
  kept.push_back({bits, dtype, make_scalar(value, dtype)});
  return kept.back().t;
}
}  // namespace

Tensor weak_scalar(double value, bool is_floating, const Tensor& like) {
  need(like, "weak_scalar", "like");
  return shared_scalar(value, promote_weak(like.dtype(), is_floating));
}

Tensor operator+(const Tensor& a, const Tensor& b) { return add(a, b); }
Tensor operator-(const Tensor& a, const Tensor& b) { return subtract(a, b); }
Tensor operator*(const Tensor& a, const Tensor& b) { return multiply(a, b); }
Tensor operator/(const Tensor& a, const Tensor& b) { return divide(a, b); }
Tensor operator-(const Tensor& x) { return negative(x); }
Tensor operator<(const Tensor& a, const Tensor& b) { return less(a, b); }
Tensor operator<=(const Tensor& a, const Tensor& b) { return less_equal(a, b); }
Tensor operator>(const Tensor& a, const Tensor& b) { return greater(a, b); }
Tensor operator>=(const Tensor& a, const Tensor& b) { return greater_equal(a, b); }
Tensor operator==(const Tensor& a, const Tensor& b) { return equal(a, b); }
Tensor operator!=(const Tensor& a, const Tensor& b) { return not_equal(a, b); }

}  // namespace lanes
