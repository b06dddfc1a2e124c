// perex_mlp_dropout: perex_mlp with dropout 0.1 after each hidden layer in training mode, the
// masks drawn from a random::Generator under vmap's Randomness::Different; and dropout_draws,
// the draws alone, to measure what they cost of the step.
//
// Every variant draws lane i's masks from the keys the per-example loop would use: the
// generator's key K (each call rewinds the generator, so that every timed call computes the
// same step and the checksums compare), lane key fold_in(K, i), and mask j (layer j) from
// fold_in(lane key, j). The manual variant builds those keys with fold_in_each and draws with
// uniform_each, then backpropagates by hand through the masks.
#pragma once

#include "per_example.h"

namespace workloads {

constexpr double kDropRate = 0.1;
constexpr uint64_t kDropoutSeed = 2026;

/// The loss of perex_mlp with dropout after each tanh, drawing from `gen`.
inline auto mlp_dropout_loss(const lanes::random::Generator& gen) {
  return [gen](const Mlp& q, const Tensor& xi, const Tensor& yi) {
    const Tensor h1 =
        lanes::dropout(lanes::tanh(lanes::matmul(xi, q.w1) + q.b1), kDropRate, gen, true);
    const Tensor h2 =
        lanes::dropout(lanes::tanh(lanes::matmul(h1, q.w2) + q.b2), kDropRate, gen, true);
    return lanes::softmax_cross_entropy(lanes::matmul(h2, q.w3) + q.b3, yi);
  };
}

/// Lane i's key for the rewound generator: fold_in(K, i) with K its first key, for n lanes.
inline Tensor dropout_lane_keys(int64_t n) {
  const lanes::random::Key k = lanes::random::Generator(kDropoutSeed).next_key();
  return lanes::random::fold_in_each(lanes::broadcast_to(k.bits, {n}),
                                     lanes::arange(n, lanes::kInt64));
}

/// The keep masks of layer j (true: kept) of every lane, (n, width).
inline Tensor dropout_masks(const Tensor& lane_keys, int64_t j, int64_t width) {
  const Tensor keys = lanes::random::fold_in_each(
      lane_keys, lanes::full(lane_keys.shape(), double(j), lanes::kInt64));
  return lanes::random::uniform_each(keys, {width}) < 1.0 - kDropRate;
}

/// perex_mlp_dropout by hand: mlp_manual with the masks (scale 1 / (1 - rate)) applied forward
/// and to the deltas on the way back.
inline Outputs mlp_dropout_manual(const Mlp& p, const Tensor& x, const Tensor& y,
                                  const Tensor& lane_keys) {
  const double scale = 1.0 / (1.0 - kDropRate);
  const Tensor m1 = dropout_masks(lane_keys, 0, p.w1.shape(1));
  const Tensor m2 = dropout_masks(lane_keys, 1, p.w2.shape(1));
  const Tensor h1 = lanes::tanh(lanes::matmul(x, p.w1) + p.b1);
  const Tensor a1 = lanes::where(m1, h1 * scale, 0.0);
  const Tensor h2 = lanes::tanh(lanes::matmul(a1, p.w2) + p.b2);
  const Tensor a2 = lanes::where(m2, h2 * scale, 0.0);
  const Tensor logits = lanes::matmul(a2, p.w3) + p.b3;
  const Tensor d3 = lanes::softmax(logits) - lanes::one_hot(y, 10);
  const Tensor g2 = lanes::where(m2, lanes::matmul(d3, lanes::transpose(p.w3)) * scale, 0.0);
  const Tensor d2 = g2 * (1.0 - h2 * h2);
  const Tensor g1 = lanes::where(m1, lanes::matmul(d2, lanes::transpose(p.w2)) * scale, 0.0);
  const Tensor d1 = g1 * (1.0 - h1 * h1);
  return leaves(
      Mlp{batched_outer(x, d1), d1, batched_outer(a1, d2), d2, batched_outer(a2, d3), d3});
}

inline std::vector<Variant> perex_mlp_dropout() {
  const int64_t batch = 256;
  const Mlp p = mlp_params();
  const Tensor x = normal(36, {batch, 784}), y = labels(37, batch, 10);
  const lanes::random::Generator gen(kDropoutSeed);
  lanes::VmapOptions different;
  different.randomness = lanes::Randomness::Different;
  auto batched = lanes::vmap(lanes::grad(mlp_dropout_loss(gen)), lanes::in_axes(lanes::none, 0, 0),
                             0, different);
  auto compiled = lanes::compile(batched);
  const Tensor lane_keys = dropout_lane_keys(batch);
  // The peers cannot reproduce lanes' counter-based draws: they get the keep masks every
  // variant draws (those of dropout_masks, which the manual variant uses too) as inputs.
  mlp_inputs(p, x, y);
  if (input_log())
    inputs({{"keep1", dropout_masks(lane_keys, 0, p.w1.shape(1))},
            {"keep2", dropout_masks(lane_keys, 1, p.w2.shape(1))}});
  param("rate", kDropRate);
  return {
      {"loop",
       [=] {
         return loop_stack(batch, [&](int64_t i) {
           const auto lane = lanes::random::Generator::from_key({lane_keys[i]});
           return lanes::grad(mlp_dropout_loss(lane))(p, example(x, i), example(y, i));
         });
       }},
      {"vmap",
       [=] {
         gen.set_counter(0);
         return leaves(batched(p, x, y));
       }},
      {"vmap+compile",
       [=] {
         gen.set_counter(0);
         return leaves(compiled(p, x, y));
       }},
      {"manual", [=] { return mlp_dropout_manual(p, x, y, lane_keys); }},
  };
}

/// The two masks of perex_mlp_dropout alone: what the draws cost of its step.
inline std::vector<Variant> dropout_draws() {
  const int64_t batch = 256, width = 512;
  const lanes::random::Generator gen(kDropoutSeed);
  lanes::VmapOptions different;
  different.randomness = lanes::Randomness::Different;
  auto masks = [gen, width](const Tensor& x) {
    const Tensor ones = lanes::ones({width});
    const Tensor first = lanes::dropout(ones, kDropRate, gen, true) + x;  // draw 0, then 1
    const Tensor second = lanes::dropout(ones, kDropRate, gen, true) + x;
    return std::make_pair(first, second);
  };
  auto compiled = lanes::compile(lanes::vmap(masks, 0, 0, different));
  const Tensor x = lanes::zeros({batch});
  const Tensor lane_keys = dropout_lane_keys(batch);
  // The masks lanes draws, for the peers (which apply them instead of drawing, see
  // bench/peers/README.md).
  inputs({{"x", x}});
  if (input_log())
    inputs({{"keep1", dropout_masks(lane_keys, 0, width)},
            {"keep2", dropout_masks(lane_keys, 1, width)}});
  param("rate", kDropRate);
  return {
      {"vmap+compile",
       [=] {
         gen.set_counter(0);
         return leaves(compiled(x));
       }},
      // The per-example function by hand: each lane's key from the rewound generator's (as the
      // vmapped call derives them, every call), the masks, and the mapped x added to them. (Until
      // stop 38 the lane keys were made once outside the call and x, all zeros, was left out.)
      {"manual",
       [=] {
         const Tensor keys = dropout_lane_keys(batch);
         const double scale = 1.0 / (1.0 - kDropRate);
         const Tensor kept = lanes::ones({width}) * scale, column = lanes::expand_dims(x, 1);
         return Outputs{lanes::where(dropout_masks(keys, 0, width), kept, 0.0) + column,
                        lanes::where(dropout_masks(keys, 1, width), kept, 0.0) + column};
       }},
  };
}

}  // namespace workloads
