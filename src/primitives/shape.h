// Shape primitives that only re-describe memory: reshape, transpose, broadcast_in_dim, slice.
// Their eval returns views (no copy) except reshape of non-contiguous data, which copies first.
#pragma once

#include "lanes/primitive.h"

namespace lanes::prim {

/// Reshape to a fully specified shape (the op resolves -1) with the same number of elements.
class Reshape : public Primitive {
 public:
  explicit Reshape(Shape shape) : shape_(std::move(shape)) {}
  std::string name() const override { return "reshape"; }
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
  const Shape& shape() const { return shape_; }

 private:
  Shape shape_;
};

/// Output dim i is input dim perm[i].
class Transpose : public Primitive {
 public:
  explicit Transpose(std::vector<int64_t> perm) : perm_(std::move(perm)) {}
  std::string name() const override { return "transpose"; }
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
  const std::vector<int64_t>& perm() const { return perm_; }

 private:
  std::vector<int64_t> perm_;
};

/// lax.broadcast_in_dim: input dim i maps to output dim dims[i] (strictly increasing), whose
/// size equals the input's or the input's is 1. A view with stride 0 on broadcast dims.
class BroadcastInDim : public Primitive {
 public:
  BroadcastInDim(Shape shape, std::vector<int64_t> dims)
      : shape_(std::move(shape)), dims_(std::move(dims)) {}
  std::string name() const override { return "broadcast_in_dim"; }
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
  const Shape& shape() const { return shape_; }
  const std::vector<int64_t>& dims() const { return dims_; }

 private:
  Shape shape_;
  std::vector<int64_t> dims_;
};

/// lax.slice: elements start[i], start[i] + strides[i], ... below limit[i] in each dim.
class Slice : public Primitive {
 public:
  Slice(Shape start, Shape limit, Shape strides)
      : start_(std::move(start)), limit_(std::move(limit)), strides_(std::move(strides)) {}
  std::string name() const override { return "slice"; }
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
  const Shape& start() const { return start_; }
  const Shape& limit() const { return limit_; }
  const Shape& strides() const { return strides_; }

 private:
  Shape start_, limit_, strides_;
};

}  // namespace lanes::prim
