// Cumulative primitives. cumsum is linear, so its rules are themselves cumsums: the jvp scans the
// tangent the same way, the vjp scans the cotangent the other way. cummax / cummin are a gather at
// the index of the running extreme (ArgCum, integer-valued, so it needs no derivative), which
// gives them gather's rules. cumprod and logcumsumexp are composed (src/ops/cumulative.cpp).
#pragma once

#include "lanes/primitive.h"

namespace lanes::prim {

/// Input x (rank >= 1, not bool): running sums along `axis`, from the far end when `reverse`.
class CumSum : public Primitive {
 public:
  CumSum(int64_t axis, bool reverse) : axis_(axis), reverse_(reverse) {}
  std::string name() const override { return "cumsum"; }
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
  int64_t axis() const { return axis_; }
  bool reverse() const { return reverse_; }

 private:
  int64_t axis_;
  bool reverse_;
};

/// Input x (rank >= 1): Int64 indices of the running maximum (`min`: minimum) along the last axis
/// (kernels::arg_cum_last).
class ArgCum : public Primitive {
 public:
  ArgCum(bool min, bool reverse) : min_(min), reverse_(reverse) {}
  std::string name() const override { return min_ ? "argcummin" : "argcummax"; }
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
  bool min() const { return min_; }
  bool reverse() const { return reverse_; }

 private:
  bool min_, reverse_;
};

}  // namespace lanes::prim
