// A product's elementwise tail run as its epilogue (src/runtime/dot_epilogue.h): the compiled
// dot_epilogue node against the same function run eagerly, op by op (each primitive's own
// kernel), bit for bit, through every kernel path of dot_general (libxsmm blocks, GEMMs split by
// rows or by columns, batched GEMMs, the small, batch-invariant and identity products); and the
// fused pass's element ranges against its whole run.
#include <gtest/gtest.h>

#include <random>

#include "compiled_graph.h"
#include "kernels/fused.h"
#include "lanes/lanes.h"
#include "same_bits.h"

using namespace lanes;

namespace {

Tensor bias_relu(const Tensor& x, const Tensor& w, const Tensor& b) {
  return relu(matmul(x, w) + b);
}

// compile(f) has one dot_epilogue and no product or chain of its own, and gives eager's bits.
template <class F, class... Args>
void expect_epilogue_matches_eager(F f, const Args&... args) {
  const Graph g = compiled_graph(f, args...);
  EXPECT_EQ(count(g, "dot_epilogue"), 1) << g;
  EXPECT_EQ(count(g, "dot_general") + count(g, "fused_elementwise"), 0) << g;
  EXPECT_TRUE(same_bits(compile(f)(args...), f(args...)));
}

}  // namespace

TEST(DotEpilogue, BiasReluOnSmallProductBlocks) {  // libxsmm's 64-row blocks
  for (DType dtype : {kFloat32, kFloat64}) {
    const Tensor x = randn({300, 64}, 1, dtype), w = randn({64, 48}, 2, dtype);
    expect_epilogue_matches_eager(bias_relu, x, w, randn({48}, 3, dtype));
  }
}

TEST(DotEpilogue, LargeProductSplitByRows) {
  const Tensor x = randn({1024, 512}, 4), w = randn({512, 256}, 5), b = randn({256}, 6);
  auto f = [](const Tensor& x, const Tensor& w, const Tensor& b) {
    return tanh(matmul(x, w) + b) * 2.0;
  };
  expect_epilogue_matches_eager(f, x, w, b);
}

TEST(DotEpilogue, ProductWithRowsEnoughForEveryBlockSplitByRows) {  // fewer rows than columns
  const Tensor x = randn({256, 128}, 13), w = randn({128, 512}, 14), b = randn({512}, 15);
  auto f = [](const Tensor& x, const Tensor& w, const Tensor& b) { return tanh(matmul(x, w) + b); };
  expect_epilogue_matches_eager(f, x, w, b);
}

TEST(DotEpilogue, WideProductSplitByColumns) {  // the epilogue runs after the whole GEMM
  const Tensor x = randn({40, 256}, 7), w = randn({256, 4096}, 8), b = randn({4096}, 9);
  expect_epilogue_matches_eager(bias_relu, x, w, b);
}

TEST(DotEpilogue, BatchedProductsOneMatrixABlock) {
  for (int64_t n : {48, 1100}) {  // libxsmm's blocks, then one GEMM per matrix
    const Tensor x = randn({8, 64, 32}, 10), w = randn({8, 32, n}, 11), b = randn({n}, 12);
    expect_epilogue_matches_eager(bias_relu, x, w, b);
  }
}

TEST(DotEpilogue, OuterProductsAndBatchInvariantProductsRunTheChainAfter) {
  auto f = [](const Tensor& u, const Tensor& v) { return exp(outer(u, v)) - 1.0; };
  expect_epilogue_matches_eager(f, randn({200}, 13), randn({300}, 14));
  set_batch_invariant(true);
  const Tensor x = randn({300, 64}, 15), w = randn({64, 48}, 16), b = randn({48}, 17);
  expect_epilogue_matches_eager(bias_relu, x, w, b);
  set_batch_invariant(false);
}

TEST(DotEpilogue, ChainValuesReadElsewhereAreOutputs) {
  // relu's mask leaves the chain too (a gradient reads it), and the product is read twice.
  auto f = [](const Tensor& x, const Tensor& w) {
    const Tensor z = matmul(x, w);
    const Tensor mask = z > 0.0;
    return std::vector<Tensor>{where(mask, z * z, zeros_like(z)), cast(mask, kFloat32)};
  };
  const Tensor x = randn({500, 32}, 18), w = randn({32, 40}, 19);
  const Graph g = compiled_graph(f, x, w);
  EXPECT_EQ(count(g, "dot_epilogue"), 1) << g;
  const auto got = compile(f)(x, w), want = f(x, w);
  ASSERT_EQ(got.size(), 2u);
  EXPECT_TRUE(same_bits(got[0], want[0]));
  EXPECT_TRUE(same_bits(got[1], want[1]));
}

