// Custom rules consistent with f's true derivative, table-driven as test_control_flow_table.cpp
// is: every row under every transform.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <ostream>

#include "custom_rules_common.h"

namespace {

using namespace custom_test;

// As tests/test_control_flow_table.cpp does for control flow: each row is a per-example function
// of x (5,) float64 built around custom rules whose derivatives agree with f's, so the generic
// checks compare vmap (each strategy), compile(vmap) and nested vmap with the per-example loop,
// grad with central finite differences, jvp with vjp, jacfwd with jacrev, and vmap(grad) and
// compile(vmap(grad)) with the loop of grads.

using Fn = std::function<Tensor(const Tensor&)>;
struct Row {
  const char* name;
  Fn f;
};
void PrintTo(const Row& r, std::ostream* os) { *os << r.name; }

// tanh(x) * 2 with a hand-written vjp that saves tanh(x).
const auto tanh2 = lanes::custom_vjp([](const Tensor& x) { return lanes::tanh(x) * 2.0; },
                                     [](const Tensor& x) {
                                       const Tensor t = lanes::tanh(x);
                                       return std::make_pair(t * 2.0, std::make_tuple(t));
                                     },
                                     [](const std::tuple<Tensor>& r, const Tensor& ct) {
                                       const Tensor& t = std::get<0>(r);
                                       return std::make_tuple(ct * (1.0 - t * t) * 2.0);
                                     });

// Elementwise x* = cos(a x*) for a vector a, and its implicit vjp (as fixed_point, with the
// loops running until every element has converged).
Tensor fixed_point_vec_iterate(const Tensor& a) {
  using C = std::tuple<Tensor, Tensor>;
  return std::get<0>(
      lanes::while_loop([](const C& c) { return lanes::max(std::get<1>(c)) > 1e-14; },
                        [a](const C& c) {
                          const Tensor next = lanes::cos(a * std::get<0>(c));
                          return C(next, lanes::abs(next - std::get<0>(c)));
                        },
                        C(lanes::zeros_like(a), lanes::ones_like(a))));
}
const auto fixed_point_vec = lanes::custom_vjp(
    fixed_point_vec_iterate,
    [](const Tensor& a) {
      const Tensor x = fixed_point_vec_iterate(a);
      return std::make_pair(x, std::make_tuple(a, x));
    },
    [](const std::tuple<Tensor, Tensor>& res, const Tensor& ct) {
      const auto& [a, x] = res;
      const Tensor s = lanes::sin(a * x);
      // The elementwise adjoint in closed form: u = ct / (1 - df/dx).
      return std::make_tuple(ct / (1.0 + a * s) * (-x * s));
    });

// Trees without the doubling of affine: (a * b + c, sum(a) * c) for p = (a, b) and a scalar c,
// residuals in a map.
const auto mul_add = lanes::custom_vjp(
    [](const std::pair<Tensor, Tensor>& p, const Tensor& c) {
      return std::make_tuple(p.first * p.second + c, lanes::sum(p.first) * c);
    },
    [](const std::pair<Tensor, Tensor>& p, const Tensor& c) {
      return std::make_pair(
          std::make_tuple(p.first * p.second + c, lanes::sum(p.first) * c),
          std::map<std::string, Tensor>{{"a", p.first}, {"b", p.second}, {"c", c}});
    },
    [](const std::map<std::string, Tensor>& r, const std::tuple<Tensor, Tensor>& ct) {
      const auto& [cy, cs] = ct;
      const Tensor &a = r.at("a"), &b = r.at("b"), &c = r.at("c");
      return std::make_tuple(std::make_pair(cy * b + cs * c, cy * a),
                             lanes::sum(cy) + cs * lanes::sum(a));
    });

// A custom_vjp around the custom_jvp softplus, with the true derivative as its bwd.
const auto softplus_vjp = lanes::custom_vjp(
    [](const Tensor& x) { return softplus(x); },
    [](const Tensor& x) { return std::make_pair(softplus(x), std::make_tuple(lanes::sigmoid(x))); },
    [](const std::tuple<Tensor>& r, const Tensor& ct) {
      return std::make_tuple(ct * std::get<0>(r));
    });

const std::vector<Row>& table() {
  static const std::vector<Row> all = {
      {"custom_jvp_softplus", [](const Tensor& x) { return softplus(x * 3.0) * x[0]; }},
      {"custom_vjp_saving_a_residual", [](const Tensor& x) { return tanh2(x) * x; }},
      {"custom_vjp_captured_weight",
       [](const Tensor& x) {
         const Tensor w = lanes::reshape(lanes::arange(25, DType::Float64), {5, 5}) * 0.04 - 0.4;
         const auto apply_w = lanes::custom_vjp(
             [w](const Tensor& v) { return lanes::matmul(w, v); },
             [w](const Tensor& v) { return std::make_pair(lanes::matmul(w, v), std::tuple<>{}); },
             [w](const std::tuple<>&, const Tensor& ct) {
               return std::make_tuple(lanes::matmul(lanes::transpose(w), ct));
             });
         return lanes::sin(apply_w(x));
       }},
      {"custom_vjp_trees",
       [](const Tensor& x) {
         const auto [y, s] = mul_add(std::make_pair(x * 0.5, lanes::cos(x)), x[1]);
         return y * s;
       }},
      {"custom_vmap_rule", [](const Tensor& x) { return normalize(lanes::exp(x)) * x; }},
      {"custom_vmap_two_args", [](const Tensor& x) { return scale_by(x, lanes::sin(x)); }},
      {"fixed_point", [](const Tensor& x) { return fixed_point_vec(lanes::tanh(x) * 0.3 + 0.5); }},
      {"custom_jvp_in_cond",
       [](const Tensor& x) {
         return lanes::cond(
             x[0] > 0.0, [](const Tensor& v) { return softplus(v) * v; },
             [](const Tensor& v) { return tanh2(v) + 1.0; }, x);
       }},
      {"custom_vjp_in_scan",
       [](const Tensor& x) {
         auto step = [](const Tensor& h, const Tensor& xt) {
           const Tensor n = tanh2(h * 0.7 + xt);
           return std::make_pair(n, lanes::sum(n));
         };
         auto [h, ys] = lanes::scan(step, x, lanes::stack({x, x * 0.5, lanes::sin(x)}));
         return h + lanes::sum(ys);
       }},
      {"custom_vmap_in_while",
       [](const Tensor& x) {
         using C = std::tuple<Tensor, Tensor>;
         const Tensor n = lanes::cast(x[0] > 0.0, DType::Int32) * 2 + 1;
         return std::get<1>(lanes::while_loop(
             [n](const C& c) { return std::get<0>(c) < n; },
             [](const C& c) {
               return C(std::get<0>(c) + 1, normalize(lanes::exp(std::get<1>(c))) * 3.0);
             },
             C(lanes::scalar(0, DType::Int32), x)));
       }},
      {"custom_vjp_of_custom_jvp", [](const Tensor& x) { return softplus_vjp(x * 3.0) * x; }},
  };
  return all;
}

class CustomTable : public ::testing::TestWithParam<Row> {};

Tensor batch_of(int64_t n, uint64_t seed) {
  return lanes::random::normal(lanes::random::key(seed), {n, 5}, DType::Float64);
}

Tensor loop_of(const Fn& f, const Tensor& xs) {
  std::vector<Tensor> out;
  for (int64_t b = 0; b < xs.shape(0); ++b) out.push_back(f(xs[b]));
  return lanes::stack(out);
}

void expect_close(const Tensor& got, const Tensor& want, double tol, const std::string& what) {
  ASSERT_EQ(got.shape(), want.shape()) << what;
  const auto g = values(got), w = values(want);
  for (size_t i = 0; i < g.size(); ++i)
    ASSERT_NEAR(g[i], w[i], tol * (1 + std::abs(w[i]))) << what << " element " << i;
}

TEST_P(CustomTable, VmapEveryStrategyCompileAndNestedMatchTheLoop) {
  const Fn& f = GetParam().f;
  const Tensor xs = batch_of(12, 7);
  const Tensor want = loop_of(f, xs);
  for (auto c : {lanes::CondStrategy::Select, lanes::CondStrategy::Partition})
    for (auto l : {lanes::LoopStrategy::Mask, lanes::LoopStrategy::Compact}) {
      lanes::VmapOptions o;
      o.cond = c;
      o.loop = l;
      const auto v = lanes::vmap(f, 0, 0, o);
      expect_close(v(xs), want, 1e-13, "vmap");
      expect_close(lanes::compile(v)(xs), want, 1e-13, "compile(vmap)");
    }
  const Tensor nested = lanes::vmap(lanes::vmap(f))(lanes::reshape(xs, {3, 4, 5}));
  expect_close(lanes::reshape(nested, want.shape()), want, 1e-13, "vmap(vmap)");
}

TEST_P(CustomTable, DerivativesMatchFiniteDifferencesAndEachOther) {
  const Fn& f = GetParam().f;
  auto loss = [&](const Tensor& x) { return lanes::sum(lanes::sin(f(x))); };
  const Tensor xs = batch_of(4, 11);
  for (int64_t b = 0; b < 4; ++b) {
    const Tensor x = xs[b];
    const Tensor g = lanes::grad(loss)(x);
    const auto xv = values(x), gv = values(g);
    const double h = 1e-6;
    for (int i = 0; i < 5; ++i) {
      auto a = xv, c = xv;
      a[i] += h;
      c[i] -= h;
      const double fd = (loss(f64(a)).item<double>() - loss(f64(c)).item<double>()) / (2 * h);
      EXPECT_NEAR(gv[i], fd, 1e-6 * (1 + std::abs(fd))) << "example " << b << " d/dx" << i;
    }
    const Tensor v = lanes::random::normal(lanes::random::key(20 + b), {5}, DType::Float64);
    const double dir =
        lanes::jvp(loss, std::make_tuple(x), std::make_tuple(v)).second.item<double>();
    EXPECT_NEAR(dir, lanes::sum(g * v).item<double>(), 1e-9 * (1 + std::abs(dir))) << b;
    expect_close(lanes::jacfwd(f)(x), lanes::jacrev(f)(x), 1e-9, "jacfwd vs jacrev");
  }
  const Tensor want = loop_of(lanes::grad(loss), xs);
  for (auto l : {lanes::LoopStrategy::Mask, lanes::LoopStrategy::Compact}) {
    lanes::VmapOptions o;
    o.loop = l;
    const auto per_example = lanes::vmap(lanes::grad(loss), 0, 0, o);
    expect_close(per_example(xs), want, 1e-12, "vmap(grad)");
    expect_close(lanes::compile(per_example)(xs), want, 1e-12, "compile(vmap(grad))");
  }
}

INSTANTIATE_TEST_SUITE_P(Rows, CustomTable, ::testing::ValuesIn(table()),
                         [](const auto& info) { return std::string(info.param.name); });

}  // namespace
