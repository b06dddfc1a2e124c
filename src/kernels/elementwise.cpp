// Unary kernels and the elementwise op tables (names, accepted dtypes).
#include "kernels/elementwise.h"

#include "core/strided.h"
#include "kernels/elementwise_loops.h"
#include "kernels/elementwise_ops.h"

namespace lanes::kernels {

const char* unary_name(UnaryOp op) {
  static constexpr const char* names[] = {"neg",   "exp",  "log",      "log1p", "expm1", "sqrt",
                                          "rsqrt", "tanh", "logistic", "sin",   "cos",   "erf",
                                          "abs",   "sign", "floor",    "ceil",  "round", "not"};
  return names[static_cast<int>(op)];
}

const char* binary_name(BinaryOp op) {
  static constexpr const char* names[] = {"add",
                                          "sub",
                                          "mul",
                                          "div",
                                          "pow",
                                          "max",
                                          "min",
                                          "atan2",
                                          "eq",
                                          "ne",
                                          "lt",
                                          "le",
                                          "gt",
                                          "ge",
                                          "and",
                                          "or",
                                          "xor",
                                          "shift_left",
                                          "shift_right_arithmetic"};
  return names[static_cast<int>(op)];
}

bool unary_accepts(UnaryOp op, DType d) {
  switch (op) {
    case UnaryOp::LogicalNot:
      return d == DType::Bool;
    case UnaryOp::Neg:
    case UnaryOp::Abs:
    case UnaryOp::Sign:
      return d != DType::Bool;
    default:
      return is_floating(d);
  }
}

bool binary_accepts(BinaryOp op, DType d) {
  switch (op) {
    case BinaryOp::And:
    case BinaryOp::Or:
    case BinaryOp::Xor:
      return d == DType::Bool || is_integral(d);
    case BinaryOp::ShiftLeft:
    case BinaryOp::ShiftRight:
      return is_integral(d) && d != DType::Bool;
    case BinaryOp::Sub:
    case BinaryOp::Div:
    case BinaryOp::Pow:
      return d != DType::Bool;
    case BinaryOp::Atan2:
      return is_floating(d);
    default:
      return true;
  }
}

bool is_comparison(BinaryOp op) { return op >= BinaryOp::Eq && op <= BinaryOp::Ge; }

namespace {

template <class T, class F>
void run_unary(F f, const T* x, T* out, int64_t n) {
  loops::unary_row<T, T>(out, x, 1, n, f);
}

}  // namespace

Tensor empty_in_order_of(const Tensor& like, DType dtype) {
  const Shape& shape = like.shape();
  if (like.is_contiguous()) return Tensor::empty(shape, dtype);
  const std::vector<size_t> order = detail::memory_order(like.strides());
  Strides strides(shape.size());
  int64_t next = 1;
  for (size_t i = order.size(); i-- > 0;) {
    const size_t d = order[i];
    if (shape[d] != 1 && like.strides()[d] != next) return Tensor::empty(shape, dtype);  // gaps
    strides[d] = next;
    next *= shape[d];
  }
  return Tensor::empty({next}, dtype).view(shape, std::move(strides), 0);
}

Tensor unary(UnaryOp op, const Tensor& x, bool reuse) {
  check(unary_accepts(op, x.dtype()), unary_name(op), ": does not accept dtype ",
        dtype_name(x.dtype()));
  Tensor out = reuse && donatable(x, x.dtype()) ? x : empty_in_order_of(x, x.dtype());
  visit_dtype(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    with_unary<T>(op, [&](auto f) { loops::unary<T, T>(x, out, f); });
  });
  return out;
}

void unary_f32(UnaryOp op, const float* x, float* out, int64_t n) {
  with_unary<float>(op, [&](auto f) { run_unary<float>(f, x, out, n); });
}

void unary_contiguous(UnaryOp op, DType dtype, const void* x, void* out, int64_t n) {
  visit_dtype(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    with_unary<T>(op, [&](auto f) {
      loops::unary_row<T, T>(static_cast<T*>(out), static_cast<const T*>(x), 1, n, f);
    });
  });
}

bool unary_is_costly(UnaryOp op) {
  bool costly = false;
  if (!unary_accepts(op, DType::Float32)) return costly;
  with_unary<float>(op, [&](auto f) { costly = decltype(f)::grain < vm::kCheapGrain; });
  return costly;
}

}  // namespace lanes::kernels
