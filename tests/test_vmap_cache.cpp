// vmap on concrete inputs runs a cached, optimized batched graph keyed by the traced example:
// it must never serve a stale graph when what f captures changes, and must hit when nothing did.
#include <gtest/gtest.h>

#include "lanes/lanes.h"

using namespace lanes;

namespace {
Tensor randn(const Shape& shape, uint64_t seed) { return random::normal(random::key(seed), shape); }

// The per-example loop: the reference.
template <class F>
std::vector<double> loop(F f, const Tensor& xs) {
  std::vector<double> out;
  for (int64_t i = 0; i < xs.shape(0); ++i) {
    const auto v = f(slice_axis(xs, 0, i, i + 1).contiguous()).template to_vector<double>();
    out.insert(out.end(), v.begin(), v.end());
  }
  return out;
}

void expect_near(const std::vector<double>& got, const std::vector<double>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i)
    ASSERT_NEAR(got[i], want[i], 1e-5 * (1 + std::abs(want[i])));
}
}  // namespace

TEST(VmapCache, HitsWhenNothingChangedAndFollowsNewCaptures) {
  Tensor w = randn({8, 4}, 1);
  auto f = [&w](const Tensor& x) { return tanh(matmul(x, w)) * 2.0 + 1.0; };
  auto batched = vmap(f);
  const Tensor xs = randn({16, 1, 8}, 2);
  for (int call = 0; call < 3; ++call) expect_near(batched(xs).to_vector<double>(), loop(f, xs));
  EXPECT_EQ(batched.cache_size(), 1u);  // scalars recreated per trace are keyed by value
  w = randn({8, 4}, 3);                 // f now captures another tensor
  expect_near(batched(xs).to_vector<double>(), loop(f, xs));
  EXPECT_EQ(batched.cache_size(), 2u);
  const Tensor ys = randn({5, 1, 8}, 4);  // another batch size: another graph
  expect_near(batched(ys).to_vector<double>(), loop(f, ys));
  EXPECT_EQ(batched.cache_size(), 3u);
}

TEST(VmapCache, SmallCapturedValuesAreComparedByValue) {
  double scale = 1.0;
  auto f = [&scale](const Tensor& x) { return x * full({3}, scale); };
  auto batched = vmap(f);
  const Tensor xs = randn({4, 3}, 5);
  for (double s : {1.0, 2.0, 1.0, 3.0}) {
    scale = s;
    expect_near(batched(xs).to_vector<double>(), (xs * s).to_vector<double>());
  }
  EXPECT_EQ(batched.cache_size(), 3u);
}

TEST(VmapCache, FreshLargeCapturesEveryCallStayCorrect) {
  // exp(w) runs eagerly while tracing: a new 1 MB constant each call, so every call misses; the
  // vmap then stops caching and keeps giving the right answer.
  Tensor w = randn({512, 512}, 6);
  auto f = [&w](const Tensor& x) { return matmul(x, exp(w * 0.01)); };
  auto batched = vmap(f);
  const Tensor xs = randn({3, 512}, 7);
  for (int call = 0; call < 6; ++call) {
    w = randn({512, 512}, 8 + call);
    const auto want = matmul(xs, exp(w * 0.01)).to_vector<double>();
    expect_near(batched(xs).to_vector<double>(), want);
  }
  EXPECT_LE(batched.cache_size(), 4u);
}

TEST(VmapCache, NestedAndTracedCallsBypassTheCache) {
  const Tensor w = randn({4, 4}, 20);
  auto inner = vmap([&](const Tensor& x) { return sum(tanh(matmul(x, w))); });
  auto outer = vmap(inner);
  const Tensor xs = randn({3, 5, 4}, 21);
  const auto got = outer(xs).to_vector<double>();
  for (int64_t i = 0; i < 3; ++i)
    for (int64_t j = 0; j < 5; ++j) {
      const Tensor x = slice(xs, {i, j, 0}, {i + 1, j + 1, 4});
      ASSERT_NEAR(got[i * 5 + j], sum(tanh(matmul(reshape(x, {4}), w))).item<double>(), 1e-5);
    }
  EXPECT_EQ(inner.cache_size(), 0u);  // it only ever ran traced, inside outer
  // grad of a vmap: traced, so recorded into the gradient's trace.
  const Tensor g = grad([&](const Tensor& x) { return sum(inner(x)); })(randn({5, 4}, 22));
  EXPECT_EQ(g.shape(), (Shape{5, 4}));
  EXPECT_EQ(inner.cache_size(), 0u);
}
