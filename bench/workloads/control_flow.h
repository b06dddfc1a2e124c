// Control-flow workloads (the "Control flow" section of WORKLOADS.md): piecewise10, piecewise50,
// newton_sqrt, mandelbrot, power_iter, rnn_scan, ode_rk4.
//
// The per-example functions use lanes::cond and lanes::while_loop with a predicate that differs
// per example, so vmap turns them into lane nodes run by a strategy: select or partition for a
// cond, mask or compact for a loop, Auto choosing at run time. Besides loop, vmap (Auto),
// vmap+compile and manual, every workload times each strategy forced, as vmap:NAME and
// vmap+compile:NAME. The manual variants are hand-batched lanes code: masked `where` loops over
// the whole batch until every example is done, gathering and scattering by hand.
#pragma once

#include <numeric>
#include <string>
#include <tuple>
#include <utility>

#include "harness.h"
#include "per_example.h"

namespace workloads {

/// A forced vmap strategy: the suffix of its variants' names and the options that force it.
struct Strategy {
  std::string name;
  lanes::VmapOptions options;
};

inline std::vector<Strategy> cond_strategies() {
  lanes::VmapOptions select, partition;
  select.cond = lanes::CondStrategy::Select;
  partition.cond = lanes::CondStrategy::Partition;
  return {{"select", select}, {"partition", partition}};
}

inline std::vector<Strategy> loop_strategies() {
  lanes::VmapOptions mask, compact;
  mask.loop = lanes::LoopStrategy::Mask;
  compact.loop = lanes::LoopStrategy::Compact;
  return {{"mask", mask}, {"compact", compact}};
}

/// vmap, vmap+compile, then vmap:NAME and vmap+compile:NAME for each strategy, of f over `args`
/// mapped as `axes` says.
template <class F, class... Args>
std::vector<Variant> strategy_variants(const F& f, const lanes::AxisSpec& axes,
                                       const std::vector<Strategy>& strategies,
                                       const Args&... args) {
  std::vector<Variant> variants;
  auto add = [&](const std::string& suffix, const lanes::VmapOptions& options) {
    auto batched = lanes::vmap(f, axes, 0, options);
    auto compiled = lanes::compile(batched);
    variants.push_back({"vmap" + suffix, [=] { return leaves(batched(args...)); }});
    variants.push_back({"vmap+compile" + suffix, [=] { return leaves(compiled(args...)); }});
  };
  add("", {});
  for (const Strategy& s : strategies) add(":" + s.name, s.options);
  return variants;
}

/// Whether any element of a bool tensor is true (the host-side test of a hand-written loop).
inline bool any(const Tensor& active) {
  return lanes::sum(lanes::cast(active, lanes::kFloat32)).item<float>() > 0;
}

/// The positions where a bool vector is true, and where it is false, as int32 index tensors.
inline std::pair<Tensor, Tensor> split_indices(const Tensor& pred) {
  const std::vector<int32_t> flags = lanes::cast(pred, lanes::kInt32).to_vector<int32_t>();
  std::vector<int32_t> yes, no;
  for (int32_t i = 0; i < int32_t(flags.size()); ++i) (flags[i] ? yes : no).push_back(i);
  return {lanes::tensor(yes), lanes::tensor(no)};
}

// ---- newton_sqrt --------------------------------------------------------------------------------

/// sqrt(a) by Newton's iteration from x = a + 1 until |x^2 - a| <= 1e-12 a (float64).
inline Tensor newton_sqrt_one(const Tensor& a) {
  return lanes::while_loop([a](const Tensor& x) { return lanes::abs(x * x - a) > a * 1e-12; },
                           [a](const Tensor& x) { return (x + a / x) * 0.5; }, a + 1.0);
}

inline std::vector<Variant> newton_sqrt() {
  const int64_t batch = 65536;
  // a = 10^U(-4, 8): 2 to 20 or so iterations depending on the magnitude.
  const Tensor a = lanes::pow(
      lanes::scalar(10.0, lanes::kFloat64),
      lanes::random::uniform(lanes::random::key(50), {batch}, -4.0, 8.0, lanes::kFloat64));
  inputs({{"a", a}});
  param("rtol", 1e-12);
  std::vector<Variant> variants{
      {"loop", [=] { return loop_stack(batch, [&](int64_t i) { return newton_sqrt_one(a[i]); }); },
       /*once=*/true}};
  for (Variant& v : strategy_variants([](const Tensor& x) { return newton_sqrt_one(x); }, 0,
                                      loop_strategies(), a))
    variants.push_back(std::move(v));
  // A masked loop over the whole batch: every lane steps until all have converged, a converged
  // lane keeping its x (so its test stays false).
  variants.push_back({"manual", [=] {
                        Tensor x = a + 1.0;
                        Tensor active = lanes::abs(x * x - a) > a * 1e-12;
                        while (any(active)) {
                          x = lanes::where(active, (x + a / x) * 0.5, x);
                          active = lanes::abs(x * x - a) > a * 1e-12;
                        }
                        return leaves(x);
                      }});
  return variants;
}

// ---- mandelbrot ---------------------------------------------------------------------------------

/// The escape count of c = (cr, ci): z = z^2 + c from 0 while |z| <= 2 and n < 256 (float32).
inline Tensor mandelbrot_one(const Tensor& cr, const Tensor& ci) {
  using C = std::tuple<Tensor, Tensor, Tensor>;  // re z, im z, n
  const C out = lanes::while_loop(
      [](const C& c) {
        const auto& [zr, zi, n] = c;
        return lanes::logical_and(zr * zr + zi * zi <= 4.0, n < 256);
      },
      [cr, ci](const C& c) {
        const auto& [zr, zi, n] = c;
        return C(zr * zr - zi * zi + cr, zr * zi * 2.0 + ci, n + 1);
      },
      C(lanes::scalar(0.0), lanes::scalar(0.0), lanes::scalar(0, lanes::kInt32)));
  return std::get<2>(out);
}

inline std::vector<Variant> mandelbrot() {
  const int64_t side = 128, batch = side * side;
  // Row-major 128x128 grid: re c over [-2, 0.5] along a row, im c over [-1.25, 1.25] down.
  const Tensor cr = lanes::reshape(
      lanes::broadcast_to(lanes::arange(side) * (2.5 / (side - 1)) - 2.0, {side, side}), {batch});
  const Tensor ci = lanes::reshape(
      lanes::broadcast_to(
          lanes::reshape(lanes::arange(side) * (2.5 / (side - 1)) - 1.25, {side, 1}), {side, side}),
      {batch});
  inputs({{"cr", cr}, {"ci", ci}});
  param("max_iter", 256);
  std::vector<Variant> variants{
      {"loop",
       [=] { return loop_stack(batch, [&](int64_t i) { return mandelbrot_one(cr[i], ci[i]); }); },
       /*once=*/true}};
  for (Variant& v :
       strategy_variants([](const Tensor&r, const Tensor&i) { return mandelbrot_one(r, i); }, 0,
                         loop_strategies(), cr, ci))
    variants.push_back(std::move(v));
  // Masked loop: the same arithmetic on every lane, kept only where the lane is still running.
  variants.push_back({"manual", [=] {
                        Tensor zr = lanes::zeros({batch}), zi = lanes::zeros({batch});
                        Tensor n = lanes::zeros({batch}, lanes::kInt32);
                        auto running = [&] {
                          return lanes::logical_and(zr * zr + zi * zi <= 4.0, n < 256);
                        };
                        for (Tensor active = running(); any(active); active = running()) {
                          const Tensor zr_next = zr * zr - zi * zi + cr;
                          zi = lanes::where(active, zr * zi * 2.0 + ci, zi);
                          zr = lanes::where(active, zr_next, zr);
                          n = lanes::where(active, n + 1, n);
                        }
                        return leaves(n);
                      }});
  return variants;
}

// ---- piecewise10, piecewise50 ------------------------------------------------------------------

/// The four 256x256 layers of mlp4: v -> tanh(w v), four times.
struct Mlp4 {
  Tensor w1, w2, w3, w4;
};

}  // namespace workloads

