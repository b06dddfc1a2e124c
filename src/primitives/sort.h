// Sorting primitive: stable argsort along the last axis. Sorted values, sort, argsort and top_k
// are composed from it and gather (src/ops/sort.cpp), so their derivatives are gather's: the
// cotangent of a sorted value goes back to where that value came from.
#pragma once

#include "lanes/primitive.h"

namespace lanes::prim {

/// Input x (rank >= 1): the Int64 indices that sort each row of x's last axis, ascending or
/// descending, ties in index order, NaN last (kernels/sort.h).
class Argsort : public Primitive {
 public:
  explicit Argsort(bool descending) : descending_(descending) {}
  std::string name() const override { return "argsort"; }
  std::string params() const override;
  std::vector<TensorType> infer(const std::vector<TensorType>& in) const override;
  std::vector<Tensor> eval(const std::vector<Tensor>& in) const override;
  std::vector<Batched> batch(const std::vector<Batched>& in, int64_t size) const override;
  std::vector<Tensor> jvp(const std::vector<Tensor>& primals, const std::vector<Tensor>& tangents,
                          const std::vector<Tensor>& outputs) const override;
  std::vector<Tensor> vjp(const std::vector<Tensor>& primals, const std::vector<Tensor>& cts,
                          const std::vector<Tensor>& outputs) const override;
  bool descending() const { return descending_; }

 private:
  bool descending_;
};

}  // namespace lanes::prim
