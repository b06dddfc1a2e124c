// Binary kernels: arithmetic, comparisons (Bool results) and logical and/or.
#include "kernels/elementwise.h"
#include "kernels/elementwise_loops.h"
#include "kernels/elementwise_ops.h"

namespace lanes::kernels {

namespace {

/// Calls arith(functor) for ops giving T, compare(functor) for ops giving bool.
template <class T, class Arith, class Compare>
void with_binary(BinaryOp op, Arith&& arith, Compare&& compare) {
  switch (op) {
    case BinaryOp::Eq:
      return compare(vm::Eq{});
    case BinaryOp::Ne:
      return compare(vm::Ne{});
    case BinaryOp::Lt:
      return compare(vm::Lt{});
    case BinaryOp::Le:
      return compare(vm::Le{});
    case BinaryOp::Gt:
      return compare(vm::Gt{});
    case BinaryOp::Ge:
      return compare(vm::Ge{});
    case BinaryOp::Add:
      return arith(vm::Add{});
    case BinaryOp::Mul:
      return arith(vm::Mul{});
    case BinaryOp::Max:
      return arith(vm::Max{});
    case BinaryOp::Min:
      return arith(vm::Min{});
    default:
      break;
  }
  if constexpr (std::is_integral_v<T>) {  // bool included
    if (op == BinaryOp::And) return arith(vm::And{});
    if (op == BinaryOp::Or) return arith(vm::Or{});
    if (op == BinaryOp::Xor) return arith(vm::Xor{});
  }
  if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
    if (op == BinaryOp::ShiftLeft) return arith(vm::ShiftLeft{});
    if (op == BinaryOp::ShiftRight) return arith(vm::ShiftRight{});
  }
  if constexpr (!std::is_same_v<T, bool>) {
    if (op == BinaryOp::Sub) return arith(vm::Sub{});
    if (op == BinaryOp::Div) return arith(vm::Div{});
    if (op == BinaryOp::Pow) return arith(vm::Pow{});
    if constexpr (loops::kFloat<T>)
      if (op == BinaryOp::Atan2) return arith(vm::Atan2{});
  }
  throw Error(detail::concat(binary_name(op), ": unsupported dtype ", dtype_name(dtype_of<T>())));
}

// Whether a dim of t is broadcast (stride 0): the output then follows the other operand's order.
bool broadcast(const Tensor& t) {
  for (size_t d = 0; d < t.shape().size(); ++d)
    if (t.shape()[d] > 1 && t.strides()[d] == 0) return true;
  return false;
}

}  // namespace

Tensor binary(BinaryOp op, const Tensor& a, const Tensor& b, bool reuse) {
  check(a.shape() == b.shape() && a.dtype() == b.dtype(), binary_name(op),
        ": operands must have equal shapes and dtypes, got ", fmt(a.shape()), " ",
        dtype_name(a.dtype()), " and ", fmt(b.shape()), " ", dtype_name(b.dtype()));
  check(binary_accepts(op, a.dtype()), binary_name(op), ": does not accept dtype ",
        dtype_name(a.dtype()));
  const DType dtype = is_comparison(op) ? DType::Bool : a.dtype();
  Tensor out = reuse && donatable(a, dtype)   ? a
               : reuse && donatable(b, dtype) ? b
                                              : empty_in_order_of(broadcast(a) ? b : a, dtype);
  visit_dtype(a.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    with_binary<T>(
        op, [&](auto f) { loops::binary<T, T>(a, b, out, f); },
        [&](auto f) { loops::binary<T, bool>(a, b, out, f); });
  });
  return out;
}

void binary_contiguous(BinaryOp op, DType dtype, const void* a, const void* b, void* out,
                       int64_t n) {
  visit_dtype(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* pa = static_cast<const T*>(a);
    const T* pb = static_cast<const T*>(b);
    with_binary<T>(
        op, [&](auto f) { loops::binary_row<T, T>(static_cast<T*>(out), pa, 1, pb, 1, n, f); },
        [&](auto f) { loops::binary_row<T, bool>(static_cast<bool*>(out), pa, 1, pb, 1, n, f); });
  });
}

bool binary_is_costly(BinaryOp op) {
  bool costly = false;
  if (!binary_accepts(op, DType::Float32)) return costly;
  auto grain = [&](auto f) { costly = decltype(f)::grain < vm::kCheapGrain; };
  with_binary<float>(op, grain, grain);
  return costly;
}

}  // namespace lanes::kernels
