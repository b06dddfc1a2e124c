// Autodiff composed with vmap: the seed's per-example gradients, every order of vmap and grad,
// Jacobians and Hessians against analytic formulas and finite differences, and the errors.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "lanes/lanes.h"

using namespace lanes;

namespace {

Tensor randn(const Shape& shape, uint64_t seed, DType dtype = kFloat64) {
  return random::normal(random::key(seed), shape, dtype);
}

Tensor row(const Tensor& x, int64_t i) { return squeeze(slice_axis(x, 0, i, i + 1), 0); }

void expect_close(const Tensor& got, const Tensor& want, double tol = 1e-9) {
  ASSERT_EQ(got.shape(), want.shape());
  const auto g = got.to_vector<double>(), w = want.to_vector<double>();
  for (size_t i = 0; i < g.size(); ++i) ASSERT_NEAR(g[i], w[i], tol * (1 + std::abs(w[i]))) << i;
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no lanes::Error)";
}

// A 2-layer MLP with softmax cross-entropy, the DP-SGD workload.
struct Mlp {
  Tensor w1, b1, w2, b2;
};

Tensor mlp_logits(const Mlp& p, const Tensor& x) {
  return matmul(tanh(matmul(x, p.w1) + p.b1), p.w2) + p.b2;
}

}  // namespace

LANES_TREE(Mlp, w1, b1, w2, b2)

TEST(Autodiff, GradOfSimpleFunctionsMatchesCalculus) {
  const Tensor x = randn({5}, 1);
  // d/dx sum(sin(x) * x) = cos(x) x + sin(x)
  expect_close(grad([](const Tensor& v) { return sum(sin(v) * v); })(x), cos(x) * x + sin(x));
  auto [value, g] = value_and_grad([](const Tensor& v) { return l2_loss(v); })(x);
  expect_close(value, l2_loss(x));
  expect_close(g, x);
  // Two arguments, both ways of choosing them.
  auto f = [](const Tensor& a, const Tensor& b) { return sum(a * b * b); };
  const Tensor y = randn({5}, 2);
  expect_close(grad(f, 1)(x, y), x * y * 2.0);
  auto [ga, gb] = grad(f, {0, 1})(x, y);
  expect_close(ga, y * y);
  expect_close(gb, x * y * 2.0);
}

TEST(Autodiff, SeedPerExampleGradientsOfDense1) {
  const auto keys = random::split(random::key(0), 3);
  const Tensor kernel = random::normal(keys[0], {32, 1});
  const Tensor bias = zeros({1});
  const Tensor inputs = random::normal(keys[1], {10, 32});
  const Tensor labels = random::normal(keys[2], {10, 1});
  auto model_fn = [&](const Tensor& inp, const Tensor& label) {
    auto loss = [&](const Tensor& k, const Tensor& b) {
      const Tensor prediction = matmul(expand_dims(inp, 0), k) + b;
      return l2_loss(expand_dims(label, 0) - prediction);
    };
    return grad(loss, {0, 1})(kernel, bias);
  };
  auto [dk, db] = vmap(model_fn)(inputs, labels);
  EXPECT_EQ(dk.shape(), (Shape{10, 32, 1}));
  EXPECT_EQ(db.shape(), (Shape{10, 1}));
  for (int64_t i = 0; i < 10; ++i) {
    auto [k1, b1] = model_fn(row(inputs, i), row(labels, i));
    expect_close(row(dk, i), k1, 1e-5);
    expect_close(row(db, i), b1, 1e-5);
    // Analytic: residual r = pred - label; dk = r x, db = r.
    const Tensor r =
        matmul(expand_dims(row(inputs, i), 0), kernel) + bias - expand_dims(row(labels, i), 0);
    expect_close(row(db, i), reshape(r, {1}), 1e-5);
    expect_close(row(dk, i), reshape(row(inputs, i), {32, 1}) * reshape(r, {}), 1e-5);
  }
}

