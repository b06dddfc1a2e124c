// perex_cnn: per-example gradients of the cross-entropy of a small CNN on (1, 28, 28) images:
// conv 1->16 k5 s2 p2, relu, conv 16->32 k5 s2 p2, relu, flatten, linear -> 10.
#pragma once

#include "per_example.h"

namespace workloads {

struct Cnn {
  Tensor w1, b1, w2, b2, w3, b3;  // conv (16, 1, 5, 5), conv (32, 16, 5, 5), linear (1568, 10)
};

}  // namespace workloads

LANES_TREE(workloads::Cnn, w1, b1, w2, b2, w3, b3)

namespace workloads {

inline constexpr int64_t kKernel = 5, kStride = 2, kPad = 2;

inline lanes::Conv2dOptions cnn_conv() { return {{kStride, kStride}, {kPad, kPad}}; }

/// Per-example weight gradient of the stride-2 convolution: dW[b, o, c, kh, kw] =
/// sum_{i, j} delta[b, o, i, j] xpad[b, c, 2i + kh, 2j + kw]. The 25 strided slices of the padded
/// input are the patches (im2col); one batched GEMM contracts them with the deltas.
inline Tensor conv_weight_grad(const Tensor& x, const Tensor& delta) {
  const int64_t batch = x.shape(0), c = x.shape(1), o = delta.shape(1);
  const int64_t oh = delta.shape(2), ow = delta.shape(3);
  const Tensor xpad = lanes::pad(x, {0, 0, kPad, kPad}, {0, 0, kPad, kPad});
  std::vector<Tensor> taps;
  for (int64_t kh = 0; kh < kKernel; ++kh)
    for (int64_t kw = 0; kw < kKernel; ++kw)
      taps.push_back(
          lanes::slice(xpad, {0, 0, kh, kw},
                       {batch, c, kh + kStride * (oh - 1) + 1, kw + kStride * (ow - 1) + 1},
                       {1, 1, kStride, kStride}));
  // (B, C, 25, OH, OW) -> (B, C * 25, OH * OW): row c * 25 + kh * 5 + kw, the weight's layout.
  const Tensor patches = lanes::reshape(lanes::stack(taps, 2), {batch, c * kKernel * kKernel, -1});
  const Tensor d = lanes::reshape(delta, {batch, o, oh * ow});
  const Tensor dw = lanes::dot_general(d, patches, {{2}, {2}, {0}, {0}});  // (B, O, C * 25)
  return lanes::reshape(dw, {batch, o, c, kKernel, kKernel});
}

/// Gradient of the stride-2 convolution with respect to its input: the transposed convolution
/// with the same params, output_padding 1 restoring the even input size (2 OH, 2 OW).
inline Tensor conv_input_grad(const Tensor& delta, const Tensor& w) {
  lanes::ConvTranspose2dOptions t;
  t.stride = {kStride, kStride};
  t.padding = {kPad, kPad};
  t.output_padding = {1, 1};
  return lanes::conv_transpose2d(delta, w, t);
}

/// perex_cnn by hand: batched forward with conv2d on (B, 1, 28, 28), deltas by the chain rule,
/// per-example weight gradients from patches (conv) and outer products (linear).
inline Outputs cnn_manual(const Cnn& p, const Tensor& x, const Tensor& y) {
  const int64_t batch = x.shape(0);
  auto bias = [](const Tensor& b) { return lanes::reshape(b, {1, -1, 1, 1}); };
  const Tensor z1 = lanes::conv2d(x, p.w1, cnn_conv()) + bias(p.b1);
  const Tensor h1 = lanes::relu(z1);
  const Tensor z2 = lanes::conv2d(h1, p.w2, cnn_conv()) + bias(p.b2);
  const Tensor flat = lanes::reshape(lanes::relu(z2), {batch, -1});
  const Tensor logits = lanes::matmul(flat, p.w3) + p.b3;
  const Tensor d3 = lanes::softmax(logits) - lanes::one_hot(y, 10);
  auto relu_grad = [](const Tensor& z) { return lanes::cast(z > 0.0, lanes::kFloat32); };
  const Tensor d2 =
      lanes::reshape(lanes::matmul(d3, lanes::transpose(p.w3)), z2.shape()) * relu_grad(z2);
  const Tensor d1 = conv_input_grad(d2, p.w2) * relu_grad(z1);
  return leaves(Cnn{conv_weight_grad(x, d1), lanes::sum(d1, {2, 3}), conv_weight_grad(h1, d2),
                    lanes::sum(d2, {2, 3}), batched_outer(flat, d3), d3});
}

inline std::vector<Variant> perex_cnn() {
  const int64_t batch = 64;
  // He initialisation for the relu layers.
  const Cnn p{normal(50, {16, 1, 5, 5}, std::sqrt(2.0 / 25)),   normal(51, {16}, 0.1),
              normal(52, {32, 16, 5, 5}, std::sqrt(2.0 / 400)), normal(53, {32}, 0.1),
              normal(54, {1568, 10}, 1 / std::sqrt(1568.0)),    normal(55, {10}, 0.1)};
  const Tensor x = normal(56, {batch, 1, 28, 28}), y = labels(57, batch, 10);
  inputs({{"w1", p.w1},
          {"b1", p.b1},
          {"w2", p.w2},
          {"b2", p.b2},
          {"w3", p.w3},
          {"b3", p.b3},
          {"x", x},
          {"y", y}});
  param("stride", kStride);
  param("padding", kPad);
  // One example: x (1, 28, 28), y a 0-d class index.
  auto loss = [](const Cnn& q, const Tensor& xi, const Tensor& yi) {
    auto bias = [](const Tensor& b) { return lanes::reshape(b, {-1, 1, 1}); };
    const Tensor h1 = lanes::relu(lanes::conv2d(xi, q.w1, cnn_conv()) + bias(q.b1));
    const Tensor h2 = lanes::relu(lanes::conv2d(h1, q.w2, cnn_conv()) + bias(q.b2));
    const Tensor logits = lanes::matmul(lanes::flatten(h2), q.w3) + q.b3;
    return lanes::softmax_cross_entropy(logits, yi);
  };
  std::vector<Variant> variants = per_example_variants(lanes::grad(loss), p, x, y);
  variants.push_back({"manual", [=] { return cnn_manual(p, x, y); }});
  return variants;
}

}  // namespace workloads
