// Indexing primitives: gather and its transpose scatter_add, along one axis with leading batch
// dims matched between x and the indices (tf.gather's axis / batch_dims).
//
// With b = batch_dims and a = axis (b <= a): x is (batch..., pre..., n, inner...) where batch
// is x.shape[:b] and n is x.shape[a]; the indices are (batch..., idx...) with integer dtype;
// gather's output and scatter_add's updates are (batch..., pre..., idx..., inner...).
// Index values are checked at evaluation (they are data): out-of-range throws lanes::Error
// before anything is written; negative ones count from the end.
#pragma once

#include "kernels/indexing.h"
#include "lanes/primitive.h"

namespace lanes::prim {

/// Inputs (x, indices): out[b, p, j, :] = x[b, p, indices[b, j], :].
class Gather : public Primitive {
 public:
  Gather(int64_t axis, int64_t batch_dims) : axis_(axis), batch_dims_(batch_dims) {}
  std::string name() const override { return "gather"; }
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
  int64_t axis() const { return axis_; }
  int64_t batch_dims() const { return batch_dims_; }

  /// Gather's output shape for x and indices of these shapes (validated; `op` names errors).
  static Shape output_shape(const Shape& x, const Shape& indices, int64_t axis, int64_t batch_dims,
                            const char* op);

 private:
  int64_t axis_, batch_dims_;
};

/// Inputs (x, indices, updates), updates of x's dtype shaped like gather's output: a copy of x
/// with each updates slab added at its index; repeated indices accumulate (bool: logical or).
class ScatterAdd : public Primitive {
 public:
  ScatterAdd(int64_t axis, int64_t batch_dims) : axis_(axis), batch_dims_(batch_dims) {}
  std::string name() const override { return "scatter_add"; }
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
  int64_t axis() const { return axis_; }
  int64_t batch_dims() const { return batch_dims_; }

 private:
  int64_t axis_, batch_dims_;
};

/// scatter_add's other modes (kernels::ScatterKind Set, Multiply, Min, Max; Add is ScatterAdd):
/// inputs (x, indices, updates) as ScatterAdd's; updates land in index order, so with repeated
/// indices Set keeps the last and the others combine all of them with x's element.
class Scatter : public Primitive {
 public:
  using Kind = kernels::ScatterKind;
  Scatter(Kind kind, int64_t axis, int64_t batch_dims)
      : kind_(kind), axis_(axis), batch_dims_(batch_dims) {}
  std::string name() const override;
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
  int64_t batch_dims() const { return batch_dims_; }

 private:
  Kind kind_;
  int64_t axis_, batch_dims_;
};

}  // namespace lanes::prim