TEST(Autodiff, PerExampleMlpGradientsEqualTheLoop) {
  const Mlp p{randn({6, 8}, 3), randn({8}, 4), randn({8, 4}, 5), randn({4}, 6)};
  const Tensor x = randn({7, 6}, 7);
  const Tensor labels = tensor(std::vector<int32_t>{0, 3, 1, 2, 2, 0, 1}, {7});
  auto loss = [](const Mlp& q, const Tensor& xi, const Tensor& yi) {
    return softmax_cross_entropy(mlp_logits(q, xi), yi);
  };
  const Mlp g = vmap(grad(loss), in_axes(none, 0, 0))(p, x, labels);
  EXPECT_EQ(g.w1.shape(), (Shape{7, 6, 8}));
  for (int64_t i = 0; i < 7; ++i) {
    const Mlp gi = grad(loss)(p, row(x, i), row(labels, i));
    expect_close(row(g.w1, i), gi.w1);
    expect_close(row(g.b1, i), gi.b1);
    expect_close(row(g.w2, i), gi.w2);
    expect_close(row(g.b2, i), gi.b2);
  }
  // DP-SGD: clip each example's gradient to norm 1, then average.
  const Tensor norms = sqrt(sum(g.w1 * g.w1, {1, 2}) + sum(g.b1 * g.b1, {1}) +
                            sum(g.w2 * g.w2, {1, 2}) + sum(g.b2 * g.b2, {1}));
  EXPECT_EQ(norms.shape(), (Shape{7}));
}

TEST(Autodiff, GradOfVmapSumsOverTheBatchForUnmappedInputs) {
  const Tensor w = randn({4, 3}, 8), x = randn({5, 4}, 9);
  auto batch_loss = [&](const Tensor& wv) {
    return sum(vmap([&](const Tensor& xi) { return sum(tanh(matmul(xi, wv))); })(x));
  };
  Tensor want = zeros({4, 3}, kFloat64);
  for (int64_t i = 0; i < 5; ++i)
    want = want + grad([&](const Tensor& wv) { return sum(tanh(matmul(row(x, i), wv))); })(w);
  expect_close(grad(batch_loss)(w), want);
}

TEST(Autodiff, NestedVmapOfGrad) {
  const Tensor x = randn({2, 3, 4}, 10);
  auto f = [](const Tensor& v) { return sum(exp(v) * v); };
  const Tensor got = vmap(vmap(grad(f)))(x);
  expect_close(got, exp(x) * x + exp(x));
}

TEST(Autodiff, JacrevEqualsJacfwdEqualsAnalyticForAnMlp) {
  const Tensor w1 = randn({3, 5}, 11), w2 = randn({5, 2}, 12), x = randn({3}, 13);
  auto f = [&](const Tensor& v) { return matmul(tanh(matmul(v, w1)), w2); };
  const Tensor jr = jacrev(f)(x), jf = jacfwd(f)(x);
  EXPECT_EQ(jr.shape(), (Shape{2, 3}));
  // Analytic: J = w2^T diag(1 - tanh^2(x w1)) w1^T.
  const Tensor h = tanh(matmul(x, w1));
  const Tensor analytic = matmul(transpose(w2) * (1.0 - h * h), transpose(w1));
  expect_close(jr, analytic);
  expect_close(jf, analytic);
}

TEST(Autodiff, HessianMatchesFiniteDifferencesOfTheGradient) {
  const Tensor x = randn({4}, 14);
  auto f = [](const Tensor& v) { return sum(sin(v) * v) + sum(v) * sum(v * v); };
  const Tensor h = hessian(f)(x);
  ASSERT_EQ(h.shape(), (Shape{4, 4}));
  const double eps = 1e-5;
  for (int64_t j = 0; j < 4; ++j) {
    std::vector<double> e(4, 0.0);
    e[j] = eps;
    const Tensor d = tensor(e, {4});
    const Tensor fd = (grad(f)(x + d) - grad(f)(x - d)) / (2 * eps);
    expect_close(slice_axis(h, 1, j, j + 1), reshape(fd, {4, 1}), 1e-6);
  }
  expect_close(h, transpose(h), 1e-12);  // symmetric
}

