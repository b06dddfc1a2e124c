#include "primitives/elementwise.h"

#include <array>
#include <ostream>

#include <numbers>

#include "ir/trace.h"
#include "ops/internal.h"
#include "primitives/util.h"
#include "transforms/batching.h"
#include "transforms/masking.h"

namespace lanes::prim {

namespace {

/// Elementwise batching: every input moved to (or broadcast at) one batch dim, then the same
/// primitive on the batched operands. The first mapped input's dim is kept when they differ.
std::vector<Batched> batch_elementwise(const Primitive& prim, const std::vector<Batched>& in,
                                       int64_t size) {
  int64_t dim = batching::common_batch_dim(in);
  if (dim == kNotMapped)
    for (const Batched& b : in)
      if (b.mapped()) {
        dim = b.dim;
        break;
      }
  const std::vector<Tensor> args = batching::align_batch(in, size, dim);
  return {{bind1(prim.shared_from_this(), args), dim}};
}

// Undefined tensors are zero tangents / cotangents (lanes/primitive.h).
Tensor plus(const Tensor& a, const Tensor& b) {
  if (!a.defined()) return b;
  if (!b.defined()) return a;
  return add(a, b);
}
Tensor times(const Tensor& t, const Tensor& factor) {
  return t.defined() ? multiply(t, factor) : Tensor();
}
Tensor zeros_view(const Tensor& like) {
  return broadcast_to(scalar(0.0, like.dtype()), like.shape());
}
Tensor or_zeros(const Tensor& t, const Tensor& like) { return t.defined() ? t : zeros_view(like); }

/// d(kind)/dx applied to a tangent or cotangent t (unary derivatives are scalings, so jvp and
/// vjp agree). Undefined for kinds with a zero derivative.
Tensor unary_derivative(kernels::UnaryOp kind, const Tensor& x, const Tensor& y, const Tensor& t) {
  using K = kernels::UnaryOp;
  if (!t.defined() || !is_floating(x.dtype())) return {};
  switch (kind) {
    case K::Neg:
      return negative(t);
    case K::Exp:
      return t * y;
    case K::Log:
      return t / x;
    case K::Log1p:
      return t / (x + 1.0);
    case K::Expm1:
      return t * (y + 1.0);
    case K::Sqrt:
      return t / (y * 2.0);
    case K::Rsqrt:
      return t * (y / x * -0.5);
    case K::Tanh:
      return t * (1.0 - y * y);
    case K::Logistic:
      return t * (y * (1.0 - y));
    case K::Sin:
      return t * cos(x);
    case K::Cos:
      return negative(t * sin(x));
    case K::Erf:
      return t * (exp(negative(x * x)) * (2.0 * std::numbers::inv_sqrtpi));
    case K::Abs:
      return t * sign(x);
    default:  // sign, floor, ceil, round, not: piecewise constant
      return {};
  }
}

/// The partial derivatives (d/da, d/db) of a float binary op, each only if `want`s it; undefined
/// entries are zero. add and sub return {} and are handled by the callers without
/// multiplications.
std::pair<Tensor, Tensor> binary_partials(kernels::BinaryOp kind, const Tensor& a, const Tensor& b,
                                          const Tensor& y, std::array<bool, 2> want) {
  using K = kernels::BinaryOp;
  auto both = [&](auto da, auto db) -> std::pair<Tensor, Tensor> {
    return {want[0] ? da() : Tensor(), want[1] ? db() : Tensor()};
  };
  switch (kind) {
    case K::Mul:
      return both([&] { return b; }, [&] { return a; });
    case K::Div: {
      const Tensor inv = 1.0 / b;
      return both([&] { return inv; }, [&] { return negative(y * inv); });
    }
    case K::Pow:
      return both([&] { return b * pow(a, b - 1.0); },
                  [&] { return y * log(where(a == 0.0, ones_like(a), a)); });
    case K::Max:
    case K::Min: {
      // Ties split the derivative evenly (jax's balanced rule).
      const Tensor half = cast(a == b, a.dtype()) * 0.5;
      const Tensor a_wins = kind == K::Max ? a > b : a < b;
      const Tensor b_wins = kind == K::Max ? a < b : a > b;
      return both([&] { return cast(a_wins, a.dtype()) + half; },
                  [&] { return cast(b_wins, a.dtype()) + half; });
    }
    case K::Atan2: {
      const Tensor denom = a * a + b * b;
      return both([&] { return b / denom; }, [&] { return negative(a) / denom; });
    }
    default:
      return {};
  }
}

}  // namespace

// ---- unary ------------------------------------------------------------------------------------

std::vector<TensorType> Unary::infer(const std::vector<TensorType>& in) const {
  const char* op = kernels::unary_name(kind_);  // not name(): a string per traced op
  check_arity(in, 1, op);
  check(kernels::unary_accepts(kind_, in[0].dtype), op, ": does not accept an operand of ",
        fmt(in[0]));
  return single(in[0].shape, in[0].dtype);
}

double Unary::flops(const std::vector<TensorType>& in, const std::vector<TensorType>& out) const {
  return is_floating(in[0].dtype) ? double(shape_numel(out[0].shape)) : 0;
}

std::vector<Tensor> Unary::eval(const std::vector<Tensor>& in) const {
  return {kernels::unary(kind_, in[0], /*reuse=*/true)};
}

std::vector<Batched> Unary::batch(const std::vector<Batched>& in, int64_t size) const {
  return batch_elementwise(*this, in, size);
}

std::vector<Tensor> Unary::jvp(const std::vector<Tensor>& x, const std::vector<Tensor>& t,
                               const std::vector<Tensor>& y) const {
  return {unary_derivative(kind_, x[0], y[0], t[0])};
}

std::vector<Tensor> Unary::vjp(const std::vector<Tensor>& x, const std::vector<Tensor>& ct,
                               const std::vector<Tensor>& y) const {
  return {unary_derivative(kind_, x[0], y[0], ct[0])};
}

// ---- binary -----------------------------------------------------------------------------------

std::vector<TensorType> Binary::infer(const std::vector<TensorType>& in) const {
  const char* op = kernels::binary_name(kind_);
  check_arity(in, 2, op);
  check(in[0] == in[1], op, ": operands must have equal shapes and dtypes, got ", fmt(in[0]),
        " and ", fmt(in[1]));
  check(kernels::binary_accepts(kind_, in[0].dtype), op, ": does not accept operands of ",
        fmt(in[0]));
  return single(in[0].shape, is_comparison() ? DType::Bool : in[0].dtype);
}

double Binary::flops(const std::vector<TensorType>& in, const std::vector<TensorType>& out) const {
  return is_floating(in[0].dtype) ? double(shape_numel(out[0].shape)) : 0;
}

std::vector<Tensor> Binary::eval(const std::vector<Tensor>& in) const {
  return {kernels::binary(kind_, in[0], in[1], /*reuse=*/true)};
}

std::vector<Batched> Binary::batch(const std::vector<Batched>& in, int64_t size) const {
  return batch_elementwise(*this, in, size);
}

namespace {

// Whether a and b are one traced value. Concrete tensors cannot tell: stop_gradient(v) * v sees
// two views of v's storage, but only one factor is differentiated.
bool same_value(const Tensor& a, const Tensor& b) {
  return a.is_tracer() && b.is_tracer() && a.tracer()->trace_id == b.tracer()->trace_id &&
         a.tracer()->value == b.tracer()->value;
}

// x * x (square): the derivative 2x, so the cotangent is one product, g * 2x, where the general
// rule gives g * x + g * x; under vmap of a Jacobian, g is batched and x is not, and 2x is then
// computed once rather than a second pass over the batch.
bool is_square(kernels::BinaryOp kind, const std::vector<Tensor>& x) {
  return kind == kernels::BinaryOp::Mul && same_value(x[0], x[1]);
}

}  // namespace

std::vector<Tensor> Binary::jvp(const std::vector<Tensor>& x, const std::vector<Tensor>& t,
                                const std::vector<Tensor>& y) const {
  using K = kernels::BinaryOp;
  if (!is_floating(x[0].dtype()) || is_comparison() || kind_ == K::And || kind_ == K::Or ||
      kind_ == K::Xor)  // (shifts take integers only)
    return {Tensor()};
  if (kind_ == K::Add) return {plus(t[0], t[1])};
  if (kind_ == K::Sub) return {plus(t[0], t[1].defined() ? negative(t[1]) : Tensor())};
  if (is_square(kind_, x) && t[0].defined() && t[1].defined() && same_value(t[0], t[1]))
    return {times(t[0], x[0] * 2.0)};
  const auto [da, db] = binary_partials(kind_, x[0], x[1], y[0], {t[0].defined(), t[1].defined()});
  return {plus(times(t[0], da), times(t[1], db))};
}

std::vector<Tensor> Binary::vjp_wanted(const std::vector<Tensor>& x, const std::vector<Tensor>& ct,
                                       const std::vector<Tensor>& y,
                                       const std::vector<bool>& wanted) const {
  using K = kernels::BinaryOp;
  const Tensor& g = ct[0];
  if (!g.defined() || !is_floating(x[0].dtype()) || is_comparison() || kind_ == K::And ||
      kind_ == K::Or || kind_ == K::Xor)
    return {Tensor(), Tensor()};
  if (kind_ == K::Add) return {g, g};
  if (kind_ == K::Sub) return {g, wanted[1] ? negative(g) : Tensor()};
  if (is_square(kind_, x)) return {times(g, x[0] * 2.0), Tensor()};
  const auto [da, db] = binary_partials(kind_, x[0], x[1], y[0], {wanted[0], wanted[1]});
  return {da.defined() ? g * da : Tensor(), db.defined() ? g * db : Tensor()};
}

// ---- select -----------------------------------------------------------------------------------

std::vector<TensorType> Select::infer(const std::vector<TensorType>& in) const {
  check_arity(in, 3, "select");
  check(in[0].dtype == DType::Bool, "select: cond must be bool, got ", fmt(in[0]));
  check(in[1] == in[2], "select: on_true and on_false must have equal shapes and dtypes, got ",
        fmt(in[1]), " and ", fmt(in[2]));
  check(in[0].shape == in[1].shape, "select: cond ", fmt(in[0]), " must have the operands' shape ",
        fmt(in[1].shape));
  return single(in[1].shape, in[1].dtype);
}

std::vector<Tensor> Select::eval(const std::vector<Tensor>& in) const {
  return {kernels::select(in[0], in[1], in[2])};
}

std::vector<Batched> Select::batch(const std::vector<Batched>& in, int64_t size) const {
  return batch_elementwise(*this, in, size);
}

std::vector<Tensor> Select::jvp(const std::vector<Tensor>& x, const std::vector<Tensor>& t,
                                const std::vector<Tensor>&) const {
  if (!t[1].defined() && !t[2].defined()) return {Tensor()};
  return {where(x[0], or_zeros(t[1], x[1]), or_zeros(t[2], x[2]))};
}

std::vector<Tensor> Select::vjp_wanted(const std::vector<Tensor>& x, const std::vector<Tensor>& ct,
                                       const std::vector<Tensor>&,
                                       const std::vector<bool>& wanted) const {
  const Tensor& g = ct[0];
  if (!g.defined()) return {Tensor(), Tensor(), Tensor()};
  const Tensor zero = zeros_view(g);
  return {Tensor(), wanted[1] ? where(x[0], g, zero) : Tensor(),
          wanted[2] ? where(x[0], zero, g) : Tensor()};
}

// ---- cast -------------------------------------------------------------------------------------

std::string Cast::params() const { return std::string("new_dtype=") + dtype_name(dtype_); }

std::vector<TensorType> Cast::infer(const std::vector<TensorType>& in) const {
  check_arity(in, 1, "convert_element_type");
  return single(in[0].shape, dtype_);
}

std::vector<Tensor> Cast::eval(const std::vector<Tensor>& in) const {
  if (in[0].dtype() == dtype_) return {in[0]};
  return {kernels::cast(in[0], dtype_)};
}

std::vector<Batched> Cast::batch(const std::vector<Batched>& in, int64_t size) const {
  return batch_elementwise(*this, in, size);
}

// Only float -> float conversions carry derivatives.
std::vector<Tensor> Cast::jvp(const std::vector<Tensor>& x, const std::vector<Tensor>& t,
                              const std::vector<Tensor>&) const {
  if (!t[0].defined() || !is_floating(x[0].dtype()) || !is_floating(dtype_)) return {Tensor()};
  return {cast(t[0], dtype_)};
}

std::vector<Tensor> Cast::vjp(const std::vector<Tensor>& x, const std::vector<Tensor>& ct,
                              const std::vector<Tensor>&) const {
  if (!ct[0].defined() || !is_floating(x[0].dtype()) || !is_floating(dtype_)) return {Tensor()};
  return {cast(ct[0], x[0].dtype())};
}

// Masking (Pad): an elementwise value at a valid position reads only valid positions.
std::vector<Tensor> Unary::mask(const std::vector<Tensor>& in,
                                const detail::MaskContext& ctx) const {
  return ctx.rebind(in);
}
std::vector<Tensor> Binary::mask(const std::vector<Tensor>& in,
                                 const detail::MaskContext& ctx) const {
  return ctx.rebind(in);
}
std::vector<Tensor> Select::mask(const std::vector<Tensor>& in,
                                 const detail::MaskContext& ctx) const {
  return ctx.rebind(in);
}
std::vector<Tensor> Cast::mask(const std::vector<Tensor>& in,
                               const detail::MaskContext& ctx) const {
  return ctx.rebind(in);
}

}  // namespace lanes::prim
