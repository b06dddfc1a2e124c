// vmap on concrete inputs runs a cached, optimized batched graph keyed by the traced example
// (built on the second call with a key): it must never serve a stale graph when what f captures
// changes, and must hit when nothing did.
#include <gtest/gtest.h>

#include <cmath>

#include "expect_near.h"
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

}  // namespace

TEST(VmapCache, HitsWhenNothingChangedAndFollowsNewCaptures) {
  Tensor w = randn({8, 4}, 1);
  auto f = [&w](const Tensor& x) { return tanh(matmul(x, w)) * 2.0 + 1.0; };
  auto batched = vmap(f);
  const Tensor xs = randn({16, 1, 8}, 2);
  expect_near(batched(xs).to_vector<double>(), loop(f, xs));
  EXPECT_EQ(batched.cache_size(), 0u);  // the first call runs eagerly
  for (int call = 0; call < 3; ++call) expect_near(batched(xs).to_vector<double>(), loop(f, xs));
  EXPECT_EQ(batched.cache_size(), 1u);  // scalars recreated per trace are keyed by value
  w = randn({8, 4}, 3);                 // f now captures another tensor
  for (int call = 0; call < 2; ++call) expect_near(batched(xs).to_vector<double>(), loop(f, xs));
  EXPECT_EQ(batched.cache_size(), 2u);
  const Tensor ys = randn({5, 1, 8}, 4);  // another batch size: another graph
  for (int call = 0; call < 2; ++call) expect_near(batched(ys).to_vector<double>(), loop(f, ys));
  EXPECT_EQ(batched.cache_size(), 3u);
}

TEST(VmapCache, SmallCapturedValuesAreComparedByValue) {
  double scale = 1.0;
  auto f = [&scale](const Tensor& x) { return x * full({3}, scale); };
  auto batched = vmap(f);
  const Tensor xs = randn({4, 3}, 5);
  for (double s : {1.0, 2.0, 1.0, 3.0, 2.0, 1.0}) {
    scale = s;
    expect_near(batched(xs).to_vector<double>(), (xs * s).to_vector<double>());
  }
  EXPECT_EQ(batched.cache_size(), 2u);  // 1 and 2 were seen twice, 3 once
}

TEST(VmapCache, PadValuesAreKeyedExactly) {
  // 1.0000001 and 1.0000002 are distinct float32 values that print alike to 6 digits.
  double value = 1.0000001;
  auto f = [&value](const Tensor& x) { return pad(x, {1}, {0}, value); };
  auto batched = vmap(f);
  const Tensor xs = randn({2, 3}, 9);
  for (double v : {1.0000001, 1.0000001, 1.0000002, 1.0000002, 1.0000001}) {
    value = v;
    const auto got = batched(xs).to_vector<float>();
    EXPECT_EQ(got[0], float(v));
    EXPECT_EQ(got[4], float(v));
  }
  EXPECT_EQ(batched.cache_size(), 2u);
}

TEST(VmapCache, FreshLargeCapturesEveryCallStayCorrect) {
  // exp(w) runs eagerly while tracing: a new 1 MB constant each call, keyed by its address. The
  // allocator may hand a freed address out again, so a key can repeat with other values: the
  // entry is then built from that call's own graph and pins its constant, so no later call can
  // match it by accident. Every call must give its own right answer.
  Tensor w = randn({512, 512}, 6);
  auto f = [&w](const Tensor& x) { return matmul(x, exp(w * 0.01)); };
  auto batched = vmap(f);
  const Tensor xs = randn({3, 512}, 7);
  for (int call = 0; call < 6; ++call) {
    w = randn({512, 512}, 8 + call);
    const auto want = matmul(xs, exp(w * 0.01)).to_vector<double>();
    expect_near(batched(xs).to_vector<double>(), want);
  }
  EXPECT_LE(batched.cache_size(), 8u);  // the cache's bound
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

TEST(VmapCache, JacobianObjectsKeepTheirGraphs) {
  const Tensor w = randn({6, 6}, 30);
  auto f = [&](const Tensor& x) { return sum(tanh(matmul(w, x))); };
  auto h = hessian(f);
  const Tensor x = randn({6}, 31);
  // The Hessian of sum(tanh(W x)): W^T diag(-2 tanh(z) (1 - tanh(z)^2)) W with z = W x.
  const auto ws = w.to_vector<double>(), xs = x.to_vector<double>();
  std::vector<double> d(6), want(36, 0.0);
  for (int i = 0; i < 6; ++i) {
    double z = 0;
    for (int j = 0; j < 6; ++j) z += ws[i * 6 + j] * xs[j];
    d[i] = -2 * std::tanh(z) * (1 - std::tanh(z) * std::tanh(z));
  }
  for (int a = 0; a < 6; ++a)
    for (int b = 0; b < 6; ++b)
      for (int i = 0; i < 6; ++i) want[a * 6 + b] += ws[i * 6 + a] * d[i] * ws[i * 6 + b];
  for (int call = 0; call < 3; ++call) expect_near(h(x).to_vector<double>(), want);
  EXPECT_EQ(h.cache.size(), 1u);  // built on the second call, hit on the third
}