TEST(Autodiff, StopGradientBlocksTheDerivative) {
  const Tensor x = randn({3}, 15);
  expect_close(grad([](const Tensor& v) { return sum(stop_gradient(v) * v); })(x), x);
}

// Traced, square's rule gives g * 2x in one product; a stop_gradient factor must still count once.
TEST(Autodiff, SquareAndStopGradientUnderTrace) {
  const Tensor x = randn({4, 3}, 16);
  expect_close(vmap(grad([](const Tensor& v) { return sum(square(v)); }))(x), x * 2.0);
  expect_close(vmap(grad([](const Tensor& v) { return sum(stop_gradient(v) * v); }))(x), x);
  expect_close(vmap(jacfwd([](const Tensor& v) { return v * v; }))(x),
               vmap(jacrev([](const Tensor& v) { return v * v; }))(x));
  // d(v_i^2)/dv_j = 2 v_i delta_ij, per example.
  const std::vector<double> v = x.to_vector<double>();
  std::vector<double> want(4 * 3 * 3, 0.0);
  for (int b = 0; b < 4; ++b)
    for (int i = 0; i < 3; ++i) want[b * 9 + i * 3 + i] = 2 * v[b * 3 + i];
  expect_close(vmap(jacrev([](const Tensor& u) { return u * u; }))(x), tensor(want, {4, 3, 3}));
}

TEST(Autodiff, Errors) {
  std::string msg = error_of([] { grad([](const Tensor& v) { return v * 2.0; })(ones({3})); });
  EXPECT_NE(msg.find("0-d float"), std::string::npos) << msg;
  EXPECT_NE(msg.find("(3,)"), std::string::npos) << msg;
  msg = error_of([] {
    grad([](const Tensor& a, const Tensor& b) { return sum(a * b); }, 2)(ones({3}), ones({3}));
  });
  EXPECT_NE(msg.find("argnums 2"), std::string::npos) << msg;
}

TEST(Autodiff, ReluDerivativeAtZeroIsZeroAsInJax) {
  const Tensor x = tensor(std::vector<float>{-2.0f, 0.0f, 3.0f}, {3});
  const auto g = grad([](const Tensor& v) { return sum(relu(v)); })(x).to_vector<float>();
  EXPECT_EQ(g, (std::vector<float>{0.0f, 0.0f, 1.0f}));
  const float inf = std::numeric_limits<float>::infinity(), nan = std::nanf("");
  const auto y = relu(tensor(std::vector<float>{-inf, nan, inf, -0.5f}, {4})).to_vector<float>();
  EXPECT_EQ(y[0], 0.0f);
  EXPECT_TRUE(std::isnan(y[1]));
  EXPECT_EQ(y[2], inf);
  EXPECT_EQ(y[3], 0.0f);
}

// The backward pass computes no cotangent that nobody reads: grad with respect to x of
// pow(x, p) / c . W traces one product and no log for p, c or W (a Jacobian would otherwise
// trace them, and eager grad compute them). The values still match finite differences.
TEST(Autodiff, GradSkipsTheCotangentsOfUndifferentiatedInputs) {
  const Tensor w = tensor(std::vector<double>{0.5, -1.0, 2.0}, {3});
  const Tensor p = full({3}, 3.0, DType::Float64);
  auto f = [&](const Tensor& x) { return sum(matmul(pow(x, p) / 4.0, w)); };
  const Tensor x = tensor(std::vector<double>{1.0, 2.0, 0.5}, {3});
  int products = 0, logs = 0;
  for (const Node& n : make_graph(grad(f))(x).nodes) {
    products += n.prim->name() == "dot_general";
    logs += n.prim->name() == "log";
  }
  EXPECT_EQ(products, 1);  // the forward one; x's cotangent is a broadcast of w, no product
  EXPECT_EQ(logs, 0);
  // d/dx_i = 3 x_i^2 / 4 * w_i.
  const std::vector<double> xs = x.to_vector<double>(), ws = w.to_vector<double>();
  std::vector<double> want;
  for (int i = 0; i < 3; ++i) want.push_back(3 * xs[i] * xs[i] / 4 * ws[i]);
  expect_close(grad(f)(x), tensor(want, {3}));
}