LANES_TREE(workloads::Mlp4, w1, w2, w3, w4)

namespace workloads {

inline Tensor mlp4(const Mlp4& w, const Tensor& v) {
  Tensor h = v;
  for (const Tensor* wk : {&w.w1, &w.w2, &w.w3, &w.w4}) h = lanes::tanh(lanes::matmul(*wk, h));
  return h;
}

/// cond(x[0] > threshold, mlp4, half, x), the weights passed (not captured) so vmap's cache
/// applies.
inline Tensor piecewise_one(const Mlp4& w, const Tensor& x, double threshold) {
  return lanes::cond(
      x[0] > threshold, [](const Mlp4& p, const Tensor& v) { return mlp4(p, v); },
      [](const Mlp4&, const Tensor& v) { return v * 0.5; }, w, x);
}

/// piecewise10 (threshold 1.2816, the 90th percentile of a standard normal) and piecewise50
/// (threshold 0).
inline std::vector<Variant> piecewise(double threshold) {
  const int64_t batch = 1024, n = 256;
  const double scale = 1 / std::sqrt(double(n));
  const Mlp4 w{normal(60, {n, n}, scale), normal(61, {n, n}, scale), normal(62, {n, n}, scale),
               normal(63, {n, n}, scale)};
  const Tensor x = normal(64, {batch, n});
  inputs({{"w1", w.w1}, {"w2", w.w2}, {"w3", w.w3}, {"w4", w.w4}, {"x", x}});
  param("threshold", threshold);
  auto f = [threshold](const Mlp4& p, const Tensor& v) { return piecewise_one(p, v, threshold); };
  std::vector<Variant> variants{
      {"loop", [=] { return loop_stack(batch, [&](int64_t i) { return f(w, x[i]); }); }}};
  for (Variant& v : strategy_variants(f, lanes::in_axes(lanes::none, 0), cond_strategies(), w, x))
    variants.push_back(std::move(v));
  // By hand: gather the rows that take mlp4 and run it on them as one (m, 256) batch (rows times
  // the transposed weights, transposed once here), then scatter them into the halved batch whose
  // rows at those positions are zeroed.
  const Mlp4 wt{lanes::transpose(w.w1).contiguous(), lanes::transpose(w.w2).contiguous(),
                lanes::transpose(w.w3).contiguous(), lanes::transpose(w.w4).contiguous()};
  variants.push_back({"manual", [=] {
                        const Tensor pred =
                            lanes::squeeze(lanes::slice_axis(x, 1, 0, 1), 1) > threshold;
                        const Tensor taken = split_indices(pred).first;
                        const Tensor keep =
                            1.0 - lanes::expand_dims(lanes::cast(pred, lanes::kFloat32), 1);
                        Tensor out = x * 0.5 * keep;
                        if (taken.numel() == 0) return leaves(out);
                        Tensor h = lanes::take(x, taken, 0);
                        for (const Tensor* wk : {&wt.w1, &wt.w2, &wt.w3, &wt.w4})
                          h = lanes::tanh(lanes::matmul(h, *wk));
                        return leaves(lanes::scatter_add(out, taken, h, 0));
                      }});
  return variants;
}

inline std::vector<Variant> piecewise10() { return piecewise(1.2816); }
inline std::vector<Variant> piecewise50() { return piecewise(0.0); }

// ---- power_iter ---------------------------------------------------------------------------------

/// The dominant eigenpair of a symmetric a by power iteration from v0 (unit norm): while
/// |a v - (v^T a v) v| > 1e-4 and k < 2000, v = a v / |a v|. Returns (v^T a v, v). The carry holds
/// a v too, so each step multiplies by a once, as the hand-written loops do.
inline std::tuple<Tensor, Tensor> power_iter_one(const Tensor& a, const Tensor& v0) {
  using C = std::tuple<Tensor, Tensor, Tensor>;  // v, a v, k
  const C out = lanes::while_loop(
      [](const C& c) {
        const auto& [v, av, k] = c;
        const Tensor r = av - lanes::dot(v, av) * v;
        return lanes::logical_and(lanes::sqrt(lanes::sum(r * r)) > 1e-4, k < 2000);
      },
      [a](const C& c) {
        const auto& [v, av, k] = c;
        const Tensor next = av / lanes::sqrt(lanes::sum(av * av));
        return C(next, lanes::matmul(a, next), k + 1);
      },
      C(v0, lanes::matmul(a, v0), lanes::scalar(0, lanes::kInt32)));
  const auto& [v, av, k] = out;
  return {lanes::dot(v, av), v};
}

/// a v for every example: (B, n, n) and (B, n) -> (B, n).
inline Tensor batched_matvec(const Tensor& a, const Tensor& v) {
  return lanes::dot_general(a, v, {{2}, {1}, {0}, {0}});
}

inline std::vector<Variant> power_iter() {
  const int64_t batch = 128, n = 128;
  // A = H diag(lambda) H with H = I - 2 u u^T / u^T u: lambda = (1, r, 0.95 r, 0.95^2 r, ...),
  // r = 0.98 for every tenth example (about 460 steps to converge) and 0.5 otherwise (about 14).
  std::vector<float> lambda(batch * n);
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t i = 0; i < n; ++i)
      lambda[b * n + i] = i == 0 ? 1.0f : float((b % 10 == 0 ? 0.98 : 0.5) * std::pow(0.95, i - 1));
  const Tensor u = normal(70, {batch, n});
  const Tensor uu = lanes::expand_dims(u, 2) * lanes::expand_dims(u, 1);  // (B, n, n)
  const Tensor h = lanes::eye(n) - uu * lanes::reshape(2.0 / lanes::sum(u * u, 1), {batch, 1, 1});
  const Tensor a = lanes::dot_general(h * lanes::expand_dims(lanes::tensor(lambda, {batch, n}), 1),
                                      h, {{2}, {1}, {0}, {0}})
                       .contiguous();
  const Tensor g = normal(71, {batch, n});
  const Tensor v0 = (g / lanes::expand_dims(lanes::sqrt(lanes::sum(g * g, 1)), 1)).contiguous();
  inputs({{"a", a}, {"v0", v0}});
  param("tol", 1e-4);
  param("max_steps", 2000);
  auto f = [](const Tensor& m, const Tensor& v) { return power_iter_one(m, v); };
  std::vector<Variant> variants{
      {"loop", [=] { return loop_stack(batch, [&](int64_t i) { return f(a[i], v0[i]); }); }}};
  for (Variant& v : strategy_variants(f, 0, loop_strategies(), a, v0))
    variants.push_back(std::move(v));
  // One step's test on a batch: a v, the Rayleigh quotient v^T a v, and whether the residual is
  // still above the tolerance (k < 2000 is a host-side count, the same for every lane running).
  struct Test {
    Tensor av, lambda, running;
  };
  auto test = [](const Tensor& m, const Tensor& v) {
    const Tensor av = batched_matvec(m, v);
    const Tensor lam = lanes::sum(v * av, 1);
    const Tensor r = av - lanes::expand_dims(lam, 1) * v;
    return Test{av, lam, lanes::sqrt(lanes::sum(r * r, 1)) > 1e-4};
  };
  auto normalized = [](const Tensor& av) {
    return av / lanes::expand_dims(lanes::sqrt(lanes::sum(av * av, 1)), 1);
  };
  // By hand, compacting: whenever some examples converge, record their (lambda, v) and gather
  // the rest (their matrices included) into a smaller batch; the pieces are put back in order
  // at the end by one gather.
  variants.push_back(
      {"manual", [=] {
         Tensor m = a, v = v0;
         std::vector<int32_t> alive(batch);
         std::iota(alive.begin(), alive.end(), 0);
         std::vector<Tensor> lambdas, vs;
         std::vector<int32_t> order;  // the example of each row of the concatenated pieces
         for (int k = 0;; ++k) {
           const Test t = test(m, v);
           const std::vector<int32_t> flags =
               lanes::cast(t.running, lanes::kInt32).to_vector<int32_t>();
           std::vector<int32_t> go, done;  // rows of the current batch
           for (int32_t r = 0; r < int32_t(flags.size()); ++r)
             (flags[r] && k < 2000 ? go : done).push_back(r);
           if (!done.empty()) {
             const Tensor idx = lanes::tensor(done);
             lambdas.push_back(lanes::take(t.lambda, idx, 0));
             vs.push_back(lanes::take(v, idx, 0));
             for (int32_t r : done) order.push_back(alive[r]);
           }
           if (go.empty()) break;
           Tensor av = t.av;
           if (!done.empty()) {
             std::vector<int32_t> next;
             for (int32_t r : go) next.push_back(alive[r]);
             alive = next;
             const Tensor idx = lanes::tensor(go);
             m = lanes::take(m, idx, 0);
             v = lanes::take(v, idx, 0);
             av = lanes::take(av, idx, 0);
           }
           v = normalized(av);
         }
         std::vector<int32_t> inverse(batch);
         for (int32_t i = 0; i < int32_t(order.size()); ++i) inverse[order[i]] = i;
         const Tensor back = lanes::tensor(inverse);
         return leaves(std::make_tuple(lanes::take(lanes::concatenate(lambdas, 0), back, 0),
                                       lanes::take(lanes::concatenate(vs, 0), back, 0)));
       }});
  // By hand, masked: every example steps until all have converged, a converged one keeping v.
  variants.push_back({"manual:mask", [=] {
                        Tensor v = v0;
                        Test t = test(a, v);
                        for (int k = 0; k < 2000 && any(t.running); ++k) {
                          v = lanes::where(lanes::expand_dims(t.running, 1), normalized(t.av), v);
                          t = test(a, v);
                        }
                        return leaves(std::make_tuple(t.lambda, v));
                      }});
  return variants;
}

