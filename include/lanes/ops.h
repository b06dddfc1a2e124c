// The user-facing op API. Each op binds primitives (see lanes/primitive.h); composite ops
// (softmax, tensordot, one_hot, ...) are built from other ops and need no rules of their own.
//
// Conventions (numpy / jax):
// - Binary elementwise ops broadcast with numpy rules and promote dtypes (lanes/dtype.h).
// - Axes may be negative (counted from the end). `Axes` converts from an int, a braced list or
//   a vector; default-constructed (or `{}`) it means "all axes".
// - Bad input throws lanes::Error naming the op, the shapes and the argument.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <type_traits>
#include <vector>

#include "lanes/tensor.h"

namespace lanes {

/// A set of axes; default-constructed means every axis.
struct Axes {
  Axes() = default;
  Axes(int64_t axis) : list{axis}, all(false) {}  // NOLINT: implicit on purpose
  Axes(int axis) : list{axis}, all(false) {}      // NOLINT
  Axes(std::initializer_list<int64_t> axes) : list(axes), all(false) {}
  Axes(std::vector<int64_t> axes) : list(std::move(axes)), all(false) {}  // NOLINT
  std::vector<int64_t> list;
  bool all = true;
};

// ---- creation ---------------------------------------------------------------------------------

/// 0, 1, ..., n-1.
Tensor arange(int64_t n, DType dtype = DType::Float32);
/// start, start + step, ... below stop (numpy's arange).
Tensor arange(double start, double stop, double step = 1.0, DType dtype = DType::Float32);
/// Identity matrix (n, n).
Tensor eye(int64_t n, DType dtype = DType::Float32);
/// Tensor of `shape` whose value is the index along `dimension` (lax.iota / broadcasted_iota).
Tensor iota(const Shape& shape, int64_t dimension, DType dtype = DType::Int32);

// ---- elementwise ------------------------------------------------------------------------------

Tensor add(const Tensor& a, const Tensor& b);
Tensor subtract(const Tensor& a, const Tensor& b);
Tensor multiply(const Tensor& a, const Tensor& b);
/// True division: integer inputs give float32.
Tensor divide(const Tensor& a, const Tensor& b);
Tensor pow(const Tensor& a, const Tensor& b);
Tensor maximum(const Tensor& a, const Tensor& b);
Tensor minimum(const Tensor& a, const Tensor& b);
Tensor atan2(const Tensor& a, const Tensor& b);

Tensor negative(const Tensor& x);
Tensor exp(const Tensor& x);
Tensor log(const Tensor& x);
Tensor log1p(const Tensor& x);
Tensor expm1(const Tensor& x);
Tensor sqrt(const Tensor& x);
Tensor rsqrt(const Tensor& x);
Tensor tanh(const Tensor& x);
Tensor sigmoid(const Tensor& x);
Tensor sin(const Tensor& x);
Tensor cos(const Tensor& x);
Tensor erf(const Tensor& x);
Tensor abs(const Tensor& x);
Tensor sign(const Tensor& x);
Tensor floor(const Tensor& x);
Tensor ceil(const Tensor& x);
/// Round half to even, as numpy.
Tensor round(const Tensor& x);
Tensor square(const Tensor& x);
Tensor relu(const Tensor& x);
Tensor clip(const Tensor& x, double lo, double hi);
/// Elementwise bounds, as jnp.clip: minimum(maximum(x, lo), hi), the three broadcast together and
/// promoted to one dtype (where lo > hi the result is hi).
Tensor clip(const Tensor& x, const Tensor& lo, const Tensor& hi);

// Comparisons give Bool.
Tensor equal(const Tensor& a, const Tensor& b);
Tensor not_equal(const Tensor& a, const Tensor& b);
Tensor less(const Tensor& a, const Tensor& b);
Tensor less_equal(const Tensor& a, const Tensor& b);
Tensor greater(const Tensor& a, const Tensor& b);
Tensor greater_equal(const Tensor& a, const Tensor& b);
Tensor logical_and(const Tensor& a, const Tensor& b);
Tensor logical_or(const Tensor& a, const Tensor& b);
Tensor logical_not(const Tensor& x);
Tensor logical_xor(const Tensor& a, const Tensor& b);
/// Bitwise on integer operands (promoted as numpy); on bools the logical op.
Tensor bitwise_and(const Tensor& a, const Tensor& b);
Tensor bitwise_or(const Tensor& a, const Tensor& b);
Tensor bitwise_xor(const Tensor& a, const Tensor& b);
/// a << b and a >> b on integers (promoted as numpy); the right shift is arithmetic for signed
/// types. A count below 0 or of the width or more gives numpy's result: 0, or -1 for a negative a
/// shifted right.
Tensor left_shift(const Tensor& a, const Tensor& b);
Tensor right_shift(const Tensor& a, const Tensor& b);
/// ~x: every bit flipped for integers (-1 - x for signed, 255 - x for uint8); logical_not for bool.
Tensor bitwise_not(const Tensor& x);

/// Elementwise choice: cond ? a : b, with cond Bool; the three broadcast together.
Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b);
/// Converts to dtype (float -> int truncates toward zero; -> bool is x != 0).
Tensor cast(const Tensor& x, DType dtype);

