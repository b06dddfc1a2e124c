// lanes::FlopCounter against hand counts: 2 M N K for a product, one per element for arithmetic,
// n - 1 per reduced row, a multiply-add per weight, output position and example for a conv, and
// the iterations a while_loop actually ran.
#include <gtest/gtest.h>

#include "lanes/lanes.h"

using namespace lanes;

namespace {
Tensor randn(const Shape& shape, uint64_t seed) { return random::normal(random::key(seed), shape); }
}  // namespace

TEST(FlopCounter, ProductsAndElementwise) {
  const Tensor x = randn({4, 8}, 1), w = randn({8, 3}, 2), b = randn({3}, 3);
  FlopCounter count;
  const Tensor y = tanh(matmul(x, w) + b);  // 2 * 4 * 3 * 8, then 12 adds and 12 tanh
  EXPECT_EQ(count.flops(), 2.0 * 4 * 3 * 8 + 12 + 12);
  const Tensor s = sum(y, std::vector<int64_t>{1});  // 4 rows of 3: 2 adds each
  EXPECT_EQ(count.flops(), 2.0 * 4 * 3 * 8 + 24 + 8);
  (void)s;
}

TEST(FlopCounter, MovesCastsAndIntegersCountNothing) {
  const Tensor x = randn({5, 6}, 4);
  const Tensor i = iota({30}, 0, kInt32);
  FlopCounter count;
  (void)transpose(x, {1, 0});
  (void)reshape(x, {30});
  (void)cast(x, kFloat64);
  (void)(i + i);
  (void)where(x > 0.0, x, x * 0.0);  // the comparison and the multiply count, the select not
  EXPECT_EQ(count.flops(), 30.0 + 30.0);
}

TEST(FlopCounter, ConvolutionAndItsGradients) {
  const Tensor x = randn({2, 3, 8, 8}, 5), w = randn({4, 3, 3, 3}, 6);
  Conv2dOptions same;
  same.padding = {1, 1};
  const double per_conv = 2.0 * 2 * 8 * 8 * (4 * 3 * 3 * 3);  // examples x positions x weights
  {
    FlopCounter count;
    (void)conv2d(x, w, same);
    EXPECT_EQ(count.flops(), per_conv);
  }
  // The gradient in x and in w: one transposed conv each, the same multiply-adds, plus the
  // reduction of the loss (sum of 2 * 4 * 8 * 8 outputs).
  auto loss = [&](const Tensor& xx, const Tensor& ww) { return sum(conv2d(xx, ww, same)); };
  (void)value_and_grad(loss, {0, 1})(x, w);  // warm: autodiff builds its rules once
  FlopCounter count;
  (void)grad(loss, {0, 1})(x, w);
  EXPECT_EQ(count.flops(), 3 * per_conv + (2 * 4 * 8 * 8 - 1));
}

TEST(FlopCounter, CompiledGraphsCountAsTheyRun) {
  const Tensor w = randn({8, 4}, 7);
  auto f = [&](const Tensor& x) { return tanh(matmul(x, w)) * 2.0; };
  auto fast = compile(vmap(f));
  const Tensor x = randn({16, 8}, 8);
  for (int warm = 0; warm < 2; ++warm) (void)fast(x);
  FlopCounter count;
  (void)fast(x);
  // The product, then tanh and the multiply, fused or not: one each per output element.
  EXPECT_EQ(count.flops(), 2.0 * 16 * 4 * 8 + 2 * 16 * 4);
}

TEST(FlopCounter, WhileLoopCountsTheIterationsItRan) {
  auto doubling = [](double start) {
    FlopCounter count;
    (void)while_loop([](const Tensor& v) { return v < 100.0; },
                     [](const Tensor& v) { return v * 2.0; }, scalar(start));
    return count.flops();
  };
  // From 1: 8 tests (1, 2, ..., 128) and 7 doublings; from 64: 2 tests and 1 doubling.
  EXPECT_EQ(doubling(1.0), 8.0 + 7.0);
  EXPECT_EQ(doubling(64.0), 2.0 + 1.0);
}

TEST(FlopCounter, CountersNest) {
  const Tensor x = randn({10}, 9);
  FlopCounter outer;
  (void)exp(x);
  {
    FlopCounter inner;
    (void)(x * x);
    EXPECT_EQ(inner.flops(), 10.0);
    EXPECT_EQ(inner.evaluations(), 1);
  }
  EXPECT_EQ(outer.flops(), 20.0);
  EXPECT_EQ(outer.evaluations(), 2);
}

TEST(FlopCounter, ByPrimitive) {
  const Tensor x = randn({6, 5}, 10), w = randn({5, 4}, 11);
  FlopCounter count;
  (void)matmul(x, w);
  (void)matmul(x, w);
  (void)exp(x);
  const auto& by = count.by_primitive();
  ASSERT_EQ(by.count("dot_general"), 1u);
  EXPECT_EQ(by.at("dot_general").evaluations, 2);
  EXPECT_EQ(by.at("dot_general").flops, 2 * (2.0 * 6 * 4 * 5));
  EXPECT_GE(by.at("dot_general").seconds, 0.0);
  EXPECT_EQ(by.at("exp").flops, 30.0);
  double total = 0;
  for (const auto& [name, c] : by) total += c.flops;
  EXPECT_EQ(total, count.flops());
}

TEST(FlopCounter, ShortcutsCountTheWorkDone) {
  // A large product with the identity is a view of the other factor: nothing multiplied.
  const Tensor w = randn({256, 256}, 12), x = randn({256, 64}, 13);
  FlopCounter count;
  const Tensor same = matmul(eye(256), w);
  EXPECT_EQ(count.flops(), 0.0);
  (void)matmul(w, x);  // an ordinary product still counts in full
  EXPECT_EQ(count.flops(), 2.0 * 256 * 64 * 256);
  EXPECT_EQ(same.to_vector<float>(), w.to_vector<float>());
}

TEST(FlopCounter, CountsWhatPoolThreadsRunForTheCaller) {
  // A vmapped loop of small steps runs one chunk of lanes per thread (parallel chunks): the
  // chunks run on pool threads, and their work counts for the caller as at one thread.
  const Tensor w = randn({8, 8}, 14) * 0.3, xs = randn({64, 8}, 15);
  auto f = [&](const Tensor& x) {
    return fori_loop(
        0, 10, [&](const Tensor&, const Tensor& h) { return tanh(matmul(w, h) + x); }, x);
  };
  auto count = [&](int threads) {
    const int before = num_threads();
    set_num_threads(threads);
    auto batched = compile(vmap(f));
    for (int warm = 0; warm < 2; ++warm) (void)batched(xs);
    FlopCounter c;
    (void)batched(xs);
    set_num_threads(before);
    return c.flops();
  };
  // 10 steps of a (64, 8) x (8, 8) product, an add and a tanh.
  const double want = 10 * (2.0 * 64 * 8 * 8 + 64 * 8 + 64 * 8);
  EXPECT_EQ(count(1), want);
  EXPECT_EQ(count(2), want);
  const int before = num_threads();
  set_num_threads(2);
  EXPECT_EQ(explain(vmap(f), xs).chunking.rfind("parallel:", 0), 0u);  // the case this tests
  set_num_threads(before);
}
