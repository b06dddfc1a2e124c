// Cumulative primitive: cumsum along one axis. The other scans (cumprod, cummax, cummin,
// logcumsumexp) are composed from slices and elementwise ops (src/ops/cumulative.cpp); cumsum has
// a primitive because it is the common one and is linear, so its rules are themselves cumsums: the
// jvp scans the tangent the same way, the vjp scans the cotangent the other way.
#pragma once

#include "lanes/primitive.h"

namespace lanes::prim {

/// Input x (rank >= 1, not bool): running sums along `axis`, from the far end when `reverse`.
class CumSum : public Primitive {
 public:
  CumSum(int64_t axis, bool reverse) : axis_(axis), reverse_(reverse) {}
  std::string name() const override { return "cumsum"; }
  std::string params() const override;
  std::vector<TensorType> infer(const std::vector<TensorType>& in) const override;
  std::vector<Tensor> eval(const std::vector<Tensor>& in) const override;
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

}  // namespace lanes::prim