// Operators. Scalars are weakly typed (lanes/dtype.h): `x * 2.0` keeps x's float dtype.
Tensor operator+(const Tensor& a, const Tensor& b);
Tensor operator-(const Tensor& a, const Tensor& b);
Tensor operator*(const Tensor& a, const Tensor& b);
Tensor operator/(const Tensor& a, const Tensor& b);
Tensor operator-(const Tensor& x);
Tensor operator<(const Tensor& a, const Tensor& b);
Tensor operator<=(const Tensor& a, const Tensor& b);
Tensor operator>(const Tensor& a, const Tensor& b);
Tensor operator>=(const Tensor& a, const Tensor& b);
Tensor operator==(const Tensor& a, const Tensor& b);
Tensor operator!=(const Tensor& a, const Tensor& b);

/// A 0-d tensor for a C++ scalar mixed with `like` (weak typing, lanes/dtype.h).
Tensor weak_scalar(double value, bool is_floating, const Tensor& like);

template <class S>
concept Scalar = std::is_arithmetic_v<S>;

template <Scalar S>
Tensor as_weak(S s, const Tensor& like) {
  return weak_scalar(static_cast<double>(s), std::is_floating_point_v<S>, like);
}
// clang-format off
template <Scalar S> Tensor operator+(const Tensor& a, S s) { return a + as_weak(s, a); }
template <Scalar S> Tensor operator+(S s, const Tensor& a) { return as_weak(s, a) + a; }
template <Scalar S> Tensor operator-(const Tensor& a, S s) { return a - as_weak(s, a); }
template <Scalar S> Tensor operator-(S s, const Tensor& a) { return as_weak(s, a) - a; }
template <Scalar S> Tensor operator*(const Tensor& a, S s) { return a * as_weak(s, a); }
template <Scalar S> Tensor operator*(S s, const Tensor& a) { return as_weak(s, a) * a; }
template <Scalar S> Tensor operator/(const Tensor& a, S s) { return a / as_weak(s, a); }
template <Scalar S> Tensor operator/(S s, const Tensor& a) { return as_weak(s, a) / a; }
template <Scalar S> Tensor operator<(const Tensor& a, S s) { return a < as_weak(s, a); }
template <Scalar S> Tensor operator<=(const Tensor& a, S s) { return a <= as_weak(s, a); }
template <Scalar S> Tensor operator>(const Tensor& a, S s) { return a > as_weak(s, a); }
template <Scalar S> Tensor operator>=(const Tensor& a, S s) { return a >= as_weak(s, a); }
template <Scalar S> Tensor operator==(const Tensor& a, S s) { return a == as_weak(s, a); }
template <Scalar S> Tensor operator!=(const Tensor& a, S s) { return a != as_weak(s, a); }
template <Scalar S> Tensor pow(const Tensor& a, S s) { return pow(a, as_weak(s, a)); }
template <Scalar S> Tensor maximum(const Tensor& a, S s) { return maximum(a, as_weak(s, a)); }
template <Scalar S> Tensor minimum(const Tensor& a, S s) { return minimum(a, as_weak(s, a)); }
// where with one scalar branch, weakly typed like the operators: where(c, x, 0.0) keeps x's dtype.
template <Scalar S> Tensor where(const Tensor& c, const Tensor& a, S b) { return where(c, a, as_weak(b, a)); }
template <Scalar S> Tensor where(const Tensor& c, S a, const Tensor& b) { return where(c, as_weak(a, b), b); }
// clang-format on