// ---- rnn_scan -----------------------------------------------------------------------------------

/// One LSTM step (gates i, f, g, o side by side in the 4n columns) from (h, c) on input x.
inline std::pair<Tensor, Tensor> lstm_step(const Lstm& q, const std::pair<Tensor, Tensor>& hc,
                                           const Tensor& x) {
  const int64_t n = q.wh.shape(0);
  const Tensor a = lanes::matmul(x, q.wx) + lanes::matmul(hc.first, q.wh) + q.b;
  auto gate = [&](int64_t k) { return lanes::slice_axis(a, 0, k * n, (k + 1) * n); };
  const Tensor i = lanes::sigmoid(gate(0)), f = lanes::sigmoid(gate(1));
  const Tensor g = lanes::tanh(gate(2)), o = lanes::sigmoid(gate(3));
  const Tensor c = f * hc.second + i * g;
  return {o * lanes::tanh(c), c};
}

inline std::vector<Variant> rnn_scan() {
  const int64_t batch = 64, steps = 64, inputs = 64, n = 128;
  const Lstm p{normal(80, {inputs, 4 * n}, 1 / std::sqrt(double(inputs))),
               normal(81, {n, 4 * n}, 1 / std::sqrt(double(n))), normal(82, {4 * n}, 0.1)};
  const Tensor x = normal(83, {batch, steps, inputs});
  workloads::inputs({{"wx", p.wx}, {"wh", p.wh}, {"b", p.b}, {"x", x}});
  using HC = std::pair<Tensor, Tensor>;
  const HC zero{lanes::zeros({n}), lanes::zeros({n})};
  // One example: x (64, 64) -> l2_loss of the final hidden state, the steps run by scan.
  auto loss = [zero](const Lstm& q, const Tensor& xs) {
    auto step = [&q](const HC& hc, const Tensor& xt) {
      return std::make_pair(lstm_step(q, hc, xt), std::tuple<>{});
    };
    return lanes::l2_loss(lanes::scan(step, zero, xs).first.first);
  };
  std::vector<Variant> variants = per_example_variants(lanes::grad(loss), p, x);
  variants.push_back({"manual", [=] { return lstm_manual(p, x, /*loss_on_h=*/true); }});
  // The same per-example function with a C++ loop instead of scan: vmap+compile of 64 unrolled
  // steps.
  auto unrolled_loss = [zero](const Lstm& q, const Tensor& xs) {
    HC hc = zero;
    for (int64_t t = 0; t < xs.shape(0); ++t) hc = lstm_step(q, hc, xs[t]);
    return lanes::l2_loss(hc.first);
  };
  auto unrolled =
      lanes::compile(lanes::vmap(lanes::grad(unrolled_loss), lanes::in_axes(lanes::none, 0)));
  variants.push_back({"unrolled", [=] { return leaves(unrolled(p, x)); }});
  return variants;
}

