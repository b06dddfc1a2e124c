// Ragged workloads (issue 30): per-example functions over B = 256 sequences of different
// lengths. The lengths are 4 + floor(252 u^3), u uniform from seed 300: skewed towards short
// sequences (mean about 67, longest near 256), as sentence lengths are.
//
// Variants: loop (one example at a time), manual (the sequences padded by hand, and masks
// written by hand into the per-example function, the way jax and torch users write it; vmap and
// compile over the padded batch), and vmap over a lanes::Ragged with RaggedStrategy Group, Pad
// and Auto, and compile of the Auto vmap.
#pragma once

#include <cmath>

#include "harness.h"

namespace workloads {

inline std::vector<int64_t> skewed_lengths(int64_t batch) {
  const std::vector<double> u =
      lanes::random::uniform(lanes::random::key(300), {batch}, 0.0, 1.0, lanes::kFloat64)
          .to_vector<double>();
  std::vector<int64_t> n;
  for (double x : u) n.push_back(4 + int64_t(std::floor(252 * x * x * x)));
  return n;
}

/// B sequences of `width` features with the skewed lengths (or all of length `uniform`): the
/// Ragged, packed (sum L, width).
inline lanes::Ragged ragged_sequences(uint64_t seed, int64_t batch, int64_t width,
                                      Tensor* packed_out, Tensor* lengths_out,
                                      int64_t uniform = 0) {
  const int64_t b = quick_mode() ? batch / 8 : batch;
  const std::vector<int64_t> n =
      uniform ? std::vector<int64_t>(size_t(b), uniform) : skewed_lengths(b);
  int64_t total = 0;
  for (int64_t k : n) total += k;
  *packed_out = normal(seed, {total, width});
  *lengths_out = lanes::tensor(n);
  return lanes::Ragged::from_lengths(*packed_out, *lengths_out);
}

/// Each output leaf stacked (B, ...): the per-example results all have one shape.
inline Outputs stacked(const std::vector<lanes::Ragged>& rs) {
  Outputs out;
  for (const lanes::Ragged& r : rs) out.push_back(r.stacked());
  return out;
}

/// The loop, Group, Pad, Auto and compiled variants of vmap(f) over (shared, ragged, mapped);
/// f returns a vector of Tensors.
template <class F, class S>
std::vector<Variant> ragged_variants(F f, const S& shared, const lanes::Ragged& xs,
                                     const Tensor& mapped) {
  auto vmapped = [&](lanes::RaggedStrategy s) {
    lanes::VmapOptions o;
    o.ragged = s;
    return lanes::vmap(f, lanes::in_axes(lanes::none, 0, 0), 0, o);
  };
  auto group = vmapped(lanes::RaggedStrategy::Group), pad = vmapped(lanes::RaggedStrategy::Pad);
  auto autos = vmapped(lanes::RaggedStrategy::Auto);
  auto compiled = lanes::compile(autos);
  const Variant loop{"loop",
                     [=] {
                       return loop_stack(xs.size(), [&](int64_t i) {
                         return f(shared, xs[i], example(mapped, i));
                       });
                     },
                     true};
  return {loop,
          {"vmap group", [=] { return stacked(group(shared, xs, mapped)); }},
          {"vmap pad", [=] { return stacked(pad(shared, xs, mapped)); }},
          {"vmap", [=] { return stacked(autos(shared, xs, mapped)); }},
          {"vmap+compile", [=] { return stacked(compiled(shared, xs, mapped)); }}};
}

struct LstmClassifier {
  Tensor wx, wh, b, wo, bo;
};

}  // namespace workloads

LANES_TREE(workloads::LstmClassifier, wx, wh, b, wo, bo)