// Integer values have no derivative: differentiating one is an error naming the argument and the
// dtypes (jax: "grad requires real-valued inputs ... but got int32"), never int zeros.
TEST(Autodiff, IntegerArgumentsAreDifferentiatedNowhere) {
  auto loss = [](const Tensor& w, const Tensor& labels) { return sum(w * cast(labels, kFloat32)); };
  const Tensor w = ones({3}), labels = tensor(std::vector<int32_t>{1, 2, 3});
  auto mentions = [](const std::string& msg, const std::vector<std::string>& parts) {
    for (const std::string& p : parts) EXPECT_NE(msg.find(p), std::string::npos) << msg;
  };
  mentions(error_of([&] { grad(loss, {0, 1})(w, labels); }), {"grad", "argument 1", "int32"});
  mentions(error_of([&] { value_and_grad(loss, {1})(w, labels); }), {"argument 1", "int32"});
  mentions(error_of([&] { grad([](const Tensor& i) { return sum(cast(i, kFloat64)); })(labels); }),
           {"argument 0", "int32", "float"});
  // Arguments outside argnums may be integers; the differentiated one gets its gradient.
  expect_close(std::get<0>(grad(loss, {0})(w, labels)), cast(labels, kFloat32));

  // The pullback takes one cotangent of its output's dtype and shape, never an undefined one.
  auto [y, back] = vjp([](const Tensor& v) { return v * 2.0; }, ones({2}));
  mentions(error_of([&] {
             back(tensor(std::vector<int32_t>{1, 1}));
           }),
           {"cotangent 0", "int32", "float32"});
  mentions(error_of([&] { back(Tensor()); }), {"cotangent 0", "undefined", "float32"});
  mentions(error_of([&] { back(ones({2}, kFloat64)); }), {"float64", "float32"});
  mentions(error_of([&] { back(ones({3})); }), {"(3,)", "(2,)"});
  expect_close(std::get<0>(back(ones({2}))), full({2}, 2.0));
  // An integer primal of vjp is allowed: its cotangent is zeros of its dtype.
  auto [z, back2] = vjp(loss, w, labels);
  const auto [dw, dlabels] = back2(scalar(1.0));
  expect_close(dw, cast(labels, kFloat32));
  EXPECT_EQ(dlabels.dtype(), kInt32);
  EXPECT_EQ(dlabels.to_vector<int32_t>(), (std::vector<int32_t>{0, 0, 0}));

  // jvp: a tangent of its primal's dtype; an integer primal takes none.
  auto f = [](const Tensor& v, const Tensor& i) { return v * cast(i, kFloat32); };
  mentions(
      error_of([&] {
        jvp(f, std::tuple{w, labels}, std::tuple{tensor(std::vector<int32_t>{1, 1, 1}), Tensor()});
      }),
      {"tangent 0", "int32", "float32"});
  mentions(error_of([&] {
             jvp(f, std::tuple{w, labels}, std::tuple{w, labels});
           }),
           {"primal 1", "int32", "no tangent"});
  mentions(error_of([&] {
             jvp(f, std::tuple{w, labels}, std::tuple{Tensor(), Tensor()});
           }),
           {"tangent 0", "undefined", "float32"});
  const auto [fy, ft] = jvp(f, std::tuple{w, labels}, std::tuple{full({3}, 0.5), Tensor()});
  expect_close(ft, cast(labels, kFloat32) * 0.5);
}

