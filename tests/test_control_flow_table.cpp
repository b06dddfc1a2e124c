// Every control-flow construct under every transform, table-driven (as the op table is): each
// row is a per-example function of x (5,) float64 built around one construct, and the generic
// checks compare
// - vmap under each cond and loop strategy, compile(vmap) and nested vmap with the per-example
//   loop (strategies bit for bit with each other, since each lane computes the same ops);
// - grad with central finite differences of the eager function, jvp with vjp, and vmap(grad)
//   and compile(vmap(grad)) with the loop of grads.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <ostream>

#include "lanes/lanes.h"
#include "transforms/subgraphs.h"

namespace {

using lanes::DType;
using lanes::Shape;
using lanes::Tensor;
using Fn = std::function<Tensor(const Tensor&)>;

Tensor num(double v) { return lanes::scalar(v, DType::Float64); }

struct Row {
  const char* name;
  Fn f;  // (5,) float64 -> float64 tensor
};

void PrintTo(const Row& r, std::ostream* os) { *os << r.name; }

// A loop whose trip count depends on the example: doubles v until its norm passes 40.
Tensor grow(const Tensor& x) {
  using C = std::pair<Tensor, Tensor>;
  return lanes::while_loop(
             [](const C& c) {
               return logical_and(lanes::sum(c.first * c.first) < 1600.0, c.second < 30);
             },
             [](const C& c) { return C(c.first * 1.7 + lanes::sin(c.first) * 0.1, c.second + 1); },
             C(x, lanes::scalar(0, DType::Int32)))
      .first;
}

const std::vector<Row>& rows() {
  static const std::vector<Row> all = {
      {"cond",
       [](const Tensor& x) {
         return lanes::cond(
             x[0] > 0.0, [](const Tensor& v) { return lanes::exp(v) * v; },
             [](const Tensor& v) { return lanes::sin(v) * 2.0 + v[1]; }, x);
       }},
      {"cond_capture_and_int_operand",
       [](const Tensor& x) {
         const Tensor w = lanes::arange(5, DType::Float64) * 0.3;
         const Tensor k = lanes::cast(x[1] > 0.0, DType::Int32);
         return lanes::cond(
             x[2] > x[3],
             [&](const Tensor& v, const Tensor& i) {
               return v * w + x[0] * lanes::cast(i, DType::Float64);
             },
             [&](const Tensor& v, const Tensor&) { return lanes::tanh(v - w); }, x, k);
       }},
      {"switch_case",
       [](const Tensor& x) {
         const std::vector<Fn> branches{[](const Tensor& v) { return v * v; },
                                        [](const Tensor& v) { return lanes::cos(v); },
                                        [](const Tensor& v) { return v * 3.0 - 1.0; }};
         return lanes::switch_case(lanes::cast(lanes::floor(x[0] * 1.5 + 1.5), DType::Int32),
                                   branches, x);
       }},
      {"while", [](const Tensor& x) { return grow(x); }},
      {"while_in_cond",
       [](const Tensor& x) {
         return lanes::cond(
             x[4] > -0.3, [](const Tensor& v) { return grow(v); },
             [](const Tensor& v) { return v * -2.0; }, x);
       }},
      {"scan",
       [](const Tensor& x) {
         const Tensor w = lanes::reshape(lanes::arange(25, DType::Float64), {5, 5}) * 0.04 - 0.4;
         auto step = [&](const Tensor& h, const Tensor& xt) {
           const Tensor n = lanes::tanh(lanes::matmul(w, h) + xt);
           return std::make_pair(n, lanes::sum(n));
         };
         auto [h, ys] = lanes::scan(step, x, lanes::stack({x, x * 0.5, lanes::sin(x)}));
         return h + lanes::sum(ys);
       }},
      {"cond_in_scan_reverse",
       [](const Tensor& x) {
         auto step = [](const Tensor& c, const Tensor& xt) {
           const Tensor n = lanes::cond(
               xt > 0.0, [](const Tensor& a, const Tensor& b) { return a * b; },
               [](const Tensor& a, const Tensor& b) { return a - b; }, c, xt);
           return std::make_pair(n, n * 2.0);
         };
         lanes::ScanOptions o;
         o.reverse = true;
         auto [c, ys] = lanes::scan(step, x[0], x, o);
         return ys * c;
       }},
      {"fori_static_index",
       [](const Tensor& x) {
         return lanes::fori_loop(
             1, 5, [&](const Tensor& i, const Tensor& acc) { return acc * 0.5 + x[i] * x[i - 1]; },
             x[0]);
       }},
      {"fori_dynamic",
       [](const Tensor& x) {
         const Tensor hi = lanes::cast(x[0] > 0.0, DType::Int32) * 2 + 1;
         return lanes::fori_loop(
             lanes::scalar(0, DType::Int32), hi,
             [&](const Tensor&, const Tensor& acc) { return acc * x + 1.0; }, x * 0.5);
       }},
  };
  return all;
}

class ControlFlow : public ::testing::TestWithParam<Row> {};

Tensor batch_of(int64_t n, uint64_t seed) {
  return lanes::random::normal(lanes::random::key(seed), {n, 5}, DType::Float64);
}

Tensor loop_of(const Fn& f, const Tensor& xs) {
  std::vector<Tensor> out;
  for (int64_t b = 0; b < xs.shape(0); ++b) out.push_back(f(xs[b]));
  return lanes::stack(out);
}

void expect_equal(const Tensor& got, const Tensor& want, double tol, const std::string& what) {
  ASSERT_EQ(got.shape(), want.shape()) << what;
  const auto g = got.to_vector<double>(), w = want.to_vector<double>();
  for (size_t i = 0; i < g.size(); ++i) {
    if (tol == 0)
      ASSERT_EQ(g[i], w[i]) << what << " element " << i;
    else
      ASSERT_NEAR(g[i], w[i], tol * (1 + std::abs(w[i]))) << what << " element " << i;
  }
}

TEST_P(ControlFlow, VmapEveryStrategyCompileAndNestedMatchTheLoop) {
  const Fn& f = GetParam().f;
  const Tensor xs = batch_of(12, 7);
  const Tensor want = loop_of(f, xs);
  Tensor first;
  for (auto c :
       {lanes::CondStrategy::Select, lanes::CondStrategy::Partition, lanes::CondStrategy::Auto})
    for (auto l :
         {lanes::LoopStrategy::Mask, lanes::LoopStrategy::Compact, lanes::LoopStrategy::Auto}) {
      if (c == lanes::CondStrategy::Select && std::string(GetParam().name) == "while_in_cond")
        continue;  // select runs the loop on lanes that did not take its branch: allowed to diverge
      lanes::VmapOptions o;
      o.cond = c;
      o.loop = l;
      const auto v = lanes::vmap(f, 0, 0, o);
      const Tensor y = v(xs);
      expect_equal(y, want, 1e-13, "vmap");
      if (!first.defined()) first = y;
      expect_equal(y, first, 0, "strategies bit for bit");
      expect_equal(lanes::compile(v)(xs), want, 1e-13, "compile(vmap)");
    }
  // Nested: a (3, 4) batch of examples.
  const Tensor nested = lanes::vmap(lanes::vmap(f))(lanes::reshape(xs, {3, 4, 5}));
  expect_equal(lanes::reshape(nested, want.shape()), want, 1e-13, "vmap(vmap)");
}

TEST_P(ControlFlow, GradMatchesFiniteDifferencesAndJvpMatchesVjp) {
  const Fn& f = GetParam().f;
  auto loss = [&](const Tensor& x) { return lanes::sum(lanes::sin(f(x))); };
  const Tensor xs = batch_of(4, 11);
  for (int64_t b = 0; b < 4; ++b) {
    const Tensor x = xs[b];
    const Tensor g = lanes::grad(loss)(x);
    const auto xv = x.to_vector<double>(), gv = g.to_vector<double>();
    const double h = 1e-6;
    for (int i = 0; i < 5; ++i) {
      auto a = xv, c = xv;
      a[i] += h;
      c[i] -= h;
      const double fd = (loss(lanes::tensor(a, {5})).item<double>() -
                         loss(lanes::tensor(c, {5})).item<double>()) /
                        (2 * h);
      EXPECT_NEAR(gv[i], fd, 1e-6 * (1 + std::abs(fd))) << "example " << b << " d/dx" << i;
    }
    const Tensor v = lanes::random::normal(lanes::random::key(20 + b), {5}, DType::Float64);
    const double dir =
        lanes::jvp(loss, std::make_tuple(x), std::make_tuple(v)).second.item<double>();
    EXPECT_NEAR(dir, lanes::sum(g * v).item<double>(), 1e-10 * (1 + std::abs(dir))) << b;
  }
  const Tensor want = loop_of(lanes::grad(loss), xs);
  for (auto l : {lanes::LoopStrategy::Mask, lanes::LoopStrategy::Compact}) {
    lanes::VmapOptions o;
    o.loop = l;
    const auto per_example = lanes::vmap(lanes::grad(loss), 0, 0, o);
    expect_equal(per_example(xs), want, 1e-12, "vmap(grad)");
    expect_equal(lanes::compile(per_example)(xs), want, 1e-12, "compile(vmap(grad))");
  }
}

INSTANTIATE_TEST_SUITE_P(Constructs, ControlFlow, ::testing::ValuesIn(rows()),
                         [](const auto& info) { return std::string(info.param.name); });

// ---- compiled bodies
// -----------------------------------------------------------------------------

// What depends on a loop's consts alone is computed once, not per iteration.
TEST(LoopBody, HoistsWhatDependsOnTheConstsAlone) {
  lanes::Graph g = lanes::make_graph([](const Tensor& c, const Tensor& w) {
    return c * lanes::exp(w * 2.0);  // exp(w * 2) is loop-invariant
  })(num(1), num(2));
  const auto s = lanes::detail::split_invariant(g, {false, true});
  ASSERT_NE(s.pre, nullptr);
  EXPECT_EQ(s.main->nodes.size(), 1u);  // the multiply by the carry
  EXPECT_EQ(s.pre->outputs.size(), 1u);
  const lanes::detail::LoopBody body(std::make_shared<const lanes::Graph>(g), {false, true});
  const auto hoisted = body.start({num(1), num(0.5)});
  EXPECT_DOUBLE_EQ(body.step({num(3), num(0.5)}, hoisted)[0].item<double>(), 3 * std::exp(1.0));
}

}  // namespace
