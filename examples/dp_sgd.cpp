// DP-SGD (Abadi et al., 2016): per-example gradients, each clipped to norm C, summed, plus
// Gaussian noise of scale sigma * C, on a small MLP whose weights are Variables. The whole step is
// one compiled function: vmap of grad over the Variables gives the per-example gradients, the
// noise comes from a random::Generator that compile reads at every call, and the minibatches
// from random::permutation.
#include <cstdio>

#include "tour.h"

namespace tour {

using lanes::Shape;
using lanes::Tensor;
using lanes::Variable;
namespace random = lanes::random;

void dp_sgd() {
  constexpr int64_t kN = 2048, kFeatures = 16, kHidden = 32, kClasses = 4, kBatch = 128;
  constexpr double kClip = 1.0, kSigma = 1.0, kRate = 0.5;
  // A teacher labels Gaussian inputs: the class of the largest of 4 random projections.
  const Tensor x = random::normal(random::key(1), {kN, kFeatures});
  const Tensor y =
      lanes::argmax(lanes::matmul(x, random::normal(random::key(2), {kFeatures, kClasses})), 1);

  Variable w1(
      random::normal(random::key(3), {kFeatures, kHidden}) * (1 / std::sqrt(double(kFeatures))),
      "w1");
  Variable b1(lanes::zeros({kHidden}), "b1");
  Variable w2(
      random::normal(random::key(4), {kHidden, kClasses}) * (1 / std::sqrt(double(kHidden))), "w2");
  Variable b2(lanes::zeros({kClasses}), "b2");
  const std::vector<Variable> params{w1, b1, w2, b2};
  auto loss = [&](const Tensor& xi, const Tensor& yi) {
    const Tensor h = lanes::tanh(lanes::matmul(xi, w1.read()) + b1.read());
    return lanes::mean(lanes::softmax_cross_entropy(lanes::matmul(h, w2.read()) + b2.read(), yi));
  };

  const random::Generator noise(2026), batches(7);
  // One private gradient: per-example gradients (B, param...) clipped to global norm kClip,
  // summed, noised, averaged.
  auto private_gradient = lanes::compile([&](const Tensor& xb, const Tensor& yb) {
    auto per_example = lanes::vmap(
        [&](const Tensor& xi, const Tensor& yi) { return lanes::grad(loss, params)(xi, yi); });
    const std::vector<Tensor> g = per_example(xb, yb);
    Tensor sq = lanes::zeros({kBatch});
    for (const Tensor& gi : g) {
      std::vector<int64_t> axes;
      for (int64_t a = 1; a < gi.ndim(); ++a) axes.push_back(a);
      sq = sq + lanes::sum(gi * gi, axes);
    }
    const Tensor scale = 1.0 / lanes::maximum(lanes::sqrt(sq) / kClip, 1.0);  // (B,)
    std::vector<Tensor> out;
    for (const Tensor& gi : g) {
      Shape per(gi.shape().begin() + 1, gi.shape().end());
      Shape bshape{kBatch};
      bshape.resize(gi.ndim(), 1);
      const Tensor clipped = lanes::sum(gi * lanes::reshape(scale, bshape), {0});
      out.push_back((clipped + random::normal(noise, per) * (kSigma * kClip)) / double(kBatch));
    }
    return out;
  });
  auto full_loss = lanes::compile([&](const Tensor& xs, const Tensor& ys) { return loss(xs, ys); });

  std::printf("DP-SGD: %lld examples, batch %lld, clip %.1f, noise multiplier %.1f\n",
              (long long)kN, (long long)kBatch, kClip, kSigma);
  const double first = full_loss(x, y).item<float>();
  int step = 0;
  for (int epoch = 0; epoch < 6; ++epoch) {
    const Tensor order = random::permutation(batches, kN);  // a fresh shuffle per epoch
    for (int64_t start = 0; start + kBatch <= kN; start += kBatch, ++step) {
      const Tensor idx = lanes::slice_axis(order, 0, start, start + kBatch);
      const std::vector<Tensor> g = private_gradient(lanes::take(x, idx), lanes::take(y, idx));
      for (size_t p = 0; p < params.size(); ++p) params[p].assign_add(g[p] * -kRate);
    }
    std::printf("  epoch %d (%3d steps): loss %.4f\n", epoch + 1, step,
                full_loss(x, y).item<float>());
  }
  const double last = full_loss(x, y).item<float>();
  const Tensor predicted = lanes::argmax(
      lanes::matmul(lanes::tanh(lanes::matmul(x, w1.read()) + b1.read()), w2.read()) + b2.read(),
      1);
  const double accuracy = lanes::mean(lanes::cast(predicted == y, lanes::kFloat32)).item<float>();
  std::printf(
      "  loss %.4f -> %.4f, accuracy %.1f%%; noise drew %llu keys, %zu compiled "
      "trace(s)\n\n",
      first, last, 100 * accuracy, (unsigned long long)noise.counter(),
      private_gradient.cache_size());
  if (!(last < first)) throw lanes::Error("dp_sgd: the loss did not fall");
}

}  // namespace tour