// hvp against the Hessian times v (float64), and batch_jacobian against per-example jacrev.
TEST(AutodiffExtras, HvpAndBatchJacobian) {
  using lanes::Tensor;
  auto f = [](const Tensor& x) { return lanes::sum(lanes::sin(x) * x * x); };
  const Tensor x = lanes::tensor(std::vector<double>{0.3, -1.2, 2.0}, {3});
  const Tensor v = lanes::tensor(std::vector<double>{1.0, 0.5, -2.0}, {3});
  // d2/dx2 of sin(x) x^2 = (2 - x^2) sin x + 4 x cos x, diagonal.
  const auto xv = x.to_vector<double>(), vv = v.to_vector<double>();
  const auto got = lanes::hvp(f)(x, v).to_vector<double>();
  for (int i = 0; i < 3; ++i) {
    const double h = (2 - xv[i] * xv[i]) * std::sin(xv[i]) + 4 * xv[i] * std::cos(xv[i]);
    EXPECT_NEAR(got[i], h * vv[i], 1e-12) << i;
  }
  const Tensor w = lanes::tensor(std::vector<double>{1, 2, 3, 4, 5, 6}, {3, 2});
  auto layer = [w](const Tensor& xs) { return lanes::tanh(lanes::matmul(xs, w)); };  // (B,3)->(B,2)
  const Tensor xs = lanes::tensor(std::vector<double>{0.1, 0.2, -0.3, 0.0, 0.5, -0.1}, {2, 3});
  const Tensor j = lanes::batch_jacobian(layer)(xs);
  ASSERT_EQ(j.shape(), (lanes::Shape{2, 2, 3}));
  const auto jv = j.to_vector<double>(), x2 = xs.to_vector<double>(), wv = w.to_vector<double>();
  for (int b = 0; b < 2; ++b)
    for (int o = 0; o < 2; ++o) {
      double z = 0;
      for (int i = 0; i < 3; ++i) z += x2[b * 3 + i] * wv[i * 2 + o];
      for (int i = 0; i < 3; ++i)  // d tanh(z_o) / d x_i = (1 - tanh^2 z_o) w[i, o]
        EXPECT_NEAR(jv[(b * 2 + o) * 3 + i], (1 - std::tanh(z) * std::tanh(z)) * wv[i * 2 + o],
                    1e-12);
    }
}

// has_aux: the auxiliary outputs come back beside the gradient, unmodified, also under vmap.
TEST(AutodiffExtras, HasAux) {
  using lanes::Tensor;
  auto f = [](const Tensor& w, const Tensor& x) {
    const Tensor pred = w * x;
    return std::make_pair(lanes::sum(pred * pred), std::make_tuple(pred, lanes::max(pred)));
  };
  const Tensor w = lanes::tensor(std::vector<double>{1, -2}, {2});
  const Tensor x = lanes::tensor(std::vector<double>{3, 0.5}, {2});
  auto [g, aux] = lanes::grad(f, lanes::has_aux)(w, x);
  EXPECT_EQ(g.to_vector<double>(), (std::vector<double>{2 * 3 * 3, 2 * -2 * 0.25}));
  EXPECT_EQ(std::get<0>(aux).to_vector<double>(), (std::vector<double>{3, -1}));
  EXPECT_EQ(std::get<1>(aux).item<double>(), 3);
  auto [value_aux, grads] = lanes::value_and_grad(f, {0, 1}, lanes::has_aux)(w, x);
  EXPECT_EQ(value_aux.first.item<double>(), 9 + 1);
  EXPECT_EQ(std::get<1>(grads).to_vector<double>(), (std::vector<double>{2 * 3 * 1, 2 * -1 * -2}));
  // Per-example: w shared, x mapped.
  const Tensor xs = lanes::tensor(std::vector<double>{3, 0.5, 1, 1}, {2, 2});
  auto per = lanes::vmap(lanes::grad(f, lanes::has_aux), lanes::in_axes(lanes::none, 0));
  auto [gs, auxs] = per(w, xs);
  EXPECT_EQ(gs.to_vector<double>(), (std::vector<double>{18, -1, 2, -4}));
  EXPECT_EQ(std::get<1>(auxs).to_vector<double>(), (std::vector<double>{3, 1}));
}

