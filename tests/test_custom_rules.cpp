// Custom rules (lanes/custom.h) under every transform, against independent references: float64
// C++ formulas, per-example loops, finite differences and hand-derived derivatives. custom_jvp,
// custom_vmap, nesting and errors here; custom_vjp in test_custom_vjp.cpp; the table of rows
// under every transform in test_custom_table.cpp.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <sstream>

#include "custom_rules_common.h"

namespace {

using namespace custom_test;

// ---- custom_jvp -------------------------------------------------------------------------------

auto sum_softplus = [](const Tensor& x) { return lanes::sum(softplus(x)); };

TEST(CustomJvp, SoftplusValueAndGradientStayFinite) {
  const Tensor x = f64(kXs);
  expect_near(softplus(x), map_ref(softplus_ref, kXs), 1e-12, "value");
  // The problem the rule solves: the naive derivative at 1000 is NaN.
  const auto naive =
      values(lanes::grad([](const Tensor& v) { return lanes::sum(softplus_naive(v)); })(x));
  EXPECT_FALSE(std::isfinite(naive.back())) << naive.back();
  const Tensor g = lanes::grad(sum_softplus)(x);
  expect_near(g, map_ref(sigmoid_ref, kXs), 1e-12, "grad");
  EXPECT_EQ(values(g).back(), 1.0);
  // grad of a scalar function at 1000, exactly as the issue asks.
  EXPECT_EQ(lanes::grad([](const Tensor& v) { return softplus(v); })(
                lanes::scalar(1000.0, DType::Float64))
                .item<double>(),
            1.0);
}

TEST(CustomJvp, ForwardModeRunsTheRule) {
  const Tensor x = f64(kXs), t = f64({1, 2, 3, 4, 5, 6, 7, 8});
  auto [y, dy] = lanes::jvp(softplus, std::make_tuple(x), std::make_tuple(t));
  expect_near(y, map_ref(softplus_ref, kXs), 1e-12, "jvp primal");
  std::vector<double> want;
  for (size_t i = 0; i < kXs.size(); ++i) want.push_back((i + 1) * sigmoid_ref(kXs[i]));
  expect_near(dy, want, 1e-12, "jvp tangent");
  expect_near(lanes::jacfwd(sum_softplus)(x), map_ref(sigmoid_ref, kXs), 1e-12, "jacfwd");
}

TEST(CustomJvp, VmapOfGradAndGradOfVmapAndCompile) {
  auto one = [](const Tensor& v) { return softplus(v); };
  const Tensor x = f64(kXs);
  const std::vector<double> want = map_ref(sigmoid_ref, kXs);
  expect_near(lanes::vmap(lanes::grad(one))(x), want, 1e-12, "vmap(grad)");
  expect_near(lanes::compile(lanes::vmap(lanes::grad(one)))(x), want, 1e-12, "compile(vmap(grad))");
  auto total = [&](const Tensor& v) { return lanes::sum(lanes::vmap(one)(v)); };
  expect_near(lanes::grad(total)(x), want, 1e-12, "grad(vmap)");
  expect_near(lanes::compile(lanes::grad(total))(x), want, 1e-12, "compile(grad(vmap))");
  expect_near(lanes::compile(softplus)(x), map_ref(softplus_ref, kXs), 1e-12, "compile");
}

TEST(CustomJvp, HessianIsFinite) {
  const Tensor x = f64(kXs);
  const auto h = values(lanes::hessian(sum_softplus)(x));
  const size_t n = kXs.size();
  for (size_t i = 0; i < n; ++i)
    for (size_t j = 0; j < n; ++j) {
      const double s = sigmoid_ref(kXs[i]);
      const double want = i == j ? s * (1 - s) : 0.0;
      EXPECT_TRUE(std::isfinite(h[i * n + j])) << i << "," << j;
      EXPECT_NEAR(h[i * n + j], want, 1e-12) << i << "," << j;
    }
  // vmap of the second derivative of the scalar function: the same diagonal.
  auto d2 = lanes::vmap(lanes::grad(lanes::grad([](const Tensor& v) { return softplus(v); })));
  std::vector<double> diag;
  for (double v : kXs) diag.push_back(sigmoid_ref(v) * (1 - sigmoid_ref(v)));
  expect_near(d2(x), diag, 1e-12, "vmap(grad(grad))");
}

// ---- custom_vmap --------------------------------------------------------------------------------

TEST(CustomVmap, RuleRunsAndEqualsTheLoop) {
  const Tensor xs = stacked(kRows);
  const std::vector<double> want = normalized_ref(kRows);
  normalize_rule_calls = 0;
  expect_near(lanes::vmap(normalize)(xs), want, 1e-14, "vmap");
  EXPECT_GE(normalize_rule_calls, 1);
  // The per-example loop (no vmap: f itself runs).
  std::vector<double> loop;
  for (size_t i = 0; i < kRows.size(); ++i) {
    const auto v = values(normalize(f64(kRows[i])));
    loop.insert(loop.end(), v.begin(), v.end());
  }
  expect_near(lanes::vmap(normalize)(xs), loop, 1e-14, "vmap vs loop");
  expect_near(lanes::compile(lanes::vmap(normalize))(xs), want, 1e-14, "compile(vmap)");
  expect_near(lanes::vmap(lanes::compile(normalize))(xs), want, 1e-14, "vmap(compile)");
}

TEST(CustomVmap, ExplainNamesTheRule) {
  const Tensor xs = stacked(kRows);
  const lanes::Explanation e = lanes::explain(lanes::vmap(normalize), xs);
  ASSERT_EQ(e.custom_rules.size(), 1u);
  EXPECT_NE(e.custom_rules[0].find("custom_vmap rule 'normalize_rows' ran over 4 lanes"),
            std::string::npos)
      << e.custom_rules[0];
  std::ostringstream os;
  os << e;
  EXPECT_NE(os.str().find("normalize_rows"), std::string::npos) << os.str();
  // A vmap that never meets the node names no rule.
  const lanes::Explanation none =
      lanes::explain(lanes::vmap([](const Tensor& x) { return x * 2.0; }), xs);
  EXPECT_TRUE(none.custom_rules.empty());
}

TEST(CustomVmap, InBatchedFlagsAndNesting) {
  const Tensor xs = stacked(kRows), w = f64({2, 3, 4});
  std::vector<double> want;
  for (const auto& r : kRows)
    for (size_t k = 0; k < 3; ++k) want.push_back(r[k] * (2.0 + k));
  expect_near(lanes::vmap(scale_by, lanes::in_axes(0, lanes::none))(xs, w), want, 1e-14,
              "x batched");
  std::vector<double> want2;
  for (const auto& r : kRows)
    for (size_t k = 0; k < 3; ++k) want2.push_back(kRows[1][k] * r[k]);
  expect_near(lanes::vmap(scale_by, lanes::in_axes(lanes::none, 0))(f64(kRows[1]), xs), want2,
              1e-14, "w batched");
  // vmap of vmap: the inner rule's ops are batched by the outer vmap (the rule is vmapped).
  const Tensor xss = lanes::stack({xs, xs * 2.0}, 0);
  normalize_rule_calls = 0;
  const Tensor nested = lanes::vmap(lanes::vmap(normalize))(xss);
  EXPECT_GE(normalize_rule_calls, 1);
  std::vector<double> want3 = normalized_ref(kRows), again = want3;
  want3.insert(want3.end(), again.begin(), again.end());
  expect_near(nested, want3, 1e-14, "vmap(vmap)");
}

TEST(CustomVmap, DerivativesDifferentiateF) {
  const Tensor xs = stacked(kRows);
  // d/dx_j sum_k c_k x_k / s = (c_j - sum_k c_k x_k / s) / s with s = sum x.
  const std::vector<double> c = {1, -2, 0.5};
  auto loss = [&](const Tensor& x) { return lanes::sum(normalize(x) * f64(c)); };
  std::vector<double> want;
  for (const auto& r : kRows) {
    const double s = r[0] + r[1] + r[2];
    const double dot = (c[0] * r[0] + c[1] * r[1] + c[2] * r[2]) / s;
    for (size_t j = 0; j < 3; ++j) want.push_back((c[j] - dot) / s);
  }
  // Reverse mode differentiates f (jax registers no transpose for custom_vmap); the forward value
  // still runs batched by the rule.
  expect_near(lanes::vmap(lanes::grad(loss))(xs), want, 1e-13, "vmap(grad)");
  normalize_rule_calls = 0;
  const auto [value, g] = lanes::vmap(lanes::value_and_grad(loss))(xs);
  EXPECT_GE(normalize_rule_calls, 1);
  expect_near(g, want, 1e-13, "vmap(value_and_grad)");
  std::vector<double> values_want;
  for (const auto& r : kRows)
    values_want.push_back((c[0] * r[0] + c[1] * r[1] + c[2] * r[2]) / (r[0] + r[1] + r[2]));
  expect_near(value, values_want, 1e-13, "vmap(value_and_grad) value");
  // Forward mode is a custom_vmap of the rule's jvp: vmap(jvp) and jacfwd batch through it.
  normalize_rule_calls = 0;
  auto jvp_one = [&](const Tensor& x, const Tensor& t) {
    return lanes::jvp(loss, std::make_tuple(x), std::make_tuple(t)).second;
  };
  const Tensor dirs = stacked({{1, 0, 0}, {0, 1, 0}, {0, 0, 1}, {1, -1, 2}});
  std::vector<double> dots;
  for (size_t i = 0; i < kRows.size(); ++i) {
    const auto d = values(dirs[int64_t(i)]);
    dots.push_back(want[3 * i] * d[0] + want[3 * i + 1] * d[1] + want[3 * i + 2] * d[2]);
  }
  expect_near(lanes::vmap(jvp_one)(xs, dirs), dots, 1e-13, "vmap(jvp)");
  EXPECT_GE(normalize_rule_calls, 1);
  normalize_rule_calls = 0;
  const Tensor x0 = f64(kRows[0]);
  expect_near(lanes::jacfwd(loss)(x0), {want[0], want[1], want[2]}, 1e-13, "jacfwd");
  EXPECT_GE(normalize_rule_calls, 1);
  // d2/dxi dxj of L = c.x / s: -((c_i - L) + (c_j - L)) / s^2.
  const double s0 = kRows[0][0] + kRows[0][1] + kRows[0][2];
  const double l0 = (c[0] * kRows[0][0] + c[1] * kRows[0][1] + c[2] * kRows[0][2]) / s0;
  std::vector<double> hess;
  for (size_t i = 0; i < 3; ++i)
    for (size_t j = 0; j < 3; ++j) hess.push_back(-((c[i] - l0) + (c[j] - l0)) / (s0 * s0));
  expect_near(lanes::hessian(loss)(x0), hess, 1e-12, "hessian");
  auto total = [&](const Tensor& x) { return lanes::sum(lanes::vmap(loss)(x)); };
  expect_near(lanes::grad(total)(xs), want, 1e-13, "grad(vmap)");
  expect_near(lanes::compile(lanes::grad(total))(xs), want, 1e-13, "compile(grad(vmap))");
}

// ---- nesting
// --------------------------------------------------------------------------------------

// A custom_vjp whose f and fwd use the custom_jvp softplus, and whose bwd clips elementwise.
const auto clipped_softplus = lanes::custom_vjp(
    [](const Tensor& x) { return softplus(x); },
    [](const Tensor& x) { return std::make_pair(softplus(x), std::make_tuple(x)); },
    [](const std::tuple<Tensor>& res, const Tensor& ct) {
      return std::make_tuple(lanes::clip(ct * lanes::sigmoid(std::get<0>(res)), -0.25, 0.25));
    });

TEST(Nesting, CustomJvpInsideCustomVjp) {
  const Tensor x = f64(kXs);
  auto loss = [](const Tensor& v) { return lanes::sum(clipped_softplus(v)); };
  std::vector<double> want;
  for (double v : kXs) want.push_back(std::clamp(sigmoid_ref(v), -0.25, 0.25));
  expect_near(lanes::grad(loss)(x), want, 1e-12, "grad uses bwd");
  expect_near(lanes::compile(lanes::grad(loss))(x), want, 1e-12, "compile(grad)");
  auto one = [](const Tensor& v) { return clipped_softplus(v); };
  expect_near(lanes::vmap(lanes::grad(one))(x), want, 1e-12, "vmap(grad)");
  // Forward mode differentiates f, whose custom_jvp keeps it finite at 1000.
  expect_near(lanes::jacfwd(loss)(x), map_ref(sigmoid_ref, kXs), 1e-12, "jacfwd uses the jvp rule");
  expect_near(lanes::compile(lanes::vmap(clipped_softplus))(x), map_ref(softplus_ref, kXs), 1e-12,
              "compile(vmap) value");
}

// A custom_jvp whose f and rule call the custom_vjp clip_gradient (its cotangent clipping only
// matters in reverse mode, which transposes the rule instead).
TEST(Nesting, CustomVjpInsideCustomJvpAndVmapInsideGrad) {
  const auto cube = lanes::custom_jvp([](const Tensor& x) { return clip_gradient(x) * x * x; },
                                      [](const auto& p, const auto& t) {
                                        const Tensor& x = std::get<0>(p);
                                        return std::make_pair(clip_gradient(x) * x * x,
                                                              std::get<0>(t) * x * x * 3.0);
                                      });
  const Tensor x = f64({0.5, -1, 2, 3});
  auto loss = [&](const Tensor& v) { return lanes::sum(cube(v)); };
  const std::vector<double> want = {0.75, 3, 12, 27};
  expect_near(lanes::grad(loss)(x), want, 1e-12, "grad");
  expect_near(lanes::hessian(loss)(x), {3, 0, 0, 0, 0, -6, 0, 0, 0, 0, 12, 0, 0, 0, 0, 18}, 1e-12,
              "hessian");
  auto one = [&](const Tensor& v) { return cube(v); };
  expect_near(lanes::vmap(lanes::grad(one))(x), want, 1e-12, "vmap(grad)");
  expect_near(lanes::compile(lanes::vmap(lanes::grad(one)))(x), want, 1e-12, "compile(vmap(grad))");
  // custom_vmap inside custom_vjp inside vmap: the rule still runs.
  const auto outer = lanes::custom_vjp(
      [](const Tensor& v) { return normalize(v); },
      [](const Tensor& v) { return std::make_pair(normalize(v), std::tuple<>{}); },
      [](const std::tuple<>&, const Tensor& ct) { return std::make_tuple(ct * 0.0); });
  normalize_rule_calls = 0;
  expect_near(lanes::vmap(outer)(stacked(kRows)), normalized_ref(kRows), 1e-14,
              "vmap(custom_vjp(custom_vmap))");
  EXPECT_GE(normalize_rule_calls, 1);
}

// Custom functions in the branches and bodies of control flow whose predicate differs per
// example (lane nodes, each strategy): the rules batch with the branch or body.
TEST(Nesting, InsideControlFlowUnderVmap) {
  auto f = [](const Tensor& x) {
    return lanes::cond(
        x > 0.0, [](const Tensor& v) { return clipped_softplus(v); },
        [](const Tensor& v) { return softplus(v) * 2.0; }, x);
  };
  std::vector<double> want;
  for (double v : kXs)
    want.push_back(v > 0 ? std::clamp(sigmoid_ref(v), -0.25, 0.25) : 2 * sigmoid_ref(v));
  for (auto strategy : {lanes::CondStrategy::Select, lanes::CondStrategy::Partition}) {
    lanes::VmapOptions o;
    o.cond = strategy;
    expect_near(lanes::vmap(lanes::grad(f), 0, 0, o)(f64(kXs)), want, 1e-12, "vmap(grad(cond))");
    expect_near(lanes::compile(lanes::vmap(lanes::grad(f), 0, 0, o))(f64(kXs)), want, 1e-12,
                "compile(vmap(grad(cond)))");
  }
  // normalize(v + 1) applied n times, n per example: a while_loop whose lanes stop on their own.
  auto repeat = [](const Tensor& v, const Tensor& n) {
    using C = std::tuple<Tensor, Tensor>;
    return std::get<1>(lanes::while_loop(
        [n](const C& c) { return std::get<0>(c) < n; },
        [](const C& c) { return C(std::get<0>(c) + 1, normalize(std::get<1>(c) + 1.0)); },
        C(lanes::scalar(0, DType::Int32), v)));
  };
  const std::vector<int32_t> counts = {0, 3, 1, 5};
  std::vector<double> loop;
  for (size_t i = 0; i < kRows.size(); ++i) {
    std::vector<double> v = kRows[i];
    for (int k = 0; k < counts[i]; ++k) {
      double s = 0;
      for (double& e : v) s += (e += 1);
      for (double& e : v) e /= s;
    }
    loop.insert(loop.end(), v.begin(), v.end());
  }
  for (auto strategy : {lanes::LoopStrategy::Mask, lanes::LoopStrategy::Compact}) {
    lanes::VmapOptions o;
    o.loop = strategy;
    normalize_rule_calls = 0;
    const Tensor got = lanes::vmap(repeat, 0, 0, o)(stacked(kRows), lanes::tensor(counts, {4}));
    expect_near(got, loop, 1e-14, "vmap(while(custom_vmap))");
    EXPECT_GE(normalize_rule_calls, 1);
  }
}

// Gradient clipping inside a scan body (an RNN whose carry's cotangent is clipped at every
// step), against the backward pass written out in float64.
const auto clip_elementwise =
    lanes::custom_vjp([](const Tensor& h) { return h; },
                      [](const Tensor& h) { return std::make_pair(h, std::tuple<>{}); },
                      [](const std::tuple<>&, const Tensor& ct) {
                        return std::make_tuple(lanes::clip(ct, -0.5, 0.5));
                      });

Tensor rnn(const Tensor& w, const Tensor& h0, const Tensor& xs) {
  auto step = [&w](const Tensor& h, const Tensor& x) {
    return std::make_pair(lanes::tanh(w * clip_elementwise(h) + x), std::tuple<>{});
  };
  return lanes::scan(step, h0, xs).first;
}

// (d h_T / d w, d h_T / d h0) with every carry cotangent clipped to [-0.5, 0.5].
std::pair<double, double> rnn_grad_ref(double w, double h0, const std::vector<double>& xs) {
  std::vector<double> h{h0};
  for (double x : xs) h.push_back(std::tanh(w * h.back() + x));
  double dh = 1, dw = 0;
  for (size_t t = xs.size(); t-- > 0;) {
    const double dpre = dh * (1 - h[t + 1] * h[t + 1]);
    dw += dpre * h[t];
    dh = std::clamp(dpre * w, -0.5, 0.5);
  }
  return {dw, dh};
}

TEST(Nesting, ClippingInsideScan) {
  const std::vector<double> xs = {0.1, -0.2, 0.05, 0.3, -0.1, 0.0};
  const std::vector<double> h0s = {0.0, 0.2, -0.3};
  const double w = 0.9;
  auto g = lanes::grad(rnn, {0, 1});
  std::vector<double> want_w, want_h;
  for (double h0 : h0s) {
    const auto [dw, dh] = rnn_grad_ref(w, h0, xs);
    want_w.push_back(dw);
    want_h.push_back(dh);
    const auto [gw, gh, gx] =
        g(lanes::scalar(w, DType::Float64), lanes::scalar(h0, DType::Float64), f64(xs));
    EXPECT_NEAR(gw.item<double>(), dw, 1e-12) << h0;
    EXPECT_NEAR(gh.item<double>(), dh, 1e-12) << h0;
  }
  // Clipping changed the answer (so the test sees bwd): the last step's cotangent, about w, is
  // clipped to 0.5.
  EXPECT_GT(std::abs(want_h[0] -
                     [&] {
                       std::vector<double> h{0.0};
                       for (double x : xs) h.push_back(std::tanh(w * h.back() + x));
                       double dh = 1;
                       for (size_t t = xs.size(); t-- > 0;) dh = dh * (1 - h[t + 1] * h[t + 1]) * w;
                       return dh;
                     }()),
            1e-3);
  const Tensor xt = f64(xs);
  auto both = [&](const Tensor& wv, const Tensor& h0) {
    const auto [gw, gh, gx] = g(wv, h0, xt);
    return std::make_pair(gw, gh);
  };
  auto per_example = lanes::vmap(both, lanes::in_axes(lanes::none, 0));
  const auto [bw, bh] = per_example(lanes::scalar(w, DType::Float64), f64(h0s));
  expect_near(bw, want_w, 1e-12, "vmap(grad(scan)) d/dw");
  expect_near(bh, want_h, 1e-12, "vmap(grad(scan)) d/dh0");
  const auto [cw, ch] = lanes::compile(per_example)(lanes::scalar(w, DType::Float64), f64(h0s));
  expect_near(cw, want_w, 1e-12, "compile(vmap(grad(scan))) d/dw");
  expect_near(ch, want_h, 1e-12, "compile(vmap(grad(scan))) d/dh0");
}

// ---- errors -------------------------------------------------------------------------------------

TEST(CustomErrors, StructureMismatchesAreClear) {
  const Tensor x = f64({1, 2, 3});
  expect_error(
      [&] {
        lanes::custom_vjp(
            [](const Tensor& v) { return v; },
            [](const Tensor& v) { return std::make_pair(lanes::sum(v), std::tuple<>{}); },
            [](const std::tuple<>&, const Tensor& ct) { return std::make_tuple(ct); })(x);
      },
      "custom_vjp: fwd's out (the pair's first) returns output leaf 0 as");
  expect_error(
      [&] {
        lanes::custom_vjp([](const Tensor& a, const Tensor& b) { return a * b; },
                          [](const Tensor& a, const Tensor& b) {
                            return std::make_pair(a * b, std::make_tuple(a, b));
                          },
                          [](const std::tuple<Tensor, Tensor>& r, const Tensor& ct) {
                            return std::make_tuple(ct * std::get<1>(r));
                          })(x, x);
      },
      "custom_vjp: bwd returns 1 cotangent leaves but the arguments have 2 leaves");
  expect_error(
      [&] {
        lanes::custom_vjp([](const Tensor& v) { return v; },
                          [](const Tensor& v) { return std::make_pair(v, std::tuple<>{}); },
                          [](const std::tuple<>&, const Tensor& ct) {
                            return std::make_tuple(lanes::sum(ct));
                          })(x);
      },
      "custom_vjp: bwd returns cotangent leaf 0 as");
  expect_error(
      [&] {
        lanes::custom_jvp([](const Tensor& v) { return v; },
                          [](const auto& p, const auto&) {
                            return std::make_pair(std::get<0>(p), lanes::sum(std::get<0>(p)));
                          })(x);
      },
      "custom_jvp: the rule's tangent out (the pair's second) returns output leaf 0 as");
}

TEST(CustomErrors, CustomVmapRuleMistakes) {
  const Tensor xs = stacked(kRows);
  const auto wrong_flags =
      lanes::custom_vmap([](const Tensor& x) { return x; },
                         [](int64_t, const std::vector<bool>&, const Tensor& x) {
                           return std::make_pair(x, std::vector<bool>{true, false});
                         },
                         "wrong_flags");
  expect_error([&] { lanes::vmap(wrong_flags)(xs); },
               "custom_vmap (wrong_flags): the rule's out_batched has 2 flags but f returns 1");
  const auto wrong_shape = lanes::custom_vmap(
      [](const Tensor& x) { return x; },
      [](int64_t, const std::vector<bool>&, const Tensor& x) {
        return std::make_pair(lanes::sum(x, lanes::Axes{1}), std::vector<bool>{true});
      },
      "wrong_shape");
  expect_error([&] { lanes::vmap(wrong_shape)(xs); },
               "custom_vmap (wrong_shape): the rule returns output leaf 0 as");
  // f capturing a value the vmap batches: the rule could not see it.
  expect_error(
      [&] {
        lanes::vmap([](const Tensor& x) {
          const auto g =
              lanes::custom_vmap([x](const Tensor& v) { return v * x; },
                                 [](int64_t, const std::vector<bool>& b, const Tensor& v) {
                                   return std::make_pair(v, std::vector<bool>(b));
                                 });
          return g(x);
        })(xs);
      },
      "f captures a value that this vmap batches");
}

}  // namespace
