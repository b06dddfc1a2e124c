// conv: 2-d convolution (lax.conv_general_dilated restricted to NCHW / OIHW, symmetric zero
// padding, no input dilation). The op conv2d (src/ops/conv.cpp) also takes one example
// (C, H, W) and promotes the operands.
#pragma once

#include "kernels/conv.h"
#include "lanes/primitive.h"

namespace lanes::prim {

/// Inputs x (N, C, H, W) and weight (O, C / groups, kH, kW), one float dtype. Output
/// (N, O, H', W') with H' = (H + 2 padding - dilation (kH - 1) - 1) / stride + 1.
class Conv : public Primitive {
 public:
  explicit Conv(kernels::ConvParams params) : p_(params) {}
  std::string name() const override { return "conv"; }
  std::string params() const override;
  std::vector<TensorType> infer(const std::vector<TensorType>& in) const override;
  std::vector<Tensor> eval(const std::vector<Tensor>& in) const override;
  std::vector<Batched> batch(const std::vector<Batched>& in, int64_t size) const override;
  std::vector<Tensor> jvp(const std::vector<Tensor>& primals, const std::vector<Tensor>& tangents,
                          const std::vector<Tensor>& outputs) const override;
  std::vector<Tensor> vjp(const std::vector<Tensor>& primals, const std::vector<Tensor>& cts,
                          const std::vector<Tensor>& outputs) const override;

  const kernels::ConvParams& conv_params() const { return p_; }
  const std::array<int64_t, 2>& stride() const { return p_.stride; }
  const std::array<int64_t, 2>& padding() const { return p_.padding; }
  const std::array<int64_t, 2>& dilation() const { return p_.dilation; }
  int64_t groups() const { return p_.groups; }

 private:
  kernels::ConvParams p_;
};

}  // namespace lanes::prim
