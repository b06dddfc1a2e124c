// Control flow under vmap: a Newton solve whose examples each stop on their own, and the
// gradient of a branch that only some examples take.
#include <iostream>

#include "tour.h"

namespace tour {

using lanes::Tensor;

namespace {
// sqrt(a) by Newton's iteration, until |x^2 - a| <= 1e-12 a: 3 to 30 steps depending on a.
Tensor newton_sqrt(const Tensor& a) {
  return lanes::while_loop([&](const Tensor& x) { return lanes::abs(x * x - a) > a * 1e-12; },
                           [&](const Tensor& x) { return (x + a / x) * 0.5; }, a + 1.0);
}
}  // namespace

void control_flow() {
  // 16384 examples over 12 orders of magnitude: each lane runs its own trip count.
  const Tensor a = lanes::exp(
      lanes::random::uniform(lanes::random::key(9), {16384}, -4.0, 8.0, lanes::DType::Float64) *
      std::log(10.0));
  Tensor roots, want;
  const double loop_ms = median_ms(
      [&] {
        std::vector<Tensor> out;
        for (int64_t i = 0; i < a.shape(0); ++i) out.push_back(newton_sqrt(a[i]));
        want = lanes::stack(out);
      },
      1);
  const auto batched = lanes::compile(lanes::vmap(newton_sqrt));
  const double vmap_ms = median_ms([&] { roots = batched(a); });
  report("Newton sqrt (while_loop)", roots, max_abs_diff(roots, want), loop_ms, vmap_ms);

  // sqrt where x > 0, else 0: per-example gradients with no NaN from the untaken branch
  // (jax's select gives NaN at x < 0).
  auto safe_sqrt = [](const Tensor& x) {
    return lanes::cond(
        x > 0.0, [](const Tensor& v) { return lanes::sqrt(v); },
        [](const Tensor& v) { return v * 0.0; }, x);
  };
  const Tensor xs = lanes::tensor(std::vector<double>{-1, 4, 9}, {3});
  std::cout << "vmap(grad(cond(x > 0, sqrt, 0)))" << xs << " = "
            << lanes::vmap(lanes::grad(safe_sqrt))(xs) << "\n";
  std::cout << "\nwhat vmap made of the Newton solve:\n"
            << lanes::explain(lanes::vmap(newton_sqrt), lanes::slice_axis(a, 0, 0, 8)) << "\n";
}

}  // namespace tour
