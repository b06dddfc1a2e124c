// Elementwise kernels: unary math, binary arithmetic and comparisons, select, dtype conversion.
//
// Inputs may have any strides (0 included: broadcast views); outputs are fresh contiguous
// tensors, or with `reuse` an input's buffer when nothing else holds it (see donatable). Binary and
// select operands must already have equal shapes and dtypes (the primitives check, the ops
// broadcast and promote). float32/float64 math runs on xsimd batches (src/kernels/vector_math.h);
// strided operands are gathered into small buffers first so every layout computes bit-identical
// results. Large inputs are split over threads.
//
// Integer semantics never invoke undefined behaviour: add/sub/mul/neg/abs wrap around (two's
// complement), x / 0 == 0, INT_MIN / -1 == INT_MIN, float -> int conversion truncates toward
// zero and saturates (NaN -> 0), int -> narrower int wraps.
#pragma once

#include <cstdint>

#include "lanes/tensor.h"

namespace lanes::kernels {

/// Whether `t`'s buffer may become an output of `dtype` with t's shape: nothing else holds its
/// storage, and t covers exactly that storage, contiguously. Only a primitive's eval may ask: its
/// caller owns the input vector, and the executor passes each value there at its last use, so a
/// buffer that saw its last use becomes the output (one allocation and one value's memory
/// saved). A kernel called with a reference to a caller's only copy must not reuse it.
inline bool fills_storage(const Tensor& t, DType dtype) {
  return t.dtype() == dtype && t.offset() == 0 && t.is_contiguous() &&
         t.storage()->bytes() == size_t(t.numel()) * dtype_size(dtype);
}
inline bool donatable(const Tensor& t, DType dtype) {
  return t.sole_owner() && fills_storage(t, dtype);
}

/// A fresh tensor of `like`'s shape and `dtype` laid out in like's memory order when like is a
/// dense permutation (a transposed view of a whole buffer), else row-major. Elementwise outputs
/// follow their operands' order, as PyTorch's TensorIterator does: an op on a transposed
/// gradient then runs as one contiguous pass instead of a tiled gather (25 MB: ~13 -> ~2 ms).
Tensor empty_in_order_of(const Tensor& like, DType dtype);

enum class UnaryOp : uint8_t {
  Neg,
  Exp,
  Log,
  Log1p,
  Expm1,
  Sqrt,
  Rsqrt,
  Tanh,
  Logistic,  // sigmoid: 1 / (1 + exp(-x))
  Sin,
  Cos,
  Erf,
  Abs,
  Sign,
  Floor,
  Ceil,
  Round,  // half to even
  LogicalNot,
};

enum class BinaryOp : uint8_t {
  Add,
  Sub,
  Mul,
  Div,  // floats: true division; integers: truncates toward zero, x / 0 == 0
  Pow,
  Max,  // NaN propagates
  Min,
  Atan2,
  Eq,
  Ne,
  Lt,
  Le,
  Gt,
  Ge,
  And,  // bool: logical; integers: bitwise
  Or,
  Xor,
  ShiftLeft,   // integers; a shift by a negative count or by the width or more gives 0
  ShiftRight,  // integers, arithmetic for the signed ones; past the width: 0, or -1 if negative
};

/// lax-style names: "exp", "logistic", "add", "lt", ...
const char* unary_name(UnaryOp op);
const char* binary_name(BinaryOp op);

/// Whether `op` accepts operands of dtype `d` (the primitives' dtype rules).
bool unary_accepts(UnaryOp op, DType d);
bool binary_accepts(BinaryOp op, DType d);
/// Comparisons (eq ... ge) give Bool; every other op gives its operands' dtype.
bool is_comparison(BinaryOp op);

/// op(x), same shape and dtype as x; with `reuse`, in x's buffer if donatable.
Tensor unary(UnaryOp op, const Tensor& x, bool reuse = false);
/// op(a, b) for equal shapes and dtypes; with `reuse`, in a donatable operand's buffer.
Tensor binary(BinaryOp op, const Tensor& a, const Tensor& b, bool reuse = false);
/// cond ? a : b, with cond Bool and all three of one shape; a and b of one dtype.
Tensor select(const Tensor& cond, const Tensor& a, const Tensor& b);
/// x converted to `dtype` (see the header comment for the integer rules).
Tensor cast(const Tensor& x, DType dtype);

/// out[i] = op(x[i]) for contiguous float32 data on the calling thread: the kernel behind
/// unary() without the tensor plumbing (benchmarks).
void unary_f32(UnaryOp op, const float* x, float* out, int64_t n);

// The row kernels behind unary/binary/select/cast on n contiguous elements of `dtype` (the
// operands' dtype; binary comparisons write bool), on the calling thread, without the tensor
// plumbing: what a fused elementwise chain runs tile by tile (src/kernels/fused.cpp). They
// compute bit-identical results to the tensor kernels.
void unary_contiguous(UnaryOp op, DType dtype, const void* x, void* out, int64_t n);
void binary_contiguous(BinaryOp op, DType dtype, const void* a, const void* b, void* out,
                       int64_t n);
void select_contiguous(DType dtype, const bool* cond, const void* a, const void* b, void* out,
                       int64_t n);
void cast_contiguous(DType from, DType to, const void* x, void* out, int64_t n);
/// Whether op is evaluated with transcendental-class cost (exp, log, tanh, pow, ...): such chains
/// are worth splitting over threads sooner.
bool unary_is_costly(UnaryOp op);
bool binary_is_costly(BinaryOp op);

}  // namespace lanes::kernels
