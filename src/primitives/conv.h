// conv family: 2-d convolution (lax.conv_general_dilated restricted to NCHW / OIHW, symmetric
// zero padding, no input dilation) and its two transposes. The op conv2d (src/ops/conv.cpp) also
// takes one example (C, H, W) and promotes the operands; conv_transpose2d is the op of
// ConvTranspose.
//
// Why three primitives and not one: the derivatives of a convolution are convolutions again
// (jax expresses them with lhs/rhs dilation, which lanes' Conv does not have), but as
// convolutions they waste most of their work: the input gradient of a strided conv convolves a
// cotangent that is mostly inserted zeros, and the weight gradient becomes a conv whose
// "examples" are channels, many tiny GEMMs, and after vmap one group per example. ConvTranspose
// (GEMM, then col2im) and ConvWeightGrad (im2col, then one GEMM contracting over output
// positions) do exactly the needed flops. All three are bilinear and their derivatives are the
// other two, so the family is closed under jvp, vjp and batching.
//
// For all three, with B(x, w, ct) = <ct, conv(x, w)>: Conv = d/dct B, ConvTranspose = d/dx B,
// ConvWeightGrad = d/dw B. Spatial sizes: x (H, W), w (kH, kW), ct (H', W') with H' at most
// conv2d's output size for x (equal for Conv's output; smaller is allowed for the transposes so
// that conv_transpose2d's output_padding may exceed the stride when the dilation allows).
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
  double flops(const std::vector<TensorType>& in,
               const std::vector<TensorType>& out) const override;
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

/// The transpose of Conv in x (PyTorch's conv_transpose2d): inputs ct (N, O, H', W') and weight
/// (O, C / groups, kH, kW) -> (N, C, H, W), with (H, W) = `size` and the Conv params of the
/// convolution it transposes.
class ConvTranspose : public Primitive {
 public:
  ConvTranspose(kernels::ConvParams params, std::array<int64_t, 2> size)
      : p_(params), size_(size) {}
  std::string name() const override { return "conv_transpose"; }
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

 private:
  kernels::ConvParams p_;
  std::array<int64_t, 2> size_;  // (H, W) of the output
};

/// The transpose of Conv in its weight, summed over the examples: inputs x (N, C, H, W) and ct
/// (N, O, H', W') -> (O, C / groups, kH, kW) with (kH, kW) = `kernel`. Internal: only the
/// derivative rules bind it.
class ConvWeightGrad : public Primitive {
 public:
  ConvWeightGrad(kernels::ConvParams params, std::array<int64_t, 2> kernel)
      : p_(params), kernel_(kernel) {}
  std::string name() const override { return "conv_weight_grad"; }
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

 private:
  kernels::ConvParams p_;
  std::array<int64_t, 2> kernel_;  // (kH, kW) of the result
};

}  // namespace lanes::prim
