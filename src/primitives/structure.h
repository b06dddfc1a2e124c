// Structural primitives that build new data: concatenate, pad, iota (lax.concatenate, lax.pad
// without interior padding, lax.iota / broadcasted_iota).
#pragma once

#include "lanes/primitive.h"

namespace lanes::prim {

/// Joins its operands along `axis`. Any number (>= 1) of operands of one rank and dtype, equal
/// shapes except along `axis` (the op promotes dtypes first).
class Concatenate : public Primitive {
 public:
  explicit Concatenate(int64_t axis) : axis_(axis) {}
  std::string name() const override { return "concatenate"; }
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

 private:
  int64_t axis_;
};

/// low[d] copies of `value` before and high[d] after each dim d; negative amounts crop.
class Pad : public Primitive {
 public:
  Pad(Shape low, Shape high, double value)
      : low_(std::move(low)), high_(std::move(high)), value_(value) {}
  std::string name() const override { return "pad"; }
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
  const Shape& low() const { return low_; }
  const Shape& high() const { return high_; }
  double value() const { return value_; }

 private:
  Shape low_, high_;
  double value_;
};

/// No inputs: a tensor of `shape` whose value is the index along `dimension`, in `dtype`.
class Iota : public Primitive {
 public:
  Iota(Shape shape, int64_t dimension, DType dtype)
      : shape_(std::move(shape)), dimension_(dimension), dtype_(dtype) {}
  std::string name() const override { return "iota"; }
  std::string params() const override;
  std::vector<TensorType> infer(const std::vector<TensorType>& in) const override;
  std::vector<Tensor> eval(const std::vector<Tensor>& in) const override;
  const Shape& shape() const { return shape_; }
  int64_t dimension() const { return dimension_; }
  DType dtype() const { return dtype_; }

 private:
  Shape shape_;
  int64_t dimension_;
  DType dtype_;
};

}  // namespace lanes::prim
