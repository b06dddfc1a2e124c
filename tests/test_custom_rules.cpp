// Custom rules (lanes/custom.h) under every transform, against independent references: float64
// C++ formulas, per-example loops, finite differences and hand-derived derivatives.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <map>
#include <ostream>
#include <sstream>

#include "lanes/lanes.h"

namespace {

using lanes::DType;
using lanes::Tensor;

Tensor f64(std::vector<double> v) { return lanes::tensor(v, {int64_t(v.size())}); }
Tensor f64(std::vector<double> v, lanes::Shape s) { return lanes::tensor(v, s); }
std::vector<double> values(const Tensor& t) { return t.to_vector<double>(); }

void expect_near(const Tensor& got, const std::vector<double>& want, double tol, const char* what) {
  const auto g = values(got);
  ASSERT_EQ(g.size(), want.size()) << what;
  for (size_t i = 0; i < g.size(); ++i)
    EXPECT_NEAR(g[i], want[i], tol * (1 + std::abs(want[i]))) << what << " element " << i;
}

template <class F>
void expect_error(F f, const std::string& what) {
  try {
    f();
    FAIL() << "expected lanes::Error containing: " << what;
  } catch (const lanes::Error& e) {
    EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
  }
}

// ---- custom_jvp: a softplus whose derivative stays finite ---------------------------------------

// log1p(exp(x)), kept finite by taking x itself past 30: the value is stable, but the naive
// derivative multiplies the select's zero by exp(1000) = inf in the branch not taken.
Tensor softplus_naive(const Tensor& x) {
  return lanes::where(x > 30.0, x, lanes::log1p(lanes::exp(x)));
}

const auto softplus = lanes::custom_jvp(softplus_naive, [](const auto& p, const auto& t) {
  const Tensor& x = std::get<0>(p);
  return std::make_pair(softplus_naive(x), std::get<0>(t) * lanes::sigmoid(x));
});

double softplus_ref(double x) { return x > 30 ? x : std::log1p(std::exp(x)); }
double sigmoid_ref(double x) { return 1 / (1 + std::exp(-x)); }

const std::vector<double> kXs = {-1000, -20, -1, 0, 0.5, 3, 40, 1000};

std::vector<double> map_ref(double (*f)(double), const std::vector<double>& xs) {
  std::vector<double> out;
  for (double x : xs) out.push_back(f(x));
  return out;
}

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

// ---- custom_vjp: gradient clipping --------------------------------------------------------------

constexpr double kClip = 1.0;

// The identity whose cotangent is clipped to norm kClip on the way back.
const auto clip_gradient = lanes::custom_vjp(
    [](const Tensor& w) { return w; },
    [](const Tensor& w) { return std::make_pair(w, std::tuple<>{}); },
    [](const std::tuple<>&, const Tensor& ct) {
      const Tensor norm = lanes::sqrt(lanes::sum(ct * ct));
      return std::make_tuple(ct * lanes::minimum(lanes::as_weak(1.0, norm), kClip / norm));
    });

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

Tensor stacked(const std::vector<std::vector<double>>& rows) {
  std::vector<double> flat;
  for (const auto& r : rows) flat.insert(flat.end(), r.begin(), r.end());
  return f64(flat, {int64_t(rows.size()), int64_t(rows[0].size())});
}

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

// ---- custom_vmap
// ----------------------------------------------------------------------------------

// x / sum(x) for one example; the rule normalizes every row of the batch at once and counts
// its calls.
int normalize_rule_calls = 0;
const auto normalize = lanes::custom_vmap(
    [](const Tensor& x) { return x / lanes::sum(x); },
    [](int64_t size, const std::vector<bool>& in_batched, const Tensor& x) {
      ++normalize_rule_calls;
      EXPECT_EQ(in_batched.size(), 1u);
      EXPECT_TRUE(in_batched[0]);
      EXPECT_EQ(x.shape(0), size);
      return std::make_pair(x / lanes::sum(x, lanes::Axes{1}, true), std::vector<bool>{true});
    },
    "normalize_rows");

const std::vector<std::vector<double>> kRows = {{1, 2, 3}, {4, 5, 6}, {0.5, 0.25, 0.25}, {9, 1, 1}};

std::vector<double> normalized_ref(const std::vector<std::vector<double>>& rows) {
  std::vector<double> out;
  for (const auto& r : rows) {
    const double s = r[0] + r[1] + r[2];
    for (double v : r) out.push_back(v / s);
  }
  return out;
}

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

// x * w with w possibly shared: the rule sees which argument is batched and may leave the output
// unbatched when nothing is.
const auto scale_by = lanes::custom_vmap(
    [](const Tensor& x, const Tensor& w) { return x * w; },
    [](int64_t size, const std::vector<bool>& in_batched, const Tensor& x, const Tensor& w) {
      EXPECT_EQ(in_batched.size(), 2u);
      Tensor xb =
          in_batched[0] ? x : lanes::broadcast_to(lanes::expand_dims(x, 0), {size, x.shape(0)});
      Tensor wb = in_batched[1] ? w : lanes::expand_dims(w, 0);
      return std::make_pair(xb * wb, std::vector<bool>{true});
    },
    "scale_by");

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

// ---- the table: custom rules consistent with f's true derivative, under every transform ---------
//
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