// ---- ode_rk4 ------------------------------------------------------------------------------------

/// The vector field dy/dt = tanh(w2 tanh(w1 y + b1) + b2).
struct Ode {
  Tensor w1, b1, w2, b2;
};

}  // namespace workloads

LANES_TREE(workloads::Ode, w1, b1, w2, b2)

namespace workloads {

inline constexpr double kOdeDt = 0.01;
inline constexpr int64_t kOdeSteps = 100;

/// y(1) from y0 by 100 RK4 steps of dt = 0.01 (fori_loop), given the vector field.
template <class Field>
Tensor rk4(const Field& field, const Tensor& y0) {
  return lanes::fori_loop(
      0, kOdeSteps,
      [&](const Tensor&, const Tensor& y) {
        const Tensor k1 = field(y);
        const Tensor k2 = field(y + k1 * (kOdeDt / 2));
        const Tensor k3 = field(y + k2 * (kOdeDt / 2));
        const Tensor k4 = field(y + k3 * kOdeDt);
        return y + (k1 + k2 * 2.0 + k3 * 2.0 + k4) * (kOdeDt / 6);
      },
      y0);
}

inline std::vector<Variant> ode_rk4() {
  const int64_t batch = 128, dim = 16, hidden = 64;
  const Ode p{normal(90, {hidden, dim}, 1 / std::sqrt(double(dim))), normal(91, {hidden}, 0.1),
              normal(92, {dim, hidden}, 1 / std::sqrt(double(hidden))), normal(93, {dim}, 0.1)};
  const Tensor y0 = normal(94, {batch, dim}), target = normal(95, {batch, dim}, 0.5);
  inputs({{"w1", p.w1}, {"b1", p.b1}, {"w2", p.w2}, {"b2", p.b2}, {"y0", y0}, {"target", target}});
  param("dt", kOdeDt);
  param("steps", double(kOdeSteps));
  // One example: y0 (16,), target (16,) -> l2_loss(y(1) - target).
  auto loss = [](const Ode& q, const Tensor& y, const Tensor& t) {
    auto field = [&q](const Tensor& v) {
      return lanes::tanh(lanes::matmul(q.w2, lanes::tanh(lanes::matmul(q.w1, v) + q.b1)) + q.b2);
    };
    return lanes::l2_loss(rk4(field, y) - t);
  };
  std::vector<Variant> variants = per_example_variants(lanes::grad(loss), p, y0, target);
  // By hand: the weights tiled once per example, the whole batch's ODE run with batched
  // matrix-vector products, and the summed loss differentiated once w.r.t. the tiled copies,
  // whose gradients are the per-example ones. Compiled, as a careful user would.
  auto tiled_loss = [](const Ode& q, const Tensor& y, const Tensor& t) {
    auto field = [&q](const Tensor& v) {
      const Tensor h = lanes::tanh(batched_matvec(q.w1, v) + q.b1);
      return lanes::tanh(batched_matvec(q.w2, h) + q.b2);
    };
    return lanes::l2_loss(rk4(field, y) - t);
  };
  auto tiled_grad = lanes::compile(lanes::grad(tiled_loss));
  auto tile = [batch](const Tensor& w) {
    Shape s = w.shape();
    s.insert(s.begin(), batch);
    return lanes::broadcast_to(lanes::expand_dims(w, 0), s).contiguous();
  };
  variants.push_back({"manual", [=] {
                        const Ode tiled{tile(p.w1), tile(p.b1), tile(p.w2), tile(p.b2)};
                        return leaves(tiled_grad(tiled, y0, target));
                      }});
  return variants;
}

}  // namespace workloads
