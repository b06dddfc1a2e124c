// Derivatives over the op table, in float64: for every differentiable op and every float input,
// jvp agrees with central finite differences, vjp agrees with jvp (<v, J u> both ways), and the
// per-example gradients from vmap(vjp) equal the loop, also for an empty batch.
#include <gtest/gtest.h>

#include <cmath>

#include "op_table.h"

using namespace optable;

namespace {

double dot_all(const Tensor& a, const Tensor& b) {
  const auto x = a.to_vector<double>(), y = b.to_vector<double>();
  double s = 0;
  for (size_t i = 0; i < x.size(); ++i) s += x[i] * y[i];
  return s;
}

double max_abs(const Tensor& a) {
  double m = 0;
  for (double v : a.to_vector<double>()) m = std::max(m, std::abs(v));
  return m;
}

Tensor random_like(const Tensor& x, Gen& gen) {
  return gen.uniform(x.shape(), DType::Float64, -1.0, 1.0);
}

class GradOps : public ::testing::TestWithParam<std::string> {
 protected:
  const OpRow& row() const {
    for (const OpRow& r : op_table())
      if (r.name == GetParam()) return r;
    throw std::logic_error("no row " + GetParam());
  }
};

TEST_P(GradOps, JvpMatchesFiniteDifferencesAndVjpMatchesJvp) {
  const OpRow& r = row();
  Gen gen;
  const std::vector<Tensor> inputs = r.sample(DType::Float64, gen);
  for (size_t k = 0; k < inputs.size(); ++k) {
    if (inputs[k].dtype() != DType::Float64) continue;  // indices, labels: not differentiated
    SCOPED_TRACE("input " + std::to_string(k));
    auto f = [&](const Tensor& x) {
      std::vector<Tensor> args = inputs;
      args[k] = x;
      return r.call(args);
    };
    const Tensor x = inputs[k];
    const Tensor u = random_like(x, gen);
    auto [y, jvp_u] = lanes::jvp(f, std::make_tuple(x), std::make_tuple(u));
    ASSERT_EQ(jvp_u.shape(), y.shape());
    // Central differences: O(eps^2) truncation, O(1e-16 / eps) rounding.
    const double eps = 1e-6;
    const Tensor fd = (f(x + u * eps) - f(x - u * eps)) / (2 * eps);
    const auto got = jvp_u.to_vector<double>(), want = fd.to_vector<double>();
    const double scale = 1 + max_abs(fd);
    for (size_t i = 0; i < got.size(); ++i)
      ASSERT_NEAR(got[i], want[i], 1e-5 * scale) << "jvp element " << i;
    // <v, J u> from reverse mode equals it from forward mode.
    if (!lanes::is_floating(y.dtype())) continue;
    const Tensor v = random_like(y, gen);
    auto [y2, back] = lanes::vjp(f, x);
    const Tensor g = std::get<0>(back(v));
    ASSERT_EQ(g.shape(), x.shape());
    const double lhs = dot_all(v, jvp_u), rhs = dot_all(g, u);
    EXPECT_NEAR(lhs, rhs, 1e-9 * (1 + std::abs(lhs))) << "vjp disagrees with jvp";
  }
}

// Per-example gradients: vmap of vjp over examples equals a loop of vjp.
TEST_P(GradOps, PerExampleVjpUnderVmapMatchesLoop) {
  const OpRow& r = row();
  Gen gen;
  std::vector<std::vector<Tensor>> ex;
  for (int b = 0; b < 3; ++b) ex.push_back(r.sample(DType::Float64, gen));
  for (size_t k = 0; k < ex[0].size(); ++k) {
    if (ex[0][k].dtype() != DType::Float64) continue;
    SCOPED_TRACE("input " + std::to_string(k));
    std::vector<Tensor> loop, xs, vs;
    for (int b = 0; b < 3; ++b) {
      auto f = [&](const Tensor& x) {
        std::vector<Tensor> args = ex[b];
        args[k] = x;
        return r.call(args);
      };
      auto [y, back] = lanes::vjp(f, ex[b][k]);
      if (!lanes::is_floating(y.dtype())) return;
      const Tensor v = random_like(y, gen);
      vs.push_back(v);
      xs.push_back(ex[b][k]);
      loop.push_back(std::get<0>(back(v)));
    }
    // The other inputs are mapped too (each example has its own).
    std::vector<Tensor> stacked;
    for (size_t j = 0; j < ex[0].size(); ++j)
      stacked.push_back(lanes::stack({ex[0][j], ex[1][j], ex[2][j]}, 0));
    auto per_example = [&](const std::vector<Tensor>& args, const Tensor& v) {
      auto f = [&](const Tensor& x) {
        std::vector<Tensor> a = args;
        a[k] = x;
        return r.call(a);
      };
      return std::get<0>(lanes::vjp(f, args[k]).second(v));
    };
    const Tensor got = lanes::vmap(per_example)(stacked, lanes::stack(vs, 0));
    const Tensor want = lanes::stack(loop, 0);
    const auto g = got.to_vector<double>(), w = want.to_vector<double>();
    ASSERT_EQ(got.shape(), want.shape());
    for (size_t i = 0; i < g.size(); ++i) ASSERT_NEAR(g[i], w[i], 1e-10 * (1 + std::abs(w[i])));
  }
}

// x with a batch of none in front: shape (0, x.shape...).
Tensor no_examples(const Tensor& x) {
  Shape s = x.shape();
  s.insert(s.begin(), 0);
  return lanes::zeros(s, x.dtype());
}

// Per-example gradients of an empty batch (B = 0): vmap of vjp, vmap of grad of the sum of the
// output, and grad of the sum of vmap give an empty gradient of the input's type, with every
// input mapped.
TEST_P(GradOps, PerExampleGradientsOfAnEmptyBatchAreEmpty) {
  const OpRow& r = row();
  Gen gen;
  const std::vector<Tensor> example = r.sample(DType::Float64, gen);
  const Tensor y = r.call(example);
  if (!lanes::is_floating(y.dtype())) GTEST_SKIP() << "integer output";
  std::vector<Tensor> stacked;
  for (const Tensor& x : example) stacked.push_back(no_examples(x));
  for (size_t k = 0; k < example.size(); ++k) {
    if (example[k].dtype() != DType::Float64) continue;
    SCOPED_TRACE("input " + std::to_string(k));
    auto with_k = [&r, k](std::vector<Tensor> args, const Tensor& x) {
      args[k] = x;
      return r.call(args);
    };
    auto per_example = [&](const std::vector<Tensor>& args, const Tensor& v) {
      auto f = [&](const Tensor& x) { return with_k(args, x); };
      return std::get<0>(lanes::vjp(f, args[k]).second(v));
    };
    auto per_example_grad = [&](const std::vector<Tensor>& args) {
      return lanes::grad([&](const Tensor& x) { return lanes::sum(with_k(args, x)); })(args[k]);
    };
    // And the other order: the gradient of the batched function's sum (grad of vmap).
    auto batched_loss = [&](const Tensor& xs) {
      std::vector<Tensor> args = stacked;
      args[k] = xs;
      return lanes::sum(lanes::vmap(r.call)(args));
    };
    Tensor got, got_grad, got_outer;
    ASSERT_NO_THROW(got = lanes::vmap(per_example)(stacked, no_examples(y)));
    ASSERT_NO_THROW(got_grad = lanes::vmap(per_example_grad)(stacked));
    ASSERT_NO_THROW(got_outer = lanes::grad(batched_loss)(stacked[k]));
    for (const Tensor& g : {got, got_grad, got_outer}) {
      EXPECT_EQ(g.shape(), no_examples(example[k]).shape());
      EXPECT_EQ(g.dtype(), DType::Float64);
    }
  }
}

std::vector<std::string> differentiable_rows() {
  std::vector<std::string> names;
  for (const OpRow& r : op_table())
    if (r.differentiable) names.push_back(r.name);
  return names;
}

INSTANTIATE_TEST_SUITE_P(Ops, GradOps, ::testing::ValuesIn(differentiable_rows()),
                         [](const auto& info) { return info.param; });

}  // namespace
