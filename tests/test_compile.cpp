// compile: same results as eager, one trace per signature, and the graph passes.
#include <gtest/gtest.h>

#include "lanes/lanes.h"

using namespace lanes;

namespace {
Tensor randn(const Shape& shape, uint64_t seed) { return random::normal(random::key(seed), shape); }

void expect_close(const Tensor& got, const Tensor& want) {
  ASSERT_EQ(got.shape(), want.shape());
  const auto g = got.to_vector<double>(), w = want.to_vector<double>();
  for (size_t i = 0; i < g.size(); ++i) ASSERT_NEAR(g[i], w[i], 1e-5 * (1 + std::abs(w[i])));
}
}  // namespace

TEST(Compile, MatchesEagerAndCachesPerSignature) {
  const Tensor w = randn({8, 4}, 1);
  auto f = [&](const Tensor& x) { return tanh(matmul(x, w)) * 2.0; };
  auto fast = compile(vmap(f));
  const Tensor x = randn({16, 8}, 2);
  expect_close(fast(x), vmap(f)(x));
  expect_close(fast(x * 3.0), vmap(f)(x * 3.0));
  EXPECT_EQ(fast.cache_size(), 1u);
  const Tensor y = randn({5, 8}, 3);  // a new batch size: a new trace
  expect_close(fast(y), vmap(f)(y));
  EXPECT_EQ(fast.cache_size(), 2u);
}

// The key is the argument types and the leaves' dtypes and shapes: calls alternating between
// signatures each find their own trace (the last one found is tried first), and the same leaves
// passed as another C++ type are another signature.
TEST(Compile, AlternatingSignaturesAndArgumentTypes) {
  auto f = [](const auto& a) {
    if constexpr (std::is_same_v<std::decay_t<decltype(a)>, Tensor>)
      return a * 2.0;
    else
      return a[0] * 3.0;
  };
  auto fast = compile(f);
  const Tensor x = randn({4}, 7), y = randn({2, 3}, 8), z = cast(x, DType::Float64);
  for (int round = 0; round < 3; ++round) {
    expect_close(fast(x), x * 2.0);
    expect_close(fast(y), y * 2.0);
    expect_close(fast(std::vector<Tensor>{x}), x * 3.0);
    expect_close(fast(z), z * 2.0);
    EXPECT_EQ(fast(z).dtype(), DType::Float64);
    expect_close(fast(x), x * 2.0);
  }
  EXPECT_EQ(fast.cache_size(), 4u);
}

TEST(Compile, TreesAndTupleResults) {
  auto f = [](const std::pair<Tensor, Tensor>& p) {
    return std::make_tuple(p.first + p.second, sum(p.first));
  };
  auto fast = compile(f);
  const auto p = std::make_pair(randn({3}, 4), randn({3}, 5));
  auto [a, b] = fast(p);
  expect_close(a, p.first + p.second);
  expect_close(b, sum(p.first));
}

TEST(Compile, TracesThroughInsideOtherTransforms) {
  auto f = compile([](const Tensor& v) { return sum(exp(v)); });
  const Tensor x = randn({4}, 6);
  expect_close(grad(f)(x), exp(x));
  expect_close(vmap(f)(reshape(x, {2, 2})), sum(exp(reshape(x, {2, 2})), 1));
}

TEST(Compile, PassesRemoveDeadAndRepeatedWork) {
  auto f = [](const Tensor& v) {
    const Tensor unused = exp(v) * 3.0;  // dead
    (void)unused;
    const Tensor a = sin(v), b = sin(v);          // the same subexpression twice
    return reshape(reshape(a + b, {2, 2}), {4});  // reshape of reshape to the input shape
  };
  const Graph g = make_graph(f)(zeros({4}));
  const Graph opt = detail::optimize(g);
  int sins = 0, reshapes = 0, exps = 0;
  for (const Node& n : opt.nodes) {
    sins += n.prim->name() == "sin";
    exps += n.prim->name() == "exp";
    reshapes += n.prim->name() == "reshape";
  }
  EXPECT_EQ(sins, 1) << opt;
  EXPECT_EQ(exps, 0) << opt;
  EXPECT_EQ(reshapes, 0) << opt;
  const Tensor x = randn({4}, 7);
  expect_close(compile(f)(x), sin(x) * 2.0);
}
