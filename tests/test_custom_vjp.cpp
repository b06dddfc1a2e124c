// custom_vjp (lanes/custom.h) under every transform, against independent references: gradient
// clipping written out by hand, a fixed point's implicit derivative against the analytic one and
// finite differences, per-example loops.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "custom_rules_common.h"

namespace {

using namespace custom_test;

// 0.5 |w * x - y|^2 with w's gradient clipped.
Tensor clipped_loss(const Tensor& w, const Tensor& x, const Tensor& y) {
  const Tensor r = clip_gradient(w) * x - y;
  return lanes::sum(r * r) * 0.5;
}

// The hand-computed clipped gradient: g = (w x - y) x, times min(1, c / |g|).
std::vector<double> clipped_ref(const std::vector<double>& w, const std::vector<double>& x,
                                const std::vector<double>& y) {
  std::vector<double> g;
  double norm = 0;
  for (size_t i = 0; i < w.size(); ++i) {
    g.push_back((w[i] * x[i] - y[i]) * x[i]);
    norm += g.back() * g.back();
  }
  norm = std::sqrt(norm);
  for (double& v : g) v *= std::min(1.0, kClip / norm);
  return g;
}

const std::vector<double> kW = {0.5, -1.0, 2.0};
const std::vector<std::vector<double>> kX = {{1, 2, 3}, {0.1, 0.2, 0.1}, {-2, 1, 0.5}, {3, 3, 3}};
const std::vector<std::vector<double>> kY = {{0, 1, 2}, {0.1, -0.1, 0.3}, {1, 1, 1}, {-1, 2, 0}};

TEST(CustomVjp, GradientClipping) {
  const Tensor w = f64(kW);
  for (size_t i = 0; i < kX.size(); ++i) {
    const Tensor g = lanes::grad(clipped_loss)(w, f64(kX[i]), f64(kY[i]));
    expect_near(g, clipped_ref(kW, kX[i], kY[i]), 1e-12, "clipped grad");
  }
  // The forward value is f's.
  const Tensor v = lanes::value_and_grad(clipped_loss)(w, f64(kX[0]), f64(kY[0])).first;
  double want = 0;
  for (size_t k = 0; k < 3; ++k) want += 0.5 * std::pow(kW[k] * kX[0][k] - kY[0][k], 2);
  EXPECT_NEAR(v.item<double>(), want, 1e-12);
}

TEST(CustomVjp, PerExampleClippingUnderVmapAndCompile) {
  const Tensor w = f64(kW), xs = stacked(kX), ys = stacked(kY);
  std::vector<double> want;
  for (size_t i = 0; i < kX.size(); ++i) {
    const auto g = clipped_ref(kW, kX[i], kY[i]);
    want.insert(want.end(), g.begin(), g.end());
  }
  auto per_example = lanes::vmap(lanes::grad(clipped_loss), lanes::in_axes(lanes::none, 0, 0));
  expect_near(per_example(w, xs, ys), want, 1e-12, "vmap(grad)");
  expect_near(lanes::compile(per_example)(w, xs, ys), want, 1e-12, "compile(vmap(grad))");
  // Per-example weights: w mapped too.
  const Tensor ws = stacked({kW, kW, kW, kW});
  auto mapped_w = lanes::vmap(lanes::grad(clipped_loss));
  expect_near(mapped_w(ws, xs, ys), want, 1e-12, "vmap(grad), w mapped");
}

TEST(CustomVjp, GradOfVmapClipsTheTotal) {
  // grad of the summed per-example losses with w shared: the node sees w unmapped, so the
  // cotangent reaching it is the sum over examples, which bwd clips once.
  const Tensor w = f64(kW), xs = stacked(kX), ys = stacked(kY);
  auto total = [&](const Tensor& wv) {
    auto one = [&](const Tensor& x, const Tensor& y) { return clipped_loss(wv, x, y); };
    return lanes::sum(lanes::vmap(one)(xs, ys));
  };
  std::vector<double> g(3, 0.0);
  for (size_t i = 0; i < kX.size(); ++i)
    for (size_t k = 0; k < 3; ++k) g[k] += (kW[k] * kX[i][k] - kY[i][k]) * kX[i][k];
  double norm = std::sqrt(g[0] * g[0] + g[1] * g[1] + g[2] * g[2]);
  for (double& v : g) v *= std::min(1.0, kClip / norm);
  expect_near(lanes::grad(total)(w), g, 1e-12, "grad(vmap)");
  expect_near(lanes::compile(lanes::grad(total))(w), g, 1e-12, "compile(grad(vmap))");
}

// w * x whose bwd clips each element of w's cotangent to [-c, c]: under vmap over x with w
// shared, the batched bwd clips per example and sums the lanes for w.
const auto scaled = lanes::custom_vjp(
    [](const Tensor& w, const Tensor& x) { return w * x; },
    [](const Tensor& w, const Tensor& x) { return std::make_pair(w * x, std::make_tuple(w, x)); },
    [](const std::tuple<Tensor, Tensor>& res, const Tensor& ct) {
      const auto& [w, x] = res;
      return std::make_tuple(lanes::clip(ct * x, -0.5, 0.5), ct * w);
    });

TEST(CustomVjp, BatchedBwdSumsTheLanesOfASharedArgument) {
  const Tensor w = f64(kW), xs = stacked(kX);
  auto total = [&](const Tensor& wv, const Tensor& xv) {
    auto one = [&](const Tensor& x) { return lanes::sum(scaled(wv, x)); };
    return lanes::sum(lanes::vmap(one)(xv));
  };
  std::vector<double> gw(3, 0.0), gx;
  for (size_t i = 0; i < kX.size(); ++i)
    for (size_t k = 0; k < 3; ++k) {
      gw[k] += std::clamp(kX[i][k], -0.5, 0.5);
      gx.push_back(kW[k]);
    }
  const auto [dw, dx] = lanes::grad(total, {0, 1})(w, xs);
  expect_near(dw, gw, 1e-12, "d/dw");
  expect_near(dx, gx, 1e-12, "d/dx");
  const auto [cw, cx] = lanes::compile(lanes::grad(total, {0, 1}))(w, xs);
  expect_near(cw, gw, 1e-12, "compiled d/dw");
  expect_near(cx, gx, 1e-12, "compiled d/dx");
  // vjp with a general cotangent: bwd receives it as it is.
  auto [y, pullback] = lanes::vjp(scaled, w, f64(kX[0]));
  const auto [vw, vx] = pullback(f64({2, -3, 0.1}));
  std::vector<double> want_w, want_x;
  const std::vector<double> ct = {2, -3, 0.1};
  for (size_t k = 0; k < 3; ++k) {
    want_w.push_back(std::clamp(ct[k] * kX[0][k], -0.5, 0.5));
    want_x.push_back(ct[k] * kW[k]);
  }
  expect_near(vw, want_w, 1e-12, "vjp w");
  expect_near(vx, want_x, 1e-12, "vjp x");
}

TEST(CustomVjp, ForwardModeDifferentiatesF) {
  // jvp and jacfwd of a custom_vjp function take f's own derivative (documented: jax refuses).
  const Tensor w = f64(kW), x = f64(kX[2]);
  auto [y, dy] =
      lanes::jvp(scaled, std::make_tuple(w, x), std::make_tuple(f64({1, 1, 1}), f64({0, 0, 0})));
  expect_near(dy, kX[2], 1e-12, "jvp = x (unclipped)");
  // hessian = jacfwd(jacrev): the derivative of the custom gradient bwd computes. For the loss
  // sum(scaled(w, x)^2) / 2 the custom gradient is clip(w x^2, +-0.5): its derivative is x^2
  // where |w x^2| < 0.5, else 0.
  auto loss = [&](const Tensor& wv) {
    const Tensor s = scaled(wv, x);
    return lanes::sum(s * s) * 0.5;
  };
  const auto h = values(lanes::hessian(loss)(f64({0.01, 0.3, -0.05})));
  const std::vector<double> wv = {0.01, 0.3, -0.05};
  for (size_t i = 0; i < 3; ++i)
    for (size_t j = 0; j < 3; ++j) {
      const double x2 = kX[2][i] * kX[2][i];
      const double want = i == j && std::abs(wv[i] * x2) < 0.5 ? x2 : 0.0;
      EXPECT_NEAR(h[i * 3 + j], want, 1e-12) << i << "," << j;
    }
}

// Trees everywhere: a pair argument, a tuple output, residuals in a vector. bwd doubles w's
// cotangent on purpose, so the test sees that it ran.
const auto affine = lanes::custom_vjp(
    [](const std::pair<Tensor, Tensor>& p, const Tensor& x) {
      return std::make_tuple(p.first * x + p.second, lanes::sum(x));
    },
    [](const std::pair<Tensor, Tensor>& p, const Tensor& x) {
      return std::make_pair(std::make_tuple(p.first * x + p.second, lanes::sum(x)),
                            std::vector<Tensor>{p.first, x});
    },
    [](const std::vector<Tensor>& r, const std::tuple<Tensor, Tensor>& ct) {
      const Tensor& cy = std::get<0>(ct);
      return std::make_tuple(std::make_pair(cy * r[1] * 2.0, cy), cy * r[0] + std::get<1>(ct));
    });

TEST(CustomVjp, TreesOfArgumentsOutputsAndResiduals) {
  const Tensor w = f64(kW), b = f64({1, 1, 1}), x = f64(kX[0]);
  auto loss = [](const std::pair<Tensor, Tensor>& p, const Tensor& v) {
    const auto [y, s] = affine(p, v);
    return lanes::sum(y) + s * 3.0;
  };
  const auto [dp, dx] = lanes::grad(loss, {0, 1})(std::make_pair(w, b), x);
  std::vector<double> dw, dxw;
  for (size_t k = 0; k < 3; ++k) {
    dw.push_back(2 * kX[0][k]);
    dxw.push_back(kW[k] + 3);
  }
  expect_near(dp.first, dw, 1e-14, "d/dw (doubled by bwd)");
  expect_near(dp.second, {1, 1, 1}, 1e-14, "d/db");
  expect_near(dx, dxw, 1e-14, "d/dx");
  // Per example over x, parameters shared.
  auto per_example = lanes::vmap(lanes::grad(loss), lanes::in_axes(lanes::none, 0));
  const auto pw = per_example(std::make_pair(w, b), stacked(kX));
  std::vector<double> want;
  for (const auto& r : kX)
    for (double v : r) want.push_back(2 * v);
  expect_near(pw.first, want, 1e-14, "vmap(grad) d/dw");
}

// An integer argument: bwd returns a cotangent of its shape, which is ignored.
const auto times_count = lanes::custom_vjp(
    [](const Tensor& x, const Tensor& n) { return x * lanes::cast(n, DType::Float64); },
    [](const Tensor& x, const Tensor& n) {
      return std::make_pair(x * lanes::cast(n, DType::Float64), std::make_tuple(n));
    },
    [](const std::tuple<Tensor>& r, const Tensor& ct) {
      const Tensor& n = std::get<0>(r);
      return std::make_tuple(ct * lanes::cast(n, DType::Float64), lanes::zeros_like(n));
    });

TEST(CustomVjp, UndefinedCotangentIsZero) {
  const auto first_only = lanes::custom_vjp(
      [](const Tensor& a, const Tensor& b) { return a * b; },
      [](const Tensor& a, const Tensor& b) { return std::make_pair(a * b, std::make_tuple(b)); },
      [](const std::tuple<Tensor>& r, const Tensor& ct) {
        return std::make_tuple(ct * std::get<0>(r), Tensor());
      });
  auto loss = [&](const Tensor& a, const Tensor& b) { return lanes::sum(first_only(a, b)); };
  const auto [da, db] = lanes::grad(loss, {0, 1})(f64({1, 2}), f64({3, 4}));
  expect_near(da, {3, 4}, 0, "d/da");
  expect_near(db, {0, 0}, 0, "d/db (undefined: zero)");
  const auto [va, vb] =
      lanes::vmap(lanes::grad(loss, {0, 1}))(stacked({{1, 2}, {5, 6}}), stacked({{3, 4}, {7, 8}}));
  expect_near(va, {3, 4, 7, 8}, 0, "vmap d/da");
  expect_near(vb, {0, 0, 0, 0}, 0, "vmap d/db");
}

TEST(CustomVjp, IntegerArgumentsUnderVmap) {
  const Tensor xs = f64({0.5, 1, 2, 3}), ns = lanes::tensor(std::vector<int32_t>{3, -1, 0, 7}, {4});
  auto one = [](const Tensor& x, const Tensor& n) { return times_count(x, n); };
  expect_near(lanes::vmap(lanes::grad(one))(xs, ns), {3, -1, 0, 7}, 0, "vmap(grad)");
  expect_near(lanes::compile(lanes::vmap(lanes::grad(one)))(xs, ns), {3, -1, 0, 7}, 0,
              "compile(vmap(grad))");
  auto shared = [&](const Tensor& x) {
    return lanes::sum(lanes::vmap(one, lanes::in_axes(lanes::none, 0))(x, ns));
  };
  expect_near(lanes::grad(shared)(lanes::scalar(2.0, DType::Float64)), {9}, 0, "grad(vmap)");
}

// ---- custom_vjp: the implicit-function derivative of a fixed point
// -------------------------------

// x* = cos(a x*) by iteration to convergence (a while_loop with a data-dependent trip count).
Tensor fixed_point_iterate(const Tensor& a) {
  using C = std::tuple<Tensor, Tensor>;  // x, |last step|
  const C init(lanes::zeros_like(a), lanes::ones_like(a));
  return std::get<0>(lanes::while_loop([](const C& c) { return std::get<1>(c) > 1e-14; },
                                       [a](const C& c) {
                                         const Tensor next = lanes::cos(a * std::get<0>(c));
                                         return C(next, lanes::abs(next - std::get<0>(c)));
                                       },
                                       init));
}

// dx*/da by the implicit function theorem: the adjoint u solves u = ct + u df/dx (another
// fixed point, found by iteration), and the cotangent of a is u df/da.
std::tuple<Tensor> fixed_point_bwd(const std::tuple<Tensor, Tensor>& res, const Tensor& ct) {
  const auto& [a, x] = res;
  const Tensor s = lanes::sin(a * x);
  const Tensor dfdx = -a * s, dfda = -x * s;
  using C = std::tuple<Tensor, Tensor>;  // u, |last step|
  const Tensor u =
      std::get<0>(lanes::while_loop([](const C& c) { return std::get<1>(c) > 1e-14; },
                                    [ct, dfdx](const C& c) {
                                      const Tensor next = ct + std::get<0>(c) * dfdx;
                                      return C(next, lanes::abs(next - std::get<0>(c)));
                                    },
                                    C(ct, lanes::ones_like(ct))));
  return std::make_tuple(u * dfda);
}

const auto fixed_point = lanes::custom_vjp(
    fixed_point_iterate,
    [](const Tensor& a) {
      const Tensor x = fixed_point_iterate(a);
      return std::make_pair(x, std::make_tuple(a, x));
    },
    fixed_point_bwd);

const auto fixed_point_opaque =
    lanes::custom_vjp([](const Tensor& a) { return lanes::stop_gradient(fixed_point_iterate(a)); },
                      [](const Tensor& a) {
                        const Tensor x = lanes::stop_gradient(fixed_point_iterate(a));
                        return std::make_pair(x, std::make_tuple(a, x));
                      },
                      [](const std::tuple<Tensor, Tensor>& res, const Tensor& ct) {
                        return fixed_point_bwd(res, ct);
                      });

double fixed_point_ref(double a) {
  double x = 0;
  for (int i = 0; i < 10000; ++i) {
    const double next = std::cos(a * x);
    if (next == x) break;
    x = next;
  }
  return x;
}

// Implicit derivative: x = cos(a x) gives dx/da = -x sin(a x) / (1 + a sin(a x)).
double fixed_point_grad_ref(double a) {
  const double x = fixed_point_ref(a), s = std::sin(a * x);
  return -x * s / (1 + a * s);
}

const std::vector<double> kAs = {0.2, 0.5, 0.8, 1.0, 1.3};

TEST(CustomVjp, FixedPointImplicitDerivative) {
  auto g = lanes::grad([](const Tensor& a) { return fixed_point(a); });
  for (double a : kAs) {
    const Tensor at = lanes::scalar(a, DType::Float64);
    EXPECT_NEAR(fixed_point(at).item<double>(), fixed_point_ref(a), 1e-12) << a;
    const double got = g(at).item<double>();
    EXPECT_NEAR(got, fixed_point_grad_ref(a), 1e-11) << a;
    const double h = 1e-6;
    const double fd = (fixed_point_ref(a + h) - fixed_point_ref(a - h)) / (2 * h);
    EXPECT_NEAR(got, fd, 1e-8) << a;
    const double opaque =
        lanes::grad([](const Tensor& v) { return fixed_point_opaque(v); })(at).item<double>();
    EXPECT_NEAR(opaque, fixed_point_grad_ref(a), 1e-11) << a;
  }
}

TEST(CustomVjp, FixedPointUnderVmapAndCompile) {
  const Tensor as = f64(kAs);
  const std::vector<double> want = map_ref(fixed_point_grad_ref, kAs);
  auto per_example = lanes::vmap(lanes::grad([](const Tensor& a) { return fixed_point(a); }));
  expect_near(per_example(as), want, 1e-11, "vmap(grad)");
  expect_near(lanes::compile(per_example)(as), want, 1e-11, "compile(vmap(grad))");
  auto opaque = lanes::vmap(lanes::grad([](const Tensor& a) { return fixed_point_opaque(a); }));
  expect_near(lanes::compile(opaque)(as), want, 1e-11, "compile(vmap(grad)), opaque f");
  auto total = [](const Tensor& a) { return lanes::sum(lanes::vmap(fixed_point)(a)); };
  expect_near(lanes::grad(total)(as), want, 1e-11, "grad(vmap)");
  expect_near(lanes::compile(lanes::grad(total))(as), want, 1e-11, "compile(grad(vmap))");
  expect_near(lanes::vmap(fixed_point)(as), map_ref(fixed_point_ref, kAs), 1e-12, "vmap value");
  // Forward mode differentiates the iteration itself, which converges to the same derivative.
  auto [y, dy] = lanes::jvp(lanes::vmap(fixed_point), std::make_tuple(as),
                            std::make_tuple(lanes::ones_like(as)));
  expect_near(dy, want, 1e-9, "jvp through the loop");
}

// A value f captures (instead of taking it as an argument) gets f's own derivative: the rules
// only speak for the explicit arguments. Here bwd scales x's cotangent by 10 on purpose.
TEST(CustomVjp, CapturedValuesTakeFsDerivative) {
  auto loss = [](const Tensor& x) {
    const auto g = lanes::custom_vjp(
        [x](const Tensor& v) { return v * x; },
        [x](const Tensor& v) { return std::make_pair(v * x, std::tuple<>{}); },
        [x](const std::tuple<>&, const Tensor& ct) { return std::make_tuple(ct * x * 10.0); });
    return lanes::sum(g(x * 2.0));
  };
  // d/dx sum(v x) with v = 2x: through v, bwd's 10 x times 2; through the captured x, v = 2x.
  expect_near(lanes::grad(loss)(f64({1, -2})), {22, -44}, 1e-14, "custom_vjp");
  auto loss_jvp = [](const Tensor& x) {
    const auto g =
        lanes::custom_jvp([x](const Tensor& v) { return v * x; },
                          [x](const auto& p, const auto& t) {
                            return std::make_pair(std::get<0>(p) * x, std::get<0>(t) * x * 10.0);
                          });
    return lanes::sum(g(x * 2.0));
  };
  expect_near(lanes::grad(loss_jvp)(f64({1, -2})), {22, -44}, 1e-14, "custom_jvp, reverse");
  expect_near(lanes::jacfwd(loss_jvp)(f64({1, -2})), {22, -44}, 1e-14, "custom_jvp, forward");
}

}  // namespace
