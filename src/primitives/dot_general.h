// dot_general (lax.dot_general): the one contraction primitive. matmul, dot, outer and tensordot
// are composed from it in src/ops/linalg.cpp.
#pragma once

#include "kernels/matmul.h"
#include "lanes/ops.h"
#include "lanes/primitive.h"

namespace lanes::prim {

/// Contracts lhs_contracting[i] with rhs_contracting[i] and pairs lhs_batch[i] with rhs_batch[i].
/// The output is (batch dims, lhs free dims, rhs free dims), each group in operand order. Dims
/// are non-negative (the op normalises them); the operands have the same dtype (the op
/// promotes).
class DotGeneral : public Primitive {
 public:
  /// `finite`: operands a compiled graph knows to be finite (constants it checked once; the
  /// kernel then skips their scan). A hint for the kernel, never a change of the product.
  explicit DotGeneral(DotDims dims, kernels::FiniteOperands finite = {})
      : dims_(std::move(dims)), finite_(finite) {}
  std::string name() const override { return "dot_general"; }
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
                          const std::vector<Tensor>& outputs) const override {
    return vjp_wanted(primals, cts, outputs, std::vector<bool>(primals.size(), true));
  }
  std::vector<Tensor> vjp_wanted(const std::vector<Tensor>& primals, const std::vector<Tensor>& cts,
                                 const std::vector<Tensor>& outputs,
                                 const std::vector<bool>& wanted) const override;

  const DotDims& dims() const { return dims_; }
  const std::vector<int64_t>& lhs_contracting() const { return dims_.lhs_contracting; }
  const std::vector<int64_t>& rhs_contracting() const { return dims_.rhs_contracting; }
  const std::vector<int64_t>& lhs_batch() const { return dims_.lhs_batch; }
  const std::vector<int64_t>& rhs_batch() const { return dims_.rhs_batch; }
  kernels::FiniteOperands known_finite() const { return finite_; }

 private:
  DotDims dims_;
  kernels::FiniteOperands finite_;
};

}  // namespace lanes::prim
