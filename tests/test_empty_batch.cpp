// vmap over an empty batch (B = 0) where the batching rules used to divide by B: conv2d and
// conv_transpose2d with the input, the weight or both mapped, and per-example gradients of a conv
// loss. The expected shapes are jax's: the per-example result's shape behind a batch axis of 0.
// (The op-table tests run every op with B = 0 under vmap, grad and compile; these are the cases
// of the bug report, spelled out.)
#include <gtest/gtest.h>

#include "lanes/lanes.h"

namespace {

using lanes::Shape;
using lanes::Tensor;

Tensor conv(const Tensor& x, const Tensor& w) { return lanes::conv2d(x, w); }
Tensor convt(const Tensor& x, const Tensor& w) {
  return lanes::conv_transpose2d(x, w, {{2, 2}, {0, 0}, {0, 0}, {1, 1}, 1});
}

TEST(EmptyBatch, Conv2dWithTheInputMapped) {
  const Tensor w = lanes::ones({2, 1, 3, 3});
  auto f = [w](const Tensor& x) { return conv(x, w); };
  EXPECT_EQ(lanes::vmap(f)(lanes::zeros({0, 1, 5, 5})).shape(), (Shape{0, 2, 3, 3}));
  EXPECT_EQ(lanes::vmap(f)(lanes::zeros({0, 4, 1, 5, 5})).shape(), (Shape{0, 4, 2, 3, 3}));
  // The batch axis last, the result's batch axis last too.
  EXPECT_EQ(lanes::vmap(f, -1, -1)(lanes::zeros({4, 1, 5, 5, 0})).shape(), (Shape{4, 2, 3, 3, 0}));
}

TEST(EmptyBatch, Conv2dWithTheWeightOrBothMapped) {
  const Tensor x = lanes::ones({3, 2, 5, 5});
  auto w_mapped = lanes::vmap([x](const Tensor& w) { return conv(x, w); });
  EXPECT_EQ(w_mapped(lanes::zeros({0, 4, 2, 3, 3})).shape(), (Shape{0, 3, 4, 3, 3}));
  auto both = lanes::vmap([](const Tensor& a, const Tensor& b) { return conv(a, b); });
  EXPECT_EQ(both(lanes::zeros({0, 3, 2, 5, 5}), lanes::zeros({0, 4, 2, 3, 3})).shape(),
            (Shape{0, 3, 4, 3, 3}));
  // Grouped: groups multiplied by B would be 0.
  auto grouped = lanes::vmap([](const Tensor& a, const Tensor& b) {
    return lanes::conv2d(a, b, {{1, 1}, {0, 0}, {1, 1}, 2});
  });
  EXPECT_EQ(grouped(lanes::zeros({0, 1, 4, 5, 5}), lanes::zeros({0, 6, 2, 3, 3})).shape(),
            (Shape{0, 1, 6, 3, 3}));
}

TEST(EmptyBatch, ConvTranspose2dWithEveryOperandMapped) {
  const Tensor x = lanes::ones({3, 2, 4, 4}), w = lanes::ones({2, 5, 3, 3});
  const Shape want{0, 3, 5, 9, 9};
  EXPECT_EQ(lanes::vmap([w](const Tensor& a) { return convt(a, w); })(lanes::zeros({0, 3, 2, 4, 4}))
                .shape(),
            want);
  EXPECT_EQ(lanes::vmap([x](const Tensor& b) { return convt(x, b); })(lanes::zeros({0, 2, 5, 3, 3}))
                .shape(),
            want);
  EXPECT_EQ(lanes::vmap([](const Tensor& a, const Tensor& b) { return convt(a, b); })(
                lanes::zeros({0, 3, 2, 4, 4}), lanes::zeros({0, 2, 5, 3, 3}))
                .shape(),
            want);
}

// Per-example gradients of a conv loss (DP-SGD's vmap(grad)) for a batch of no examples: the
// backward pass's rules (transposed conv, weight gradient) batch with B = 0 too.
TEST(EmptyBatch, PerExampleGradientsOfAConvLoss) {
  auto loss = [](const Tensor& w, const Tensor& x) { return lanes::sum(lanes::tanh(conv(x, w))); };
  const Tensor w = lanes::ones({2, 1, 3, 3});
  auto shared_w = lanes::vmap(lanes::grad(loss), lanes::in_axes(lanes::none, 0));
  const Tensor g = shared_w(w, lanes::zeros({0, 1, 1, 5, 5}));
  EXPECT_EQ(g.shape(), (Shape{0, 2, 1, 3, 3}));
  auto mapped_w = lanes::vmap(lanes::grad(loss, {0, 1}));
  const auto [gw, gx] = mapped_w(lanes::zeros({0, 2, 1, 3, 3}), lanes::zeros({0, 1, 1, 5, 5}));
  EXPECT_EQ(gw.shape(), (Shape{0, 2, 1, 3, 3}));
  EXPECT_EQ(gx.shape(), (Shape{0, 1, 1, 5, 5}));
  // Compiled, the same.
  EXPECT_EQ(lanes::compile(shared_w)(w, lanes::zeros({0, 1, 1, 5, 5})).shape(),
            (Shape{0, 2, 1, 3, 3}));
}

}  // namespace
