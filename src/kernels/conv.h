// 2-d convolution (cross-correlation, as PyTorch / lax.conv_general_dilated in NCHW / OIHW) on
// concrete float tensors: im2col + GEMM through BLAS, one GEMM per (example, group).
//
// The im2col matrix of one (example, group) is (C/groups * kH * kW) x (H' * W'); it is built in
// tiles of output rows so its memory stays bounded for large images. A 1x1, stride-1, unpadded
// convolution is a GEMM on the input as it is (no im2col). Work is spread over threads by
// (example, group) items with single-threaded GEMMs (inside an OpenMP region OpenBLAS's OpenMP
// build runs single-threaded) when there are enough items or they are small; otherwise items
// run one by one, each GEMM threaded by BLAS and each im2col by lanes.
#pragma once

#include <array>
#include <cstdint>

#include "lanes/tensor.h"

namespace lanes::kernels {

struct ConvParams {
  std::array<int64_t, 2> stride{1, 1};
  std::array<int64_t, 2> padding{0, 0};  // symmetric zero padding
  std::array<int64_t, 2> dilation{1, 1};
  int64_t groups = 1;
};

/// Output size of one spatial dim (assumes the kernel fits the padded input).
inline int64_t conv_out_size(int64_t in, int64_t kernel, int64_t stride, int64_t padding,
                             int64_t dilation) {
  return (in + 2 * padding - dilation * (kernel - 1) - 1) / stride + 1;
}

/// x (N, C, H, W), w (O, C / groups, kH, kW), both float32 or both float64, valid for `p` (the
/// primitive checked) -> (N, O, H', W').
Tensor conv2d(const Tensor& x, const Tensor& w, const ConvParams& p);

}  // namespace lanes::kernels
