// Elementwise primitives (lax): unary math, binary arithmetic/comparison, select, convert.
// Like lax, they take operands already broadcast to one shape and promoted to one dtype; the
// ops in src/ops/elementwise.cpp do numpy broadcasting and jax type promotion. Derivative rules
// follow jax: none for comparisons, logical ops, sign and rounding; maximum/minimum split ties
// evenly; pow's exponent derivative uses log(x) with x == 0 replaced by 1.
#pragma once

#include "kernels/elementwise.h"
#include "lanes/primitive.h"

namespace lanes::prim {

/// y = kind(x), same shape and dtype. Math kinds take floats, neg/abs/sign numbers, not bool.
class Unary : public Primitive {
 public:
  using Kind = kernels::UnaryOp;
  explicit Unary(Kind kind) : kind_(kind) {}
  std::string name() const override { return kernels::unary_name(kind_); }
  std::vector<Tensor> mask(const std::vector<Tensor>& in,
                           const detail::MaskContext& ctx) const override;
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

 private:
  Kind kind_;
};

/// z = kind(x, y) for x, y of equal shape and dtype; comparisons give Bool.
class Binary : public Primitive {
 public:
  using Kind = kernels::BinaryOp;
  explicit Binary(Kind kind) : kind_(kind) {}
  std::string name() const override { return kernels::binary_name(kind_); }
  std::vector<Tensor> mask(const std::vector<Tensor>& in,
                           const detail::MaskContext& ctx) const override;
  std::vector<TensorType> infer(const std::vector<TensorType>& in) const override;
  std::vector<Tensor> eval(const std::vector<Tensor>& in) const override;
  double flops(const std::vector<TensorType>& in,
               const std::vector<TensorType>& out) const override;
  std::vector<Batched> batch(const std::vector<Batched>& in, int64_t size) const override;
  std::vector<Tensor> jvp(const std::vector<Tensor>& primals, const std::vector<Tensor>& tangents,
                          const std::vector<Tensor>& outputs) const override;
  std::vector<Tensor> vjp(const std::vector<Tensor>& primals, const std::vector<Tensor>& cts,
                          const std::vector<Tensor>& outputs) const override {
    return vjp_wanted(primals, cts, outputs, std::vector<bool>(primals.size(), true));
  }
  std::vector<Tensor> vjp_wanted(const std::vector<Tensor>& primals, const std::vector<Tensor>& cts,
                                 const std::vector<Tensor>& outputs,
                                 const std::vector<bool>& wanted) const override;
  Kind kind() const { return kind_; }
  bool is_comparison() const { return kernels::is_comparison(kind_); }

 private:
  Kind kind_;
};

/// Inputs (cond, on_true, on_false): cond Bool, all one shape, on_true/on_false one dtype.
class Select : public Primitive {
 public:
  std::string name() const override { return "select"; }
  std::vector<Tensor> mask(const std::vector<Tensor>& in,
                           const detail::MaskContext& ctx) const override;
  std::vector<TensorType> infer(const std::vector<TensorType>& in) const override;
  std::vector<Tensor> eval(const std::vector<Tensor>& in) const override;
  std::vector<Batched> batch(const std::vector<Batched>& in, int64_t size) const override;
  std::vector<Tensor> jvp(const std::vector<Tensor>& primals, const std::vector<Tensor>& tangents,
                          const std::vector<Tensor>& outputs) const override;
  std::vector<Tensor> vjp(const std::vector<Tensor>& primals, const std::vector<Tensor>& cts,
                          const std::vector<Tensor>& outputs) const override {
    return vjp_wanted(primals, cts, outputs, std::vector<bool>(primals.size(), true));
  }
  std::vector<Tensor> vjp_wanted(const std::vector<Tensor>& primals, const std::vector<Tensor>& cts,
                                 const std::vector<Tensor>& outputs,
                                 const std::vector<bool>& wanted) const override;
};

/// lax.convert_element_type: float -> int truncates toward zero (saturating, NaN -> 0),
/// int -> narrower int wraps, -> bool is x != 0.
class Cast : public Primitive {
 public:
  explicit Cast(DType dtype) : dtype_(dtype) {}
  std::string name() const override { return "convert_element_type"; }
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
  DType dtype() const { return dtype_; }

 private:
  DType dtype_;
};

}  // namespace lanes::prim