// ---- reductions -------------------------------------------------------------------------------

Tensor sum(const Tensor& x, const Axes& axes = {}, bool keepdims = false);
Tensor mean(const Tensor& x, const Axes& axes = {}, bool keepdims = false);
Tensor prod(const Tensor& x, const Axes& axes = {}, bool keepdims = false);
Tensor max(const Tensor& x, const Axes& axes = {}, bool keepdims = false);
Tensor min(const Tensor& x, const Axes& axes = {}, bool keepdims = false);
/// Index (Int64) of the first maximum along `axis`.
Tensor argmax(const Tensor& x, int64_t axis, bool keepdims = false);
Tensor argmin(const Tensor& x, int64_t axis, bool keepdims = false);

// ---- linear algebra ---------------------------------------------------------------------------

/// Dimension numbers of dot_general (lax.dot_general). The output is
/// (batch dims, lhs free dims, rhs free dims), each group in operand order.
struct DotDims {
  std::vector<int64_t> lhs_contracting, rhs_contracting;
  std::vector<int64_t> lhs_batch, rhs_batch;
};
Tensor dot_general(const Tensor& lhs, const Tensor& rhs, const DotDims& dims);
/// numpy matmul: 1-d operands are promoted and the added dim removed; leading (batch) dims
/// broadcast.
Tensor matmul(const Tensor& a, const Tensor& b);
/// jnp.dot: inner product for 1-d, matmul for 2-d, sum over a's last and b's second-to-last axis
/// otherwise.
Tensor dot(const Tensor& a, const Tensor& b);
/// Outer product of two 1-d tensors (flattened otherwise, as numpy).
Tensor outer(const Tensor& a, const Tensor& b);
/// Contracts the last `axes` dims of a with the first `axes` dims of b (0 = outer product).
Tensor tensordot(const Tensor& a, const Tensor& b, int64_t axes);
Tensor tensordot(const Tensor& a, const Tensor& b, const std::vector<int64_t>& a_axes,
                 const std::vector<int64_t>& b_axes);

// ---- shape ------------------------------------------------------------------------------------

/// One entry may be -1 (inferred). A view when x is contiguous.
Tensor reshape(const Tensor& x, const Shape& shape);
Tensor flatten(const Tensor& x);
/// Permutes axes; an empty perm reverses them (x.T). Always a view.
Tensor transpose(const Tensor& x, const std::vector<int64_t>& perm = {});
Tensor moveaxis(const Tensor& x, int64_t source, int64_t destination);
Tensor swapaxes(const Tensor& x, int64_t axis1, int64_t axis2);
/// Inserts a size-1 axis at `axis` (of the result; negative counts from the result's end).
Tensor expand_dims(const Tensor& x, int64_t axis);
/// Removes the given size-1 axes (all size-1 axes by default).
Tensor squeeze(const Tensor& x, const Axes& axes = {});
/// numpy broadcast_to. A view (stride 0 on broadcast axes).
Tensor broadcast_to(const Tensor& x, const Shape& shape);
/// lax.broadcast_in_dim: operand dim i becomes result dim broadcast_dimensions[i].
Tensor broadcast_in_dim(const Tensor& x, const Shape& shape,
                        const std::vector<int64_t>& broadcast_dimensions);
