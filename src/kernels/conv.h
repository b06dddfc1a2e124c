// 2-d convolution (cross-correlation, as PyTorch / lax.conv_general_dilated in NCHW / OIHW) and
// its two transposes on concrete float tensors, all as im2col + GEMM through BLAS:
//
//   conv2d            out (N, O, H', W')      = W (O x K) @ col(x)            per (example, group)
//   conv_transpose2d  x-shaped (N, C, H, W)   = col2im(W^T (K x O) @ ct)     (the input gradient)
//   conv_weight_grad  w-shaped (O, C/g, kH, kW) = sum_n ct_n (O x P) @ col(x_n)^T
//
// with K = C / groups * kH * kW and P = H' * W'. The im2col matrix holds, per kernel tap, the
// input under that tap for every output position. It is copied from a staged copy of one
// (example, group): zero-padded and split into stride phases, so that every tap reads runs of W'
// contiguous elements whatever the stride and dilation (no bounds checks or gathers in the inner
// loop). Small images go side by side: the columns of several examples form one wider matrix and
// one GEMM, since BLAS is slow on GEMMs a few dozen columns wide. A large image is built in tiles
// of output rows so the matrix's memory stays bounded.
//
// Threads: work is spread by (examples, group) items with single-threaded GEMMs (a GEMM inside a
// parallel_for runs on its thread, gemm.h) when there are enough items or they are
// small; otherwise items run one by one, each GEMM split over the pool (gemm.h) and each im2col
// threaded.
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

/// The transpose of conv2d in its input: ct (N, O, H', W') and w (O, C / groups, kH, kW) ->
/// (N, C, H, W); (H', W') is at most conv2d's output size for an (H, W) input (positions past
/// H', W' count as zero cotangents).
Tensor conv_transpose2d(const Tensor& ct, const Tensor& w, const ConvParams& p,
                        std::array<int64_t, 2> input_size);

/// The transpose of conv2d in its weight: x (N, C, H, W) and ct (N, O, H', W') ->
/// (O, C / groups, kH, kW), summed over the examples; (H', W') is at most conv2d's output size.
Tensor conv_weight_grad(const Tensor& x, const Tensor& ct, const ConvParams& p,
                        std::array<int64_t, 2> kernel_size);

}  // namespace lanes::kernels
