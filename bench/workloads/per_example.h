// Per-example gradient workloads: perex_linear, perex_mlp, lstm_perex (perex_cnn is in cnn.h).
//
// Every one has the same variants: the loop applies grad(loss) to one example at a time, vmap
// and vmap+compile map that same gradient function over the examples with the parameters
// shared, and manual is hand-derived batched backprop whose per-example weight gradients are
// outer products of activations and deltas.
#pragma once

#include <tuple>

#include "harness.h"

namespace workloads {

/// The loop / vmap / vmap+compile variants of per-example gradients: per_example(params, x...)
/// for each example (x...) of the batch (axis 0 of every data argument), params shared.
template <class G, class P, class... Data>
std::vector<Variant> per_example_variants(G per_example, const P& params, const Data&... data) {
  const int64_t n = std::get<0>(std::tie(data...)).shape(0);
  const lanes::AxisSpec axes(std::vector<lanes::AxisSpec>{lanes::none, ((void)data, 0)...});
  auto batched = lanes::vmap(per_example, axes);
  auto compiled = lanes::compile(batched);
  return {
      {"loop",
       [=] {
         return loop_stack(n, [&](int64_t i) { return per_example(params, example(data, i)...); });
       }},
      {"vmap", [=] { return leaves(batched(params, data...)); }},
      {"vmap+compile", [=] { return leaves(compiled(params, data...)); }},
  };
}

/// a[b] outer c[b] for every b: (B, m) and (B, n) -> (B, m, n).
inline Tensor batched_outer(const Tensor& a, const Tensor& c) {
  return lanes::expand_dims(a, 2) * lanes::expand_dims(c, 1);
}

struct Linear {
  Tensor w, b;
};

/// The three layers of perex_mlp (x @ w + b).
struct Mlp {
  Tensor w1, b1, w2, b2, w3, b3;
};

struct Lstm {
  Tensor wx, wh, b;  // gates i, f, g, o side by side in the 4 * 32 columns
};

}  // namespace workloads

LANES_TREE(workloads::Linear, w, b)
LANES_TREE(workloads::Mlp, w1, b1, w2, b2, w3, b3)
LANES_TREE(workloads::Lstm, wx, wh, b)

