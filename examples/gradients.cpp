// Per-example gradients: the seed's Dense(1) layer, and an MLP with softmax cross-entropy
// clipped and averaged per example (the DP-SGD pattern).
#include "tour.h"

namespace tour {

using lanes::Tensor;

void dense_per_example_gradients() {
  // Exactly the seed example (DESIGN.md).
  const auto keys = lanes::random::split(lanes::random::key(0), 3);
  const Tensor kernel = lanes::random::normal(keys[0], {32, 1});
  const Tensor bias = lanes::zeros({1});
  const Tensor inputs = lanes::random::normal(keys[1], {10, 32});
  const Tensor labels = lanes::random::normal(keys[2], {10, 1});
  auto model_fn = [&](const Tensor& inp, const Tensor& label) {
    auto loss = [&](const Tensor& k, const Tensor& b) {
      const Tensor prediction = lanes::matmul(lanes::expand_dims(inp, 0), k) + b;
      return lanes::l2_loss(lanes::expand_dims(label, 0) - prediction);
    };
    return lanes::grad(loss, {0, 1})(kernel, bias);  // tuple of (dk, db)
  };
  Tensor dk, db, want_k, want_b;
  const double loop_ms = median_ms([&] {
    std::vector<Tensor> ks, bs;
    for (int64_t i = 0; i < 10; ++i) {
      auto [k, b] = model_fn(example(inputs, i), example(labels, i));
      ks.push_back(k);
      bs.push_back(b);
    }
    want_k = lanes::stack(ks);
    want_b = lanes::stack(bs);
  });
  const double vmap_ms =
      median_ms([&] { std::tie(dk, db) = lanes::vmap(model_fn)(inputs, labels); });
  report("Dense(1) per-example dk", dk, max_abs_diff(dk, want_k), loop_ms, vmap_ms);
  report("Dense(1) per-example db", db, max_abs_diff(db, want_b), loop_ms, vmap_ms);
}

namespace {
struct Mlp {
  Tensor w1, b1, w2, b2;
};
}  // namespace
}  // namespace tour

LANES_TREE(tour::Mlp, w1, b1, w2, b2)

namespace tour {

void mlp_per_example_gradients() {
  // A 784-128-10 tanh MLP, 64 examples: clip each example's gradient to norm 1, then average.
  const auto keys = lanes::random::split(lanes::random::key(3), 3);
  const Mlp p{lanes::random::normal(keys[0], {784, 128}) * 0.05, lanes::zeros({128}),
              lanes::random::normal(keys[1], {128, 10}) * 0.1, lanes::zeros({10})};
  const Tensor x = lanes::random::normal(keys[2], {64, 784});
  const Tensor y =
      lanes::cast(lanes::random::uniform(lanes::random::key(4), {64}, 0, 10), lanes::kInt32);
  auto loss = [](const Mlp& q, const Tensor& xi, const Tensor& yi) {
    const Tensor logits = lanes::matmul(lanes::tanh(lanes::matmul(xi, q.w1) + q.b1), q.w2) + q.b2;
    return lanes::softmax_cross_entropy(logits, yi);
  };
  auto clipped_mean = [](const Mlp& g) {  // g holds one gradient per example (axis 0)
    const Tensor sq = lanes::sum(g.w1 * g.w1, {1, 2}) + lanes::sum(g.b1 * g.b1, {1}) +
                      lanes::sum(g.w2 * g.w2, {1, 2}) + lanes::sum(g.b2 * g.b2, {1});
    const Tensor scale = 1.0 / lanes::maximum(lanes::sqrt(sq), 1.0);  // clip to norm 1
    return lanes::mean(g.w1 * lanes::reshape(scale, {-1, 1, 1}), 0);
  };
  Tensor got, want;
  const double loop_ms = median_ms(
      [&] {
        std::vector<Mlp> gs;
        for (int64_t i = 0; i < 64; ++i)
          gs.push_back(lanes::grad(loss)(p, example(x, i), example(y, i)));
        Mlp stacked;
        std::vector<Tensor> w1, b1, w2, b2;
        for (const Mlp& g : gs) {
          w1.push_back(g.w1);
          b1.push_back(g.b1);
          w2.push_back(g.w2);
          b2.push_back(g.b2);
        }
        want =
            clipped_mean({lanes::stack(w1), lanes::stack(b1), lanes::stack(w2), lanes::stack(b2)});
      },
      3);
  const double vmap_ms = median_ms(
      [&] {
        got = clipped_mean(
            lanes::vmap(lanes::grad(loss), lanes::in_axes(lanes::none, 0, 0))(p, x, y));
      },
      3);
  report("MLP DP-SGD clipped mean dW1", got, max_abs_diff(got, want), loop_ms, vmap_ms);
}

}  // namespace tour
