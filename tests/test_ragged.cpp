// vmap over Ragged arguments (lanes/ragged.h) against the per-example loop in float64.
#include <gtest/gtest.h>

#include <random>

#include "lanes/lanes.h"

using namespace lanes;

namespace {

// A float64 example of shape `shape` with values from `seed`.
Tensor example(Shape shape, uint32_t seed) {
  std::mt19937 gen(seed);
  std::normal_distribution<double> normal;
  std::vector<double> v(size_t(shape_numel(shape)));
  for (double& x : v) x = normal(gen);
  return tensor(v, shape);
}

Ragged sequences(const std::vector<int64_t>& lengths, int64_t d, uint32_t seed) {
  std::vector<Tensor> xs;
  for (size_t i = 0; i < lengths.size(); ++i) xs.push_back(example({lengths[i], d}, seed + i));
  return Ragged(xs);
}

void expect_same(const Tensor& got, const Tensor& want) {
  ASSERT_EQ(got.shape(), want.shape());
  ASSERT_EQ(got.dtype(), want.dtype());
  const std::vector<double> g = got.to_vector<double>(), w = want.to_vector<double>();
  for (size_t i = 0; i < g.size(); ++i) EXPECT_NEAR(g[i], w[i], 1e-12 * (1 + std::abs(w[i])));
}

void expect_error(const std::function<void()>& f, const std::vector<std::string>& parts) {
  try {
    f();
    FAIL() << "no error";
  } catch (const Error& e) {
    for (const std::string& p : parts)
      EXPECT_NE(std::string(e.what()).find(p), std::string::npos) << e.what();
  }
}

}  // namespace

TEST(Ragged, HoldsExamplesOfOneDtypeAndRank) {
  const Ragged r = sequences({3, 0, 5, 1}, 2, 1);
  EXPECT_EQ(r.size(), 4);
  EXPECT_EQ(r[2].shape(), (Shape{5, 2}));
  EXPECT_EQ(r[-1].shape(), (Shape{1, 2}));
  EXPECT_EQ(r.lengths().to_vector<int64_t>(), (std::vector<int64_t>{3, 0, 5, 1}));
  EXPECT_EQ(r.lengths(1).to_vector<int64_t>(), (std::vector<int64_t>{2, 2, 2, 2}));
  const Tensor p = r.padded(-1);
  EXPECT_EQ(p.shape(), (Shape{4, 5, 2}));
  expect_same(p[0][1], r[0][1]);
  EXPECT_EQ(p[1].to_vector<double>(), std::vector<double>(10, -1.0));
  expect_error([&] { r.stacked(); }, {"example 0 has shape (3, 2)", "example 1 has shape (0, 2)"});
  expect_error([&] { (void)r[4]; }, {"example 4 out of range"});
  expect_error([] { Ragged({ones({2}), ones({2, 1})}); }, {"example 1 has rank 2"});
  expect_error([] { Ragged({ones({2}), ones({2}, kFloat64)}); }, {"example 1 is float64"});
}

TEST(Ragged, FromLengthsSplitsPackedValues) {
  const Tensor values = reshape(arange(12, kFloat64), {6, 2});
  const Ragged r = Ragged::from_lengths(values, tensor(std::vector<int64_t>{2, 0, 4}));
  ASSERT_EQ(r.size(), 3);
  expect_same(r[0], slice_axis(values, 0, 0, 2));
  EXPECT_EQ(r[1].shape(), (Shape{0, 2}));
  expect_same(r[2], slice_axis(values, 0, 2, 6));
  expect_error(
      [&] {
        Ragged::from_lengths(values, tensor(std::vector<int64_t>{2, 3}));
      },
      {"sum to 5", "6 rows"});
  expect_error(
      [&] {
        Ragged::from_lengths(values, tensor(std::vector<int64_t>{4, 3}));
      },
      {"past the 6 rows", "example 1"});
}