namespace workloads {

inline std::vector<Variant> perex_linear() {
  const int64_t batch = 10;
  const Linear p{normal(20, {32, 1}), lanes::zeros({1})};
  const Tensor x = normal(21, {batch, 32}), y = normal(22, {batch, 1});
  inputs({{"w", p.w}, {"b", p.b}, {"x", x}, {"y", y}});
  auto loss = [](const Linear& q, const Tensor& xi, const Tensor& yi) {
    return lanes::l2_loss(yi - (lanes::matmul(xi, q.w) + q.b));
  };
  std::vector<Variant> variants = per_example_variants(lanes::grad(loss), p, x, y);
  // d loss / d prediction = prediction - label = r; dW = x outer r, db = r.
  variants.push_back({"manual", [=] {
                        const Tensor r = lanes::matmul(x, p.w) + p.b - y;
                        return leaves(Linear{batched_outer(x, r), r});
                      }});
  return variants;
}

/// perex_mlp by hand: batched forward, deltas by the chain rule, weight gradients as outer
/// products of activations and deltas.
inline Outputs mlp_manual(const Mlp& p, const Tensor& x, const Tensor& y) {
  // Batched forward: one GEMM per layer over the (256, .) activations.
  const Tensor h1 = lanes::tanh(lanes::matmul(x, p.w1) + p.b1);
  const Tensor h2 = lanes::tanh(lanes::matmul(h1, p.w2) + p.b2);
  const Tensor logits = lanes::matmul(h2, p.w3) + p.b3;
  // Deltas (d loss / d pre-activation): softmax - one_hot at the top, then back through W^T
  // and tanh' = 1 - h^2.
  const Tensor d3 = lanes::softmax(logits) - lanes::one_hot(y, 10);
  const Tensor d2 = lanes::matmul(d3, lanes::transpose(p.w3)) * (1.0 - h2 * h2);
  const Tensor d1 = lanes::matmul(d2, lanes::transpose(p.w2)) * (1.0 - h1 * h1);
  return leaves(
      Mlp{batched_outer(x, d1), d1, batched_outer(h1, d2), d2, batched_outer(h2, d3), d3});
}

/// perex_mlp's loss of one example (also perex_grad_norms'): two tanh layers, then softmax
/// cross-entropy.
inline Tensor mlp_loss(const Mlp& q, const Tensor& xi, const Tensor& yi) {
  const Tensor h1 = lanes::tanh(lanes::matmul(xi, q.w1) + q.b1);
  const Tensor h2 = lanes::tanh(lanes::matmul(h1, q.w2) + q.b2);
  return lanes::softmax_cross_entropy(lanes::matmul(h2, q.w3) + q.b3, yi);
}

/// The 784-512-512-10 MLP of perex_mlp and perex_mlp_dropout (fixed seeds).
inline Mlp mlp_params() {
  return Mlp{normal(30, {784, 512}, 1 / std::sqrt(784.0)), normal(31, {512}, 0.1),
             normal(32, {512, 512}, 1 / std::sqrt(512.0)), normal(33, {512}, 0.1),
             normal(34, {512, 10}, 1 / std::sqrt(512.0)),  normal(35, {10}, 0.1)};
}

/// Names an MLP workload's parameters and data for --dump-inputs.
inline void mlp_inputs(const Mlp& p, const Tensor& x, const Tensor& y) {
  inputs({{"w1", p.w1},
          {"b1", p.b1},
          {"w2", p.w2},
          {"b2", p.b2},
          {"w3", p.w3},
          {"b3", p.b3},
          {"x", x},
          {"y", y}});
}

inline std::vector<Variant> perex_mlp() {
  const int64_t batch = 256;
  const Mlp p = mlp_params();
  const Tensor x = normal(36, {batch, 784}), y = labels(37, batch, 10);
  mlp_inputs(p, x, y);
  std::vector<Variant> variants = per_example_variants(lanes::grad(mlp_loss), p, x, y);
  variants.push_back({"manual", [=] { return mlp_manual(p, x, y); }});
  return variants;
}

/// lstm_perex by hand: batched forward, then backprop through time on the whole batch. The loss
/// is l2_loss of the final cell state, or of the final hidden state with `loss_on_h` (rnn_scan).
inline Outputs lstm_manual(const Lstm& p, const Tensor& x, bool loss_on_h = false) {
  const int64_t batch = x.shape(0), steps = x.shape(1), n = p.wh.shape(0);
  struct Step {
    Tensor x, h_prev, c_prev, i, f, g, o, tanh_c;
  };
  std::vector<Step> tape;
  Tensor h = lanes::zeros({batch, n}), c = lanes::zeros({batch, n});
  for (int64_t t = 0; t < steps; ++t) {
    const Tensor xt = lanes::squeeze(lanes::slice_axis(x, 1, t, t + 1), 1);
    const Tensor a = lanes::matmul(xt, p.wx) + lanes::matmul(h, p.wh) + p.b;
    auto gate = [&](int64_t k) { return lanes::slice_axis(a, 1, k * n, (k + 1) * n); };
    Step s{xt,
           h,
           c,
           lanes::sigmoid(gate(0)),
           lanes::sigmoid(gate(1)),
           lanes::tanh(gate(2)),
           lanes::sigmoid(gate(3)),
           {}};
    c = s.f * c + s.i * s.g;
    s.tanh_c = lanes::tanh(c);
    h = s.o * s.tanh_c;
    tape.push_back(s);
  }
  // d loss / d c_T = c_T and the final h does not reach the loss, or d loss / d h_T = h_T. Each
  // step: c = f c_prev + i g, h = o tanh(c), and sigmoid' = s (1 - s), tanh' = 1 - t^2 give the
  // pre-activation deltas.
  Tensor dh = loss_on_h ? h : lanes::zeros({batch, n});
  Tensor dc = loss_on_h ? lanes::zeros({batch, n}) : c;
  std::vector<Tensor> deltas(steps);
  for (int64_t t = steps - 1; t >= 0; --t) {
    const Step& s = tape[t];
    const Tensor dct = dc + dh * s.o * (1.0 - s.tanh_c * s.tanh_c);  // all of d loss / d c_t
    const Tensor da_i = dct * s.g * s.i * (1.0 - s.i);
    const Tensor da_f = dct * s.c_prev * s.f * (1.0 - s.f);
    const Tensor da_g = dct * s.i * (1.0 - s.g * s.g);
    const Tensor da_o = dh * s.tanh_c * s.o * (1.0 - s.o);
    deltas[t] = lanes::concatenate({da_i, da_f, da_g, da_o}, 1);
    dh = lanes::matmul(deltas[t], lanes::transpose(p.wh));
    dc = dct * s.f;
  }
  // Per-example weight gradients are sums over time of outer products: one batched GEMM each,
  // contracting the time axis of the stacked inputs and deltas.
  std::vector<Tensor> xs, hs;
  for (const Step& s : tape) {
    xs.push_back(s.x);
    hs.push_back(s.h_prev);
  }
  const Tensor da = lanes::stack(deltas, 1);  // (B, T, 4n)
  const lanes::DotDims over_time{{1}, {1}, {0}, {0}};
  return leaves(Lstm{lanes::dot_general(lanes::stack(xs, 1), da, over_time),
                     lanes::dot_general(lanes::stack(hs, 1), da, over_time), lanes::sum(da, 1)});
}

inline std::vector<Variant> lstm_perex() {
  const int64_t batch = 100, steps = 8, n = 32;
  const Lstm p{normal(40, {n, 4 * n}, 1 / std::sqrt(double(n))),
               normal(41, {n, 4 * n}, 1 / std::sqrt(double(n))), normal(42, {4 * n}, 0.1)};
  const Tensor x = normal(43, {batch, steps, n});
  inputs({{"wx", p.wx}, {"wh", p.wh}, {"b", p.b}, {"x", x}});
  // One example: x (8, 32) -> l2_loss of the final cell state.
  auto loss = [](const Lstm& q, const Tensor& xs) {
    const int64_t width = q.wh.shape(0);
    Tensor h = lanes::zeros({width}), c = lanes::zeros({width});
    for (int64_t t = 0; t < xs.shape(0); ++t) {
      const Tensor a = lanes::matmul(example(xs, t), q.wx) + lanes::matmul(h, q.wh) + q.b;
      auto gate = [&](int64_t k) { return lanes::slice_axis(a, 0, k * width, (k + 1) * width); };
      const Tensor i = lanes::sigmoid(gate(0)), f = lanes::sigmoid(gate(1));
      const Tensor g = lanes::tanh(gate(2)), o = lanes::sigmoid(gate(3));
      c = f * c + i * g;
      h = o * lanes::tanh(c);
    }
    return lanes::l2_loss(c);
  };
  std::vector<Variant> variants = per_example_variants(lanes::grad(loss), p, x);
  variants.push_back({"manual", [=] { return lstm_manual(p, x); }});
  return variants;
}

}  // namespace workloads
