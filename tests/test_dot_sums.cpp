// The merge of sums of products (src/runtime/dot_sums.cpp, part of compile's passes): merged
// graphs give the eager values, and only the sums it is meant for are merged.
#include <gtest/gtest.h>

#include <cmath>

#include "lanes/lanes.h"

using namespace lanes;

namespace {

Tensor randn(const Shape& shape, uint64_t seed) { return random::normal(random::key(seed), shape); }

void expect_close(const Tensor& got, const Tensor& want, double tol = 1e-5) {
  ASSERT_EQ(got.shape(), want.shape());
  const auto g = got.to_vector<double>(), w = want.to_vector<double>();
  for (size_t i = 0; i < g.size(); ++i) ASSERT_NEAR(g[i], w[i], tol * (1 + std::abs(w[i]))) << i;
}

template <class F, class... Args>
int optimized_dots(const F& f, const Args&... args) {
  int n = 0;
  for (const Node& node : detail::optimize(make_graph(f)(args...)).nodes)
    n += node.prim->name() == "dot_general";
  return n;
}

Tensor step(const Tensor& x, int64_t t) { return squeeze(slice_axis(x, 0, t, t + 1), 0); }

// sum_t a[t, b] outer c[t, b]: per-example outer products, as vmap(grad) of a loop makes them.
Tensor sum_of_outers(const Tensor& a, const Tensor& c) {
  Tensor sum;
  for (int64_t t = 0; t < a.shape(0); ++t) {
    const Tensor term = dot_general(step(a, t), step(c, t), {{}, {}, {0}, {0}});
    sum = sum.defined() ? sum + term : term;
  }
  return sum;
}

}  // namespace

TEST(DotSums, OuterProductsOfEveryStepAreOneProduct) {
  const Tensor a = randn({6, 5, 7}, 1), c = randn({6, 5, 9}, 2);
  expect_close(compile(sum_of_outers)(a, c), sum_of_outers(a, c));
  EXPECT_EQ(optimized_dots(sum_of_outers, a, c), 1);
}

TEST(DotSums, OrdinaryGemmsAreNotMerged) {
  // Outputs (4, 4) smaller than operands (4, 64) and (64, 4): stacking would copy more than the
  // adds save.
  auto f = [](const Tensor& x, const Tensor& w) {
    return matmul(step(x, 0), step(w, 0)) + matmul(step(x, 1), step(w, 1)) +
           matmul(step(x, 2), step(w, 2));
  };
  const Tensor x = randn({3, 4, 64}, 3), w = randn({3, 64, 4}, 4);
  expect_close(compile(f)(x, w), f(x, w));
  EXPECT_EQ(optimized_dots(f, x, w), 3);
}

TEST(DotSums, ATermUsedElsewhereStaysAndGroupsMergeApart) {
  const Tensor a = randn({4, 3, 5}, 5), c = randn({4, 3, 6}, 6);
  // Four outer products per example (batch dim 0), the first also an output of its own, and two
  // products over the rows.
  auto f = [](const Tensor& x, const Tensor& y) {
    const DotDims per_example{{}, {}, {0}, {0}}, over_rows{{0}, {0}, {}, {}};
    const Tensor t0 = dot_general(step(x, 0), step(y, 0), per_example);
    const Tensor t1 = dot_general(step(x, 1), step(y, 1), per_example);
    const Tensor t2 = dot_general(step(x, 2), step(y, 2), per_example);
    const Tensor t3 = dot_general(step(x, 3), step(y, 3), per_example);
    const Tensor u = dot_general(step(x, 2), step(y, 3), over_rows);  // (5, 6)
    const Tensor v = dot_general(step(x, 3), step(y, 2), over_rows);
    return std::make_tuple(t0 + t1 + t2 + t3, t0, u * 2.0 + v);
  };
  const auto [sum, t0, uv] = compile(f)(a, c);
  const auto [want_sum, want_t0, want_uv] = f(a, c);
  expect_close(sum, want_sum);
  expect_close(t0, want_t0);
  expect_close(uv, want_uv);
  // t1..t3 merge into one product, t0 stays; u and v have different operands in the add (u * 2)
  // and are too small anyway.
  EXPECT_EQ(optimized_dots(f, a, c), 4);
}

TEST(DotSums, PerExampleGradientOfARecurrenceMatchesTheLoop) {
  // h_t = tanh(x_t W + h_{t-1} U): the gradient of W and U sums one outer product per step.
  const int64_t steps = 5, width = 6, batch = 4;
  const Tensor w = randn({width, width}, 7) * 0.5, u = randn({width, width}, 8) * 0.5;
  const Tensor xs = randn({batch, steps, width}, 9);
  auto loss = [](const std::vector<Tensor>& p, const Tensor& x) {
    Tensor h = zeros({x.shape(1)});
    for (int64_t t = 0; t < x.shape(0); ++t) h = tanh(matmul(step(x, t), p[0]) + matmul(h, p[1]));
    return sum(h * h);
  };
  const std::vector<Tensor> p{w, u};
  auto per_example = vmap(grad(loss), in_axes(none, 0));
  const std::vector<Tensor> d = compile(per_example)(p, xs);
  for (int64_t b = 0; b < batch; ++b) {
    const std::vector<Tensor> d_b = grad(loss)(p, step(xs, b));
    expect_close(step(d[0], b), d_b[0]);
    expect_close(step(d[1], b), d_b[1]);
  }
  // Unmerged, the 24 products stay (forward 2 per step, backward 1 per step for h and 1 per
  // weight per step); merged, each weight's gradient is one product.
  const int raw = [&] {
    int n = 0;
    for (const Node& node : make_graph(per_example)(p, xs).nodes)
      n += node.prim->name() == "dot_general";
    return n;
  }();
  EXPECT_LT(optimized_dots(per_example, p, xs), raw - 2 * (steps - 2));
}

TEST(DotSums, OuterProductsWithASharedFactorStayBatchedFirst) {
  // Per example transpose(outer(y, h)) with h shared, as autodiff writes a weight gradient: the
  // batch rule shares h as a stride-0 batch, and the transpose becomes an operand swap.
  const Tensor ys = randn({6, 5}, 10), h = randn({4}, 11);
  auto f = [](const Tensor& y, const Tensor& shared) {
    return transpose(dot_general(y, shared, {{}, {}, {}, {}}));
  };
  auto batched = vmap(f, in_axes(0, none));
  const Tensor got = compile(batched)(ys, h);
  ASSERT_EQ(got.shape(), (Shape{6, 4, 5}));
  for (int64_t b = 0; b < 6; ++b) expect_close(step(got, b), f(step(ys, b), h));
  int transposes = 0;
  for (const Node& node : detail::optimize(make_graph(batched)(ys, h)).nodes)
    transposes += node.prim->name() == "transpose";
  EXPECT_EQ(transposes, 0);
}
