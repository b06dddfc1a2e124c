// What a custom rule costs: per-example clipped gradients of a small MLP (DP-SGD's inner step)
// with the clipping written as a custom_vjp on the parameters, against the same step written by
// hand (per-example gradients, then their norms and the scaling); and a custom_jvp softplus
// against the plain one. Both pairs compute the same numbers (printed), so the ratio is the
// overhead of going through the custom rule. Run: build/bench/custom_rules [--threads N]
#include <lanes/lanes.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace {

using lanes::Tensor;
using Params = std::pair<Tensor, Tensor>;

template <class Fn>
double median_ms(Fn&& fn, int runs) {
  for (int i = 0; i < 3; ++i) fn();
  std::vector<double> t;
  for (int i = 0; i < runs; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    fn();
    t.push_back(
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  std::nth_element(t.begin(), t.begin() + t.size() / 2, t.end());
  return t[t.size() / 2];
}

constexpr double kClip = 1.0;

// The joint norm of a per-example gradient (a pair of tensors) scaled down to kClip.
Params clip_pair(const Tensor& a, const Tensor& b) {
  const Tensor norm = lanes::sqrt(lanes::sum(a * a) + lanes::sum(b * b));
  const Tensor scale = lanes::minimum(lanes::as_weak(1.0, norm), kClip / norm);
  return {a * scale, b * scale};
}

const auto clip_gradient =
    lanes::custom_vjp([](const Params& p) { return p; },
                      [](const Params& p) { return std::make_pair(p, std::tuple<>{}); },
                      [](const std::tuple<>&, const Params& ct) {
                        return std::make_tuple(clip_pair(ct.first, ct.second));
                      });

Tensor mlp_loss(const Params& p, const Tensor& x, const Tensor& y) {
  const Tensor h = lanes::tanh(lanes::matmul(x, p.first));
  return lanes::l2_loss(lanes::matmul(h, p.second) - y);
}

Tensor softplus_plain(const Tensor& x) {
  return lanes::where(x > 30.0, x, lanes::log1p(lanes::exp(x)));
}
const auto softplus = lanes::custom_jvp(softplus_plain, [](const auto& p, const auto& t) {
  const Tensor& x = std::get<0>(p);
  return std::make_pair(softplus_plain(x), std::get<0>(t) * lanes::sigmoid(x));
});

double max_diff(const Tensor& a, const Tensor& b) {
  return lanes::max(lanes::abs(a - b)).item<double>();
}

}  // namespace

int main(int argc, char** argv) {
  for (int i = 1; i + 1 < argc; ++i)
    if (std::strcmp(argv[i], "--threads") == 0) lanes::set_num_threads(std::atoi(argv[i + 1]));
  const int64_t B = 256, D = 64, H = 128, O = 10;
  const auto keys = lanes::random::split(lanes::random::key(7), 4);
  const Params p{lanes::random::normal(keys[0], {D, H}) * 0.1,
                 lanes::random::normal(keys[1], {H, O}) * 0.1};
  const Tensor xs = lanes::random::normal(keys[2], {B, D});
  const Tensor ys = lanes::random::normal(keys[3], {B, O});

  auto with_rule = [](const Params& q, const Tensor& x, const Tensor& y) {
    return mlp_loss(clip_gradient(q), x, y);
  };
  const auto rule_step =
      lanes::compile(lanes::vmap(lanes::grad(with_rule), lanes::in_axes(lanes::none, 0, 0)));
  const auto per_example = lanes::vmap(lanes::grad(mlp_loss), lanes::in_axes(lanes::none, 0, 0));
  const auto manual_step = lanes::compile([&](const Params& q, const Tensor& x, const Tensor& y) {
    const Params g = per_example(q, x, y);
    return lanes::vmap([](const Tensor& a, const Tensor& b) { return clip_pair(a, b); })(g.first,
                                                                                         g.second);
  });
  const Params a = rule_step(p, xs, ys), b = manual_step(p, xs, ys);
  std::printf("per-example clipped gradients, MLP %lldx%lldx%lld, batch %lld (median ms)\n",
              (long long)D, (long long)H, (long long)O, (long long)B);
  const Params raw = per_example(p, xs, ys);
  const Tensor norms = lanes::sqrt(lanes::sum(raw.first * raw.first, lanes::Axes{1, 2}) +
                                   lanes::sum(raw.second * raw.second, lanes::Axes{1, 2}));
  std::printf(
      "  examples whose gradient norm exceeds %.1f (clipped): %lld of %lld\n", kClip,
      (long long)lanes::sum(lanes::cast(norms > kClip, lanes::DType::Int32)).item<int32_t>(),
      (long long)B);
  std::printf("  max |custom_vjp - manual| = %.3g\n",
              std::max(max_diff(a.first, b.first), max_diff(a.second, b.second)));
  const double t_rule = median_ms([&] { return rule_step(p, xs, ys); }, 51);
  const double t_manual = median_ms([&] { return manual_step(p, xs, ys); }, 51);
  std::printf("  compile(vmap(grad)), clipping by custom_vjp  %8.3f\n", t_rule);
  std::printf("  compile, per-example grads then clipping     %8.3f\n", t_manual);
  std::printf("  ratio custom / manual                        %8.3f\n", t_rule / t_manual);

  const Tensor zs = lanes::random::normal(keys[0], {B, 1024}) * 10.0;
  const auto custom_grad = lanes::compile(
      lanes::vmap(lanes::grad([](const Tensor& z) { return lanes::sum(softplus(z)); })));
  const auto plain_grad = lanes::compile(
      lanes::vmap(lanes::grad([](const Tensor& z) { return lanes::sum(softplus_plain(z)); })));
  std::printf("softplus gradients, (%lld, 1024) float32\n", (long long)B);
  std::printf("  max |custom_jvp - plain| = %.3g\n", max_diff(custom_grad(zs), plain_grad(zs)));
  const double t_custom = median_ms([&] { return custom_grad(zs); }, 101);
  const double t_plain = median_ms([&] { return plain_grad(zs); }, 101);
  std::printf("  compile(vmap(grad)), custom_jvp rule  %8.3f\n", t_custom);
  std::printf("  compile(vmap(grad)), plain            %8.3f\n", t_plain);
  std::printf("  ratio custom / plain                  %8.3f\n", t_custom / t_plain);
  // Eager calls trace f and the rules on every call (as an eager cond traces its branches):
  // the price of a custom function outside vmap and compile.
  const Tensor small = lanes::random::normal(keys[1], {1024});
  const double t_eager_custom = median_ms([&] { return softplus(small); }, 2001) * 1e3;
  const double t_eager_plain = median_ms([&] { return softplus_plain(small); }, 2001) * 1e3;
  const double t_eager_vjp = median_ms([&] { return clip_gradient(p); }, 2001) * 1e3;
  std::printf("eager calls, (1024,) float32 (median us)\n");
  std::printf("  softplus, custom_jvp          %8.1f\n", t_eager_custom);
  std::printf("  softplus, plain               %8.1f\n", t_eager_plain);
  std::printf("  clip_gradient (custom_vjp)    %8.1f\n", t_eager_vjp);
  return 0;
}