namespace workloads {

/// An LSTM over x (L, d) from zero state; returns the logits of its final hidden state. With
/// `live` (L,) bool, the carry freezes on the steps where it is false: the hand-written mask of
/// the manual variant over padded sequences.
inline Tensor lstm_logits(const LstmClassifier& p, const Tensor& x, const Tensor& live = {}) {
  const int64_t n = p.wh.shape(0);
  using Carry = std::pair<Tensor, Tensor>;
  auto cell = [&](const Carry& hc, const Tensor& xt) {
    const Tensor a = lanes::matmul(xt, p.wx) + lanes::matmul(hc.first, p.wh) + p.b;
    auto gate = [&](int64_t k) { return lanes::slice_axis(a, 0, k * n, (k + 1) * n); };
    const Tensor c =
        lanes::sigmoid(gate(1)) * hc.second + lanes::sigmoid(gate(0)) * lanes::tanh(gate(2));
    return Carry{lanes::sigmoid(gate(3)) * lanes::tanh(c), c};
  };
  const Carry init{lanes::zeros({n}), lanes::zeros({n})};
  Tensor h;
  if (!live.defined()) {
    auto step = [&](const Carry& hc, const Tensor& xt) {
      return std::make_pair(cell(hc, xt), std::tuple<>{});
    };
    h = lanes::scan(step, init, x).first.first;
  } else {
    auto step = [&](const Carry& hc, const std::pair<Tensor, Tensor>& in) {
      const Carry next = cell(hc, in.first);
      return std::make_pair(Carry{lanes::where(in.second, next.first, hc.first),
                                  lanes::where(in.second, next.second, hc.second)},
                            std::tuple<>{});
    };
    h = lanes::scan(step, init, std::make_pair(x, live)).first.first;
  }
  return lanes::matmul(h, p.wo) + p.bo;
}

/// Example i's valid positions of a padded axis of extent `steps`: (steps,) bool.
inline Tensor live_mask(int64_t steps, const Tensor& length) {
  return lanes::less(lanes::iota({steps}, 0, lanes::kInt64), length);
}

/// The hand-padded, hand-masked variant: f(shared, padded example, its length) over the batch.
template <class G, class S>
Variant manual_padded(G f, const S& shared, const lanes::Ragged& xs, const Tensor& mapped) {
  const Tensor padded = xs.padded(0), lengths = xs.lengths(0);
  auto batched = lanes::compile(lanes::vmap(f, lanes::in_axes(lanes::none, 0, 0, 0)));
  return {"manual", [=] { return leaves(batched(shared, padded, lengths, mapped)); }};
}

inline std::vector<Variant> ragged_lstm() {
  const int64_t batch = 256, d = 16, n = 128, classes = 10;
  Tensor packed, lengths;
  const lanes::Ragged xs = ragged_sequences(310, batch, d, &packed, &lengths);
  const LstmClassifier p{normal(311, {d, 4 * n}, 0.25), normal(312, {n, 4 * n}, 0.08),
                         normal(313, {4 * n}, 0.1), normal(314, {n, classes}, 0.1),
                         lanes::zeros({classes})};
  const Tensor y = labels(315, xs.size(), classes);
  inputs({{"wx", p.wx},
          {"wh", p.wh},
          {"b", p.b},
          {"wo", p.wo},
          {"bo", p.bo},
          {"x", packed},
          {"lengths", lengths},
          {"y", y}});
  // One example's gradient of its cross-entropy, over its own steps.
  auto per_example = [](const LstmClassifier& q, const Tensor& x, const Tensor& label) {
    auto loss = [&](const LstmClassifier& w) {
      return lanes::softmax_cross_entropy(lstm_logits(w, x), label);
    };
    return leaves(lanes::grad(loss)(q));
  };
  // The same over a padded example, the padding masked by hand.
  auto masked = [](const LstmClassifier& q, const Tensor& x, const Tensor& length,
                   const Tensor& label) {
    auto loss = [&](const LstmClassifier& w) {
      return lanes::softmax_cross_entropy(lstm_logits(w, x, live_mask(x.shape(0), length)), label);
    };
    return leaves(lanes::grad(loss)(q));
  };
  std::vector<Variant> variants = ragged_variants(per_example, p, xs, y);
  variants.push_back(manual_padded(masked, p, xs, y));
  return variants;
}

struct Attention {
  Tensor wq, wk, wv;
};

}  // namespace workloads

LANES_TREE(workloads::Attention, wq, wk, wv)

namespace workloads {

/// One self-attention layer (one head) over x (L, d) and the mean of its outputs over the
/// positions; with `live` (L,) the padded keys and rows are masked by hand.
inline Tensor attention_pool(const Attention& p, const Tensor& x, const Tensor& live = {}) {
  const double scale = 1 / std::sqrt(double(p.wq.shape(0)));
  const Tensor q = lanes::matmul(x, p.wq), k = lanes::matmul(x, p.wk), v = lanes::matmul(x, p.wv);
  Tensor scores = lanes::matmul(q, lanes::transpose(k)) * scale;
  if (live.defined()) scores = lanes::where(live, scores, -1e30);
  const Tensor out = lanes::matmul(lanes::softmax(scores, -1), v);
  if (!live.defined()) return lanes::mean(out, lanes::Axes{0});
  const Tensor rows = lanes::expand_dims(lanes::cast(live, lanes::kFloat32), 1);
  return lanes::sum(out * rows, lanes::Axes{0}) / lanes::sum(rows);
}

/// ragged_attention, or with every sequence of one length (ragged_attention_uniform: Auto must
/// cost nothing over the ordinary vmap there).
inline std::vector<Variant> attention_rows(int64_t uniform) {
  const int64_t batch = 256, d = 64;
  Tensor packed, lengths;
  const lanes::Ragged xs = ragged_sequences(320, batch, d, &packed, &lengths, uniform);
  const double s = 1 / std::sqrt(double(d));
  const Attention p{normal(321, {d, d}, s), normal(322, {d, d}, s), normal(323, {d, d}, s)};
  const Tensor unused = lanes::zeros({xs.size()});
  inputs({{"wq", p.wq}, {"wk", p.wk}, {"wv", p.wv}, {"x", packed}, {"lengths", lengths}});
  auto per_example = [](const Attention& q, const Tensor& x, const Tensor&) {
    return std::vector<Tensor>{attention_pool(q, x)};
  };
  auto masked = [](const Attention& q, const Tensor& x, const Tensor& length, const Tensor&) {
    return std::vector<Tensor>{attention_pool(q, x, live_mask(x.shape(0), length))};
  };
  std::vector<Variant> variants = ragged_variants(per_example, p, xs, unused);
  variants.push_back(manual_padded(masked, p, xs, unused));
  return variants;
}

inline std::vector<Variant> ragged_attention() { return attention_rows(0); }
inline std::vector<Variant> ragged_attention_uniform() { return attention_rows(64); }

}  // namespace workloads