// jacrev/jacfwd over a list of argnums (one Jacobian per argument, f traced once) and hessian's
// nested blocks, against the analytic derivatives of f(x, y) = sum(x^2 y) + sum(sin(x)) y_0.
TEST(AutodiffExtras, JacobiansAndHessianOverArgnumLists) {
  using lanes::Tensor;
  const Tensor x = lanes::tensor(std::vector<double>{0.3, -1.2, 2.0}, {3});
  const Tensor y = lanes::tensor(std::vector<double>{1.5, -0.5, 0.25}, {3});
  auto vec = [](const Tensor& x, const Tensor& y) { return x * x * y; };  // elementwise
  const auto jac = lanes::jacrev(vec, {0, 1});
  for (int call = 0; call < 3; ++call) {  // the later calls from the Jacobian's cache
    const std::vector<Tensor> j = jac(x, y);
    ASSERT_EQ(j.size(), 2u);
    const auto jx = j[0].to_vector<double>(), jy = j[1].to_vector<double>();
    for (int r = 0; r < 3; ++r)
      for (int c = 0; c < 3; ++c) {
        const double xv = x.to_vector<double>()[c], yv = y.to_vector<double>()[c];
        EXPECT_NEAR(jx[r * 3 + c], r == c ? 2 * xv * yv : 0.0, 1e-12);
        EXPECT_NEAR(jy[r * 3 + c], r == c ? xv * xv : 0.0, 1e-12);
      }
  }
  const std::vector<Tensor> jf = lanes::jacfwd(vec, {1, 0})(x, y);  // in the order asked
  EXPECT_EQ(jf[0].to_vector<double>(), lanes::jacrev(vec, 1)(x, y).to_vector<double>());
  auto f = [](const Tensor& x, const Tensor& y) {
    return lanes::sum(x * x * y) + lanes::sum(lanes::sin(x)) * y[0];
  };
  const auto h = lanes::hessian(f, {0, 1})(x, y);
  ASSERT_EQ(h.size(), 2u);
  ASSERT_EQ(h[0].size(), 2u);
  const auto xv = x.to_vector<double>(), yv = y.to_vector<double>();
  for (int i = 0; i < 3; ++i)
    for (int k = 0; k < 3; ++k) {
      // d2f/dx_i dx_k = (2 y_i - sin(x_i) y_0) [i == k]; d2f/dx_i dy_k = 2 x_i [i == k] +
      // cos(x_i) [k == 0]; d2f/dy dy = 0.
      const double xx = i == k ? 2 * yv[i] - std::sin(xv[i]) * yv[0] : 0.0;
      const double xy = (i == k ? 2 * xv[i] : 0.0) + (k == 0 ? std::cos(xv[i]) : 0.0);
      EXPECT_NEAR(h[0][0].to_vector<double>()[i * 3 + k], xx, 1e-12);
      EXPECT_NEAR(h[0][1].to_vector<double>()[i * 3 + k], xy, 1e-12);
      EXPECT_NEAR(h[1][0].to_vector<double>()[k * 3 + i], xy, 1e-12);  // the transpose
      EXPECT_NEAR(h[1][1].to_vector<double>()[i * 3 + k], 0.0, 1e-12);
    }
  EXPECT_THROW(lanes::jacrev(vec, {0, 2})(x, y), lanes::Error);
}
