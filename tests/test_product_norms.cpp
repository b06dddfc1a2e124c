// The optimizer's product-norm rewrite (src/runtime/product_norms.cpp): per-example gradient
// norms computed from the Gram matrices of the factors, the per-example gradients never formed.
// References are float64 per-example loops that form every gradient; the graph checks read the
// optimized graph for the product's shape.
#include <gtest/gtest.h>

#include "expect_near.h"
#include "lanes/lanes.h"

namespace {

using lanes::Shape;
using lanes::Tensor;

Tensor f64(const Shape& shape, uint64_t seed, double scale = 1.0) {
  return lanes::random::normal(lanes::random::key(seed), shape, lanes::DType::Float64) * scale;
}

// Whether some node of the graph computes a value of this shape.
bool has_shape(const lanes::Graph& g, const Shape& shape) {
  for (const lanes::Node& n : g.nodes)
    for (lanes::ValueId v : n.outputs)
      if (g.types[v].shape == shape) return true;
  return false;
}

template <class F, class... A>
lanes::Graph optimized(const F& f, const A&... args) {
  return lanes::detail::fuse_elementwise(lanes::detail::optimize(lanes::make_graph(f)(args...)));
}

void near(const Tensor& got, const Tensor& want, double tol) {
  ASSERT_EQ(got.shape(), want.shape());
  expect_near(got.contiguous().to_vector<double>(), want.contiguous().to_vector<double>(), tol);
}

// ||grad of a two-layer MLP's loss|| per example: dense weight gradients are outer products.
TEST(ProductNorms, PerExampleGradientNormsOfAnMlp) {
  const int64_t batch = 12;
  const Tensor w1 = f64({20, 16}, 1, 0.3), w2 = f64({16, 3}, 2, 0.3), xs = f64({batch, 20}, 3);
  auto loss = [](const Tensor& w1, const Tensor& w2, const Tensor& x) {
    return lanes::sum(lanes::square(lanes::matmul(lanes::tanh(lanes::matmul(x, w1)), w2)), {});
  };
  auto norm = [&](const Tensor& x) {
    const auto g = lanes::grad(loss, {0, 1})(w1, w2, x);
    return lanes::sqrt(lanes::sum(lanes::square(std::get<0>(g)), {}) +
                       lanes::sum(lanes::square(std::get<1>(g)), {}));
  };
  auto batched = lanes::compile(lanes::vmap(norm));
  std::vector<Tensor> loop;
  for (int64_t i = 0; i < batch; ++i) loop.push_back(norm(xs[i]));
  near(batched(xs), lanes::stack(loop), 1e-12);
  near(batched(xs), lanes::stack(loop), 1e-12);
  const lanes::Graph g = optimized(lanes::vmap(norm), xs);
  EXPECT_FALSE(has_shape(g, {batch, 20, 16})) << g;
  EXPECT_FALSE(has_shape(g, {batch, 16, 3})) << g;
}

// A sequence model: the per-example weight gradient x^T delta contracts the time axis (K = 3),
// and the rewrite takes the Gram form (T x T matrices per example).
TEST(ProductNorms, ContractedTimeAxisTakesTheGramForm) {
  const int64_t batch = 5, steps = 3;
  const Tensor w = f64({40, 30}, 4, 0.2), xs = f64({batch, steps, 40}, 5);
  auto loss = [](const Tensor& w, const Tensor& x) {
    return lanes::sum(lanes::tanh(lanes::matmul(x, w)), {});
  };
  auto sq_norm = [&](const Tensor& x) {
    return lanes::sum(lanes::square(lanes::grad(loss)(w, x)), {});
  };
  auto batched = lanes::compile(lanes::vmap(sq_norm));
  std::vector<Tensor> loop;
  for (int64_t i = 0; i < batch; ++i) loop.push_back(sq_norm(xs[i]));
  near(batched(xs), lanes::stack(loop), 1e-12);
  EXPECT_FALSE(has_shape(optimized(lanes::vmap(sq_norm), xs), {batch, 40, 30}));
}

// When the contracted dim is large the product is the cheaper one: left alone, same result.
TEST(ProductNorms, LargeContractionIsLeftAlone) {
  const Tensor a = f64({4, 64, 6}, 6), b = f64({4, 64, 5}, 7);
  auto f = [](const Tensor& a, const Tensor& b) {
    const Tensor m = lanes::dot_general(a, b, {{1}, {1}, {0}, {0}});  // (4, 6, 5), K = 64
    return lanes::sum(m * m, {1, 2});
  };
  const Tensor want = f(a, b);
  near(lanes::compile(f)(a, b), want, 1e-12);
  EXPECT_TRUE(has_shape(optimized(f, a, b), {4, 6, 5}));
  // Used elsewhere too, the product is formed anyway and the sum stays as written.
  auto g = [](const Tensor& a, const Tensor& b) {
    const Tensor m = lanes::dot_general(a, b, {{}, {}, {0}, {0}});
    return std::make_tuple(lanes::sum(m * m, {1, 2, 3, 4}), m);
  };
  const auto got = lanes::compile(g)(a, b);
  near(std::get<0>(got), std::get<0>(g(a, b)), 1e-12);
}

}  // namespace