TEST(RaggedVmap, EqualsThePerExampleLoop) {
  const Ragged xs = sequences({4, 1, 4, 0, 7, 1, 4}, 3, 10);
  const Tensor w = example({3, 2}, 99);
  // Per-example outputs of one shape stack into a Tensor; of varying shape stay Ragged.
  auto pooled = [&](const Tensor& x) { return sum(tanh(matmul(x, w)), Axes{0}); };
  auto hidden = [&](const Tensor& x) { return tanh(matmul(x, w)) * 2.0; };
  const Tensor p = vmap(pooled)(xs);
  const Ragged h = vmap(hidden)(xs);
  ASSERT_EQ(p.shape(), (Shape{7, 2}));
  ASSERT_EQ(h.size(), 7);
  for (int64_t i = 0; i < xs.size(); ++i) {
    expect_same(p[i], pooled(xs[i]));
    expect_same(h[i], hidden(xs[i]));
  }
}

TEST(RaggedVmap, MixesMappedAndSharedArgumentsAndTrees) {
  const Ragged xs = sequences({2, 5, 2, 3}, 2, 20);
  const Tensor scales = example({4}, 5), bias = example({2}, 6);
  auto f = [](const std::tuple<Tensor, Tensor>& xb, const Tensor& s) {
    const auto& [x, b] = xb;
    return std::make_pair(sum(x, Axes{0}) * s + b, x * s);
  };
  const auto [summed, scaled] = vmap(f, in_axes({0, none}, 0))(std::make_tuple(xs, bias), scales);
  for (int64_t i = 0; i < xs.size(); ++i) {
    const auto [s, x] = f(std::make_tuple(xs[i], bias), scales[i]);
    expect_same(Tensor(summed)[i], s);
    expect_same(scaled[i], x);
  }
}

TEST(RaggedVmap, PerExampleGradientsEqualTheLoop) {
  const Ragged xs = sequences({3, 6, 1, 6, 3}, 4, 30);
  const Tensor w = example({4}, 7);
  auto loss = [](const Tensor& w, const Tensor& x) { return sum(square(tanh(matmul(x, w)))); };
  const Tensor g = vmap(grad(loss), in_axes(none, 0))(w, xs);
  ASSERT_EQ(g.shape(), (Shape{5, 4}));
  for (int64_t i = 0; i < xs.size(); ++i) expect_same(g[i], grad(loss)(w, xs[i]));
}

TEST(RaggedVmap, EdgeSizes) {
  auto f = [](const Tensor& x) { return sum(x, Axes{0}); };
  // One example; all of one length (one group); lengths 0 and 1.
  for (const std::vector<int64_t>& lengths :
       std::vector<std::vector<int64_t>>{{3}, {2, 2, 2}, {0, 1, 0, 1}}) {
    const Ragged xs = sequences(lengths, 2, 40);
    const Tensor s = vmap(f)(xs);
    for (int64_t i = 0; i < xs.size(); ++i) expect_same(s[i], f(xs[i]));
  }
  // No examples: an empty result.
  const Ragged none_yet = vmap(f)(Ragged());
  EXPECT_EQ(none_yet.size(), 0);
}

TEST(RaggedVmap, BadInputIsAnError) {
  const Ragged xs = sequences({2, 3}, 2, 50), ys = sequences({2, 3, 1}, 2, 60);
  auto add = [](const Tensor& a, const Tensor& b) { return sum(a) + sum(b); };
  expect_error([&] { (void)vmap(add)(xs, ys); }, {"Ragged arguments with 2 and 3 examples"});
  expect_error([&] { (void)vmap(add, in_axes(1, 0))(xs, xs); },
               {"argument 0", "Ragged", "in_axes must be 0, got 1"});
  expect_error(
      [&] {
        (void)vmap(add, in_axes(0, 0))(xs, ones({3, 2}));
      },
      {"argument 1 has 3 examples", "Ragged arguments have 2"});
  auto varying = [](const Tensor& x) { return x * 2.0; };
  expect_error([&] { Tensor t = vmap(varying)(xs); }, {"do not stack"});
}
