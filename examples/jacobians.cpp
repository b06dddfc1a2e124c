// Jacobians and Hessians by composing vmap with autodiff, and model ensembling.
#include "tour.h"

namespace tour {

using lanes::Tensor;

void jacobian() {
  // The Jacobian (256, 256) of W2 tanh(W1 x + b1) at one x: one vmap of a vjp over the rows of
  // the identity, versus one vjp per row.
  const auto k = lanes::random::split(lanes::random::key(5), 3);
  const Tensor w1 = lanes::random::normal(k[0], {256, 256}) * 0.06;
  const Tensor w2 = lanes::random::normal(k[1], {256, 256}) * 0.06;
  const Tensor x = lanes::random::normal(k[2], {256});
  auto f = [&](const Tensor& v) { return lanes::matmul(w2, lanes::tanh(lanes::matmul(w1, v))); };
  Tensor jac, want;
  const double loop_ms = median_ms(
      [&] {
        auto [y, back] = lanes::vjp(f, x);
        std::vector<Tensor> rows;
        const Tensor eye = lanes::eye(256);
        for (int64_t i = 0; i < 256; ++i) rows.push_back(std::get<0>(back(example(eye, i))));
        want = lanes::stack(rows);
      },
      3);
  const double vmap_ms = median_ms([&] { jac = lanes::jacrev(f)(x); }, 3);
  report("Jacobian (jacrev)", jac, max_abs_diff(jac, want), loop_ms, vmap_ms);
  Tensor fwd;
  const double fwd_ms = median_ms([&] { fwd = lanes::jacfwd(f)(x); }, 3);
  report("Jacobian (jacfwd)", fwd, max_abs_diff(fwd, want), loop_ms, fwd_ms);
}

void hessian() {
  // The Hessian (128, 128) of sum(tanh(W x)): jacfwd(jacrev(f)) versus one gradient-of-gradient
  // per row.
  const Tensor w = lanes::random::normal(lanes::random::key(6), {128, 128}) * 0.1;
  const Tensor x = lanes::random::normal(lanes::random::key(7), {128});
  auto f = [&](const Tensor& v) { return lanes::sum(lanes::tanh(lanes::matmul(w, v))); };
  Tensor h, want;
  const double loop_ms = median_ms(
      [&] {
        std::vector<Tensor> rows;
        for (int64_t i = 0; i < 128; ++i) {
          auto gi = [&](const Tensor& v) {
            return lanes::sum(lanes::grad(f)(v) * example(lanes::eye(128), i));
          };
          rows.push_back(lanes::grad(gi)(x));
        }
        want = lanes::stack(rows);
      },
      3);
  const double vmap_ms = median_ms([&] { h = lanes::hessian(f)(x); }, 3);
  report("Hessian", h, max_abs_diff(h, want), loop_ms, vmap_ms);
}

void ensemble() {
  // 8 MLPs 64-128-10 (relu) with stacked parameters, all applied to one unbatched input.
  const auto k = lanes::random::split(lanes::random::key(8), 3);
  const Tensor w1 = lanes::random::normal(k[0], {8, 64, 128}) * 0.1;
  const Tensor w2 = lanes::random::normal(k[1], {8, 128, 10}) * 0.1;
  const Tensor x = lanes::random::normal(k[2], {512, 64});
  auto model = [&](const Tensor& a, const Tensor& b) {
    return lanes::matmul(lanes::relu(lanes::matmul(x, a)), b);
  };
  Tensor out, want;
  const double loop_ms = median_ms([&] {
    std::vector<Tensor> outs;
    for (int64_t i = 0; i < 8; ++i) outs.push_back(model(example(w1, i), example(w2, i)));
    want = lanes::stack(outs);
  });
  const double vmap_ms = median_ms([&] { out = lanes::vmap(model)(w1, w2); });
  report("ensemble of 8 MLPs", out, max_abs_diff(out, want), loop_ms, vmap_ms);
}

}  // namespace tour
