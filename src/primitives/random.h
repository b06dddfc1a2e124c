// Random primitives (src/kernels/random.h has the bit layout): the key is an Int64 tensor
// INPUT, never an attribute, so a graph is a pure function of its keys and vmap can map over
// them. Each primitive takes keys of any shape K and puts what it draws after K: a batch of keys
// is just leading key dims, which is the whole batching rule. The ops (src/ops/random.cpp)
// require a 0-d key and compose uniform(lo, hi), normal and bernoulli from these.
#pragma once

#include "lanes/primitive.h"

namespace lanes::prim {

/// keys (K) Int64 -> (K..., num) Int64: `num` new keys from each key.
class RandomSplit : public Primitive {
 public:
  explicit RandomSplit(int64_t num) : num_(num) {}
  std::string name() const override { return "random_split"; }
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
  int64_t num() const { return num_; }

 private:
  int64_t num_;
};

/// (keys, data), both Int64 of one shape -> keys of that shape, each folded with its data.
class RandomFoldIn : public Primitive {
 public:
  std::string name() const override { return "random_fold_in"; }
  std::vector<Tensor> mask(const std::vector<Tensor>& in,
                           const detail::MaskContext& ctx) const override;
  std::vector<TensorType> infer(const std::vector<TensorType>& in) const override;
  std::vector<Tensor> eval(const std::vector<Tensor>& in) const override;
  std::vector<Batched> batch(const std::vector<Batched>& in, int64_t size) const override;
  std::vector<Tensor> jvp(const std::vector<Tensor>& primals, const std::vector<Tensor>& tangents,
                          const std::vector<Tensor>& outputs) const override;
  std::vector<Tensor> vjp(const std::vector<Tensor>& primals, const std::vector<Tensor>& cts,
                          const std::vector<Tensor>& outputs) const override;
};

/// keys (K) Int64 -> (K..., shape) of a float dtype, uniform in [0, 1).
class RandomUniform : public Primitive {
 public:
  RandomUniform(Shape shape, DType dtype) : shape_(std::move(shape)), dtype_(dtype) {}
  std::string name() const override { return "random_uniform"; }
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
  DType dtype() const { return dtype_; }

 private:
  Shape shape_;
  DType dtype_;
};

/// The draws below share everything but the kernel: keys (K) Int64 in, (K..., shape) of one dtype
/// out; batched by the keys' leading dims; no derivative (the keys are integers and the
/// distribution's parameters are attributes).
class RandomDraw : public Primitive {
 public:
  RandomDraw(Shape shape, DType dtype) : shape_(std::move(shape)), dtype_(dtype) {}
  std::vector<Tensor> mask(const std::vector<Tensor>& in,
                           const detail::MaskContext& ctx) const override;
  std::vector<TensorType> infer(const std::vector<TensorType>& in) const override;
  std::vector<Batched> batch(const std::vector<Batched>& in, int64_t size) const override;
  std::vector<Tensor> jvp(const std::vector<Tensor>& primals, const std::vector<Tensor>& tangents,
                          const std::vector<Tensor>& outputs) const override;
  std::vector<Tensor> vjp(const std::vector<Tensor>& primals, const std::vector<Tensor>& cts,
                          const std::vector<Tensor>& outputs) const override;
  const Shape& shape() const { return shape_; }
  DType dtype() const { return dtype_; }

 protected:
  /// Whether the kernel draws `dtype` (checked by infer).
  virtual bool supports(DType dtype) const = 0;
  Shape shape_;
  DType dtype_;
};

/// keys (K) -> (K..., shape) Int64: 64 random bits per position (permutation's sort keys).
class RandomBits : public RandomDraw {
 public:
  explicit RandomBits(Shape shape) : RandomDraw(std::move(shape), DType::Int64) {}
  std::string name() const override { return "random_bits"; }
  std::string params() const override;
  std::vector<Tensor> eval(const std::vector<Tensor>& in) const override;

 protected:
  bool supports(DType dtype) const override { return dtype == DType::Int64; }
};

/// keys (K) -> (K..., shape) Int32 / Int64 uniform in [lo, hi).
class RandomInt : public RandomDraw {
 public:
  RandomInt(Shape shape, int64_t lo, int64_t hi, DType dtype)
      : RandomDraw(std::move(shape), dtype), lo_(lo), hi_(hi) {}
  std::string name() const override { return "random_int"; }
  std::vector<Tensor> mask(const std::vector<Tensor>& in,
                           const detail::MaskContext& ctx) const override;
  int64_t lo() const { return lo_; }
  int64_t hi() const { return hi_; }
  std::string params() const override;
  std::vector<Tensor> eval(const std::vector<Tensor>& in) const override;

 protected:
  bool supports(DType dtype) const override {
    return dtype == DType::Int32 || dtype == DType::Int64;
  }

 private:
  int64_t lo_, hi_;
};

/// keys (K) -> (K..., shape) floats: standard normals conditioned on [lo, hi].
class RandomTruncatedNormal : public RandomDraw {
 public:
  RandomTruncatedNormal(Shape shape, double lo, double hi, DType dtype)
      : RandomDraw(std::move(shape), dtype), lo_(lo), hi_(hi) {}
  std::string name() const override { return "random_truncated_normal"; }
  std::string params() const override;
  std::vector<Tensor> eval(const std::vector<Tensor>& in) const override;

 protected:
  bool supports(DType dtype) const override { return is_floating(dtype); }

 private:
  double lo_, hi_;
};

}  // namespace lanes::prim
