// Reduction primitives (lax.reduce_sum/prod/max/min, lax.argmax/argmin). Like lax they keep
// the operand's dtype (the ops in src/ops/reduce.cpp choose it: bool sums become int32, means
// float32) and drop the reduced axes (keepdims is a reshape in the op).
#pragma once

#include "kernels/reduce.h"
#include "lanes/primitive.h"

namespace lanes::prim {

/// Validated axes for reducing a tensor of `shape`: negative axes counted from the end, sorted;
/// every axis when `all`. Throws lanes::Error naming `op`, the axis and the shape when an axis is
/// out of range or repeated. Shared by the reduction and nn ops.
std::vector<int64_t> reduction_axes(const std::vector<int64_t>& axes, bool all, const Shape& shape,
                                    const char* op);

/// Reduces over `axes` (sorted, unique); the output drops them and keeps the dtype. sum/prod
/// take numbers; max/min also bool and need a non-empty reduction (they have no identity).
class Reduce : public Primitive {
 public:
  using Kind = kernels::ReduceOp;
  Reduce(Kind kind, std::vector<int64_t> axes) : kind_(kind), axes_(std::move(axes)) {}
  std::string name() const override { return kernels::reduce_name(kind_); }
  std::vector<Tensor> mask(const std::vector<Tensor>& in,
                           const detail::MaskContext& ctx) const override;
  std::string params() const override;
  std::vector<TensorType> infer(const std::vector<TensorType>& in) const override;
  std::vector<Tensor> eval(const std::vector<Tensor>& in) const override;
  double flops(const std::vector<TensorType>& in,
               const std::vector<TensorType>& out) const override;
  std::vector<Batched> batch(const std::vector<Batched>& in, int64_t size) const override;
  std::vector<Tensor> jvp(const std::vector<Tensor>& primals, const std::vector<Tensor>& tangents,
                          const std::vector<Tensor>& outputs) const override;
  std::vector<Tensor> vjp(const std::vector<Tensor>& primals, const std::vector<Tensor>& cts,
                          const std::vector<Tensor>& outputs) const override;
  Kind kind() const { return kind_; }
  const std::vector<int64_t>& axes() const { return axes_; }

 private:
  Kind kind_;
  std::vector<int64_t> axes_;
};

/// Int64 index of the first maximum (minimum) along `axis` (non-empty); NaN counts as the
/// extreme, as in numpy. The output drops the axis.
class ArgReduce : public Primitive {
 public:
  using Kind = kernels::ArgReduceOp;
  ArgReduce(Kind kind, int64_t axis) : kind_(kind), axis_(axis) {}
  std::string name() const override { return kernels::arg_reduce_name(kind_); }
  std::vector<Tensor> mask(const std::vector<Tensor>& in,
                           const detail::MaskContext& ctx) const override;
  std::string params() const override;
  std::vector<TensorType> infer(const std::vector<TensorType>& in) const override;
  std::vector<Tensor> eval(const std::vector<Tensor>& in) const override;
  std::vector<Batched> batch(const std::vector<Batched>& in, int64_t size) const override;
  std::vector<Tensor> jvp(const std::vector<Tensor>& primals, const std::vector<Tensor>& tangents,
                          const std::vector<Tensor>& outputs) const override;
  std::vector<Tensor> vjp(const std::vector<Tensor>& primals, const std::vector<Tensor>& cts,
                          const std::vector<Tensor>& outputs) const override;
  Kind kind() const { return kind_; }
  int64_t axis() const { return axis_; }

 private:
  Kind kind_;
  int64_t axis_;
};

}  // namespace lanes::prim
