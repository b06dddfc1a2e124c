// vmap over an empty batch (B = 0) where the batching rules failed: conv2d and conv_transpose2d
// (divisions by B) with the input, the weight or both mapped, per-example gradients of a conv
// loss, and cond / while_loop with a per-example predicate (0 lanes taken for no lanes). The
// expected shapes are jax's: the per-example result's shape behind a batch axis of 0. (The
// op-table tests run every op of the table with B = 0 under vmap, grad and compile; these are
// the cases of the bug report, and control flow, which has no rows there.)
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

// A cond or while_loop whose predicate differs per example becomes a lane node; with no examples
// it has 0 lanes, and was taken for a plain node ("the index must be a 0-d integer, got shape
// (0,)"). Every strategy, nested, under grad and compile.
namespace {
Tensor per_example_cond(const Tensor& x) {
  return lanes::cond(
      x[0] > 0.0, [](const Tensor& v) { return lanes::sqrt(v); },
      [](const Tensor& v) { return v * 0.0; }, x);
}
Tensor per_example_while(const Tensor& x) {
  auto [n, z] = lanes::while_loop(
      [](const auto& c) { return lanes::sum(std::get<1>(c)) < 100.0; },
      [](const auto& c) { return std::make_tuple(std::get<0>(c) + 1, std::get<1>(c) * 2.0); },
      std::make_tuple(lanes::scalar(0, lanes::DType::Int32), x));
  return z;
}
}  // namespace

TEST(EmptyBatch, ControlFlowWithAPerExamplePredicate) {
  for (auto s :
       {lanes::CondStrategy::Select, lanes::CondStrategy::Partition, lanes::CondStrategy::Auto}) {
    lanes::VmapOptions o;
    o.cond = s;
    EXPECT_EQ(lanes::vmap(per_example_cond, 0, 0, o)(lanes::zeros({0, 3})).shape(), (Shape{0, 3}));
  }
  for (auto s :
       {lanes::LoopStrategy::Mask, lanes::LoopStrategy::Compact, lanes::LoopStrategy::Auto}) {
    lanes::VmapOptions o;
    o.loop = s;
    EXPECT_EQ(lanes::vmap(per_example_while, 0, 0, o)(lanes::zeros({0, 3})).shape(), (Shape{0, 3}));
  }
  auto loss_cond = [](const Tensor& x) { return lanes::sum(per_example_cond(x)); };
  auto loss_while = [](const Tensor& x) { return lanes::sum(per_example_while(x)); };
  for (const Shape& s : {Shape{0, 3}, Shape{0, 2, 3}, Shape{2, 0, 3}}) {
    const Tensor xs = lanes::zeros(s);
    if (s.size() == 2) {
      EXPECT_EQ(lanes::vmap(lanes::grad(loss_cond))(xs).shape(), s);
      EXPECT_EQ(lanes::vmap(lanes::grad(loss_while))(xs).shape(), s);
      EXPECT_EQ(lanes::compile(lanes::vmap(per_example_while))(xs).shape(), s);
      continue;
    }
    EXPECT_EQ(lanes::vmap(lanes::vmap(per_example_cond))(xs).shape(), s);
    EXPECT_EQ(lanes::vmap(lanes::vmap(lanes::grad(loss_while)))(xs).shape(), s);
  }
  // The lanes that exist still take their own branches.
  const Tensor x = lanes::tensor(std::vector<float>{4, 1, -1, 2}, {2, 2});
  EXPECT_EQ(lanes::vmap(per_example_cond)(x).to_vector<float>(), (std::vector<float>{2, 1, 0, 0}));
}