TEST(DotEpilogue, AProductReadOutsideTheChainStaysAProduct) {
  auto f = [](const Tensor& x, const Tensor& w) {
    const Tensor z = matmul(x, w);
    return std::vector<Tensor>{relu(z), z};
  };
  const Graph g = compiled_graph(f, randn({100, 32}, 20), randn({32, 32}, 21));
  EXPECT_EQ(count(g, "dot_epilogue"), 0) << g;
  EXPECT_EQ(count(g, "dot_general"), 1) << g;
}

TEST(DotEpilogue, AProductWithTheIdentityLeavesItsOperandAlone) {
  // The kernel returns a view of w for eye @ w: the chain must not write its output over it.
  auto f = [](const Tensor& e, const Tensor& w) { return matmul(e, w) + 1.0; };
  const Tensor e = eye(256), w = randn({256, 256}, 22);
  const Tensor before = w.contiguous() + 0.0;
  const auto compiled = compile(f);
  for (int call = 0; call < 2; ++call) {
    EXPECT_TRUE(same_bits(compiled(e, w), before + 1.0));
    EXPECT_TRUE(same_bits(w, before));
  }
}

TEST(DotEpilogue, AChainOnATransposedProductViewMatchesEager) {
  // eye @ w^T is a transposed view of w: the chain reads it in its memory order.
  auto f = [](const Tensor& e, const Tensor& w, const Tensor& d) {
    return tanh(matmul(e, transpose(w, {1, 0})) * d);
  };
  const Tensor e = eye(256), w = randn({256, 256}, 29), d = randn({256}, 30);
  const Graph g = compiled_graph(f, e, w, d);
  EXPECT_EQ(count(g, "dot_epilogue"), 1) << g;
  EXPECT_TRUE(same_bits(compile(f)(e, w, d), f(e, w, d)));
}

TEST(DotEpilogue, SameBitsAtEveryThreadCount) {
  const Tensor x = randn({3000, 32}, 23), w = randn({32, 32}, 24), b = randn({32}, 25);
  const int threads = num_threads();
  set_num_threads(1);
  const Tensor one_thread = compile(bias_relu)(x, w, b);
  set_num_threads(2);
  EXPECT_TRUE(same_bits(compile(bias_relu)(x, w, b), one_thread));
  set_num_threads(threads);
}

TEST(DotEpilogue, FusedPassRangesCoverTheWholeRun) {
  // tanh(x + b) over (5, 37, 33) with b broadcast over the middle dim: rows of 33 that share
  // tiles, run in ranges that start and end mid-row, against the pass run whole.
  using kernels::FusedStep;
  kernels::FusedProgram program;
  program.input_types = {kFloat32, kFloat32};
  program.steps = {
      {FusedStep::Kind::Binary, uint8_t(kernels::BinaryOp::Add), kFloat32, kFloat32, {0, 1, -1}},
      {FusedStep::Kind::Unary, uint8_t(kernels::UnaryOp::Tanh), kFloat32, kFloat32, {2, -1, -1}}};
  program.outputs = {3};
  const Shape shape{5, 37, 33};
  const Tensor x = randn(shape, 26);
  const Tensor b = broadcast_to(reshape(randn({5, 33}, 27), {5, 1, 33}), shape);
  const Tensor whole = kernels::run_fused(program, shape, {x, b})[0];
  std::mt19937 rng(28);
  for (int trial = 0; trial < 5; ++trial) {
    const kernels::FusedPass pass(program, shape, {x, b});
    const int64_t numel = shape_numel(shape);
    for (int64_t at = 0; at < numel;) {
      const int64_t end = std::min<int64_t>(numel, at + 1 + int64_t(rng() % 3000));
      pass.run_elements(at, end);
      at = end;
    }
    EXPECT_TRUE(same_bits(pass.outputs()[0], whole));
  }
}

TEST(DotEpilogue, AConcatenateOfTheChainsValuesIsWrittenInPlace) {
  // An LSTM step's gradient: a product's chain whose values are joined along the last axis, each
  // block's rows written into their place in the joined output (rows apart), at every thread count.
  const Tensor x = randn({100, 128}, 30), w = randn({32, 128}, 31), c = randn({100, 32}, 32);
  auto f = [](const Tensor& x, const Tensor& w, const Tensor& c) {
    const Tensor p = matmul(x, transpose(w, {1, 0}));
    return std::make_tuple(concatenate({p * c, tanh(p), p - c}, 1), sigmoid(p) * c);
  };
  const Graph g = compiled_graph(f, x, w, c);
  EXPECT_EQ(count(g, "dot_epilogue"), 1) << g;
  EXPECT_EQ(count(g, "concatenate") + count(g, "fused_elementwise"), 0) << g;
  const int saved = num_threads();
  for (int threads : {1, 2, 3}) {
    set_num_threads(threads);
    const auto [joined, other] = compile(f)(x, w, c);
    const auto [want_joined, want_other] = f(x, w, c);
    EXPECT_TRUE(same_bits(joined, want_joined)) << threads;
    EXPECT_TRUE(same_bits(other, want_other)) << threads;
  }
  set_num_threads(saved);
}