Tensor concatenate(const std::vector<Tensor>& xs, int64_t axis = 0);
Tensor stack(const std::vector<Tensor>& xs, int64_t axis = 0);
/// lax.slice: start/limit/strides per dim (strides default 1). A view.
Tensor slice(const Tensor& x, const Shape& start, const Shape& limit, const Shape& strides = {});
/// x[start:stop:step] along one axis, numpy bounds (negative counts from the end, clamped). A
/// negative step walks backwards as numpy's (x[n-1:-n-1:-1] reverses; a copy, not a view).
Tensor slice_axis(const Tensor& x, int64_t axis, int64_t start, int64_t stop, int64_t step = 1);
/// Pads each dim with low[i] before and high[i] after (negative values crop), filled with value.
Tensor pad(const Tensor& x, const Shape& low, const Shape& high, double value = 0.0);

// ---- indexing ---------------------------------------------------------------------------------

/// tf.gather: out = x.shape[:axis] + indices.shape[batch_dims:] + x.shape[axis+1:], where the
/// first batch_dims dims of x and indices are matched (batch_dims <= axis). Indices are integer;
/// negative indices count from the end; out-of-range indices throw lanes::Error.
Tensor gather(const Tensor& x, const Tensor& indices, int64_t axis = 0, int64_t batch_dims = 0);
/// numpy take along one axis (gather with batch_dims = 0).
Tensor take(const Tensor& x, const Tensor& indices, int64_t axis = 0);
/// The transpose of gather: adds each slice of `updates` (shaped like gather's output, or
/// broadcastable to it; cast to x's dtype) into a copy of x at the indexed positions; repeated
/// indices accumulate.
Tensor scatter_add(const Tensor& x, const Tensor& indices, const Tensor& updates, int64_t axis = 0,
                   int64_t batch_dims = 0);
/// One-hot along a new last axis: out[..., j] = (indices[...] == j).
Tensor one_hot(const Tensor& indices, int64_t depth, DType dtype = DType::Float32);

// ---- neural network ---------------------------------------------------------------------------

Tensor softmax(const Tensor& x, int64_t axis = -1);
Tensor log_softmax(const Tensor& x, int64_t axis = -1);
Tensor logsumexp(const Tensor& x, const Axes& axes = {}, bool keepdims = false);
/// sum(x * x) / 2 (tf.nn.l2_loss).
Tensor l2_loss(const Tensor& x);
/// Cross-entropy of softmax(logits) along `axis`. With integer `labels` (logits' shape without
/// `axis`) they are class indices; with float labels (logits' shape) they are probabilities.
/// Returns one loss per example (logits' shape without `axis`).
Tensor softmax_cross_entropy(const Tensor& logits, const Tensor& labels, int64_t axis = -1);

struct Conv2dOptions {
  std::vector<int64_t> stride{1, 1};
  std::vector<int64_t> padding{0, 0};  // symmetric zero padding (h, w)
  std::vector<int64_t> dilation{1, 1};
  int64_t groups = 1;
};
/// 2-d convolution (cross-correlation, as PyTorch), NCHW input (N, C, H, W) or one example
/// (C, H, W); weight (O, C / groups, kH, kW). Returns (N, O, H', W') or (O, H', W').
Tensor conv2d(const Tensor& x, const Tensor& weight, const Conv2dOptions& options = {});

struct ConvTranspose2dOptions {
  std::vector<int64_t> stride{1, 1};
  std::vector<int64_t> padding{0, 0};         // removed from each side of the full output (h, w)
  std::vector<int64_t> output_padding{0, 0};  // added at the bottom / right; < stride or dilation
  std::vector<int64_t> dilation{1, 1};
  int64_t groups = 1;
};
/// 2-d transposed convolution, as PyTorch's conv_transpose2d: the gradient of conv2d with respect
/// to its input. Input (N, C_in, H, W) or one example (C_in, H, W); weight
/// (C_in, C_out / groups, kH, kW). Returns (N, C_out, H', W') or (C_out, H', W') with
/// H' = (H - 1) stride - 2 padding + dilation (kH - 1) + output_padding + 1.
Tensor conv_transpose2d(const Tensor& x, const Tensor& weight,
                        const ConvTranspose2dOptions& options = {});

}  // namespace lanes
