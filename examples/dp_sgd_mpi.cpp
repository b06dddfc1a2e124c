// Data-parallel DP-SGD across MPI ranks: every step, each rank computes the per-example
// gradients of its share of the batch (a sharded vmap of grad), clips each to norm C, and the
// clipped gradients are averaged over every rank's examples with pmean (MPI_Allreduce). The
// Gaussian noise of DP-SGD comes from a key per step, the same on every rank, so the ranks keep
// identical weights without ever sending them.
//
//     mpirun -np 3 ./build/examples/dp_sgd_mpi          # sharded over 3 processes
//     ./build/examples/dp_sgd_mpi --single              # the same training in one process
//     ... --save FILE / --compare FILE                  # write, or check against, the losses
//                                                       # and final weights (within 1e-5)
//
// The batch (25 examples) is not a multiple of 2 or 3: the shards are uneven.
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include "lanes/distributed.h"
#include "lanes/lanes.h"

namespace {

using lanes::Tensor;
using Params = std::vector<Tensor>;  // w1 (8, 16), b1 (16), w2 (16, 3), b2 (3)

constexpr int64_t kIn = 8, kHidden = 16, kClasses = 3, kBatch = 25, kSteps = 20;
constexpr double kClip = 1.0, kNoise = 0.5, kLearningRate = 0.2;

// Cross-entropy of a two-layer MLP on one example.
Tensor example_loss(const Params& p, const Tensor& x, const Tensor& label) {
  const Tensor h = lanes::tanh(lanes::matmul(x, p[0]) + p[1]);
  const Tensor logits = lanes::matmul(h, p[2]) + p[3];
  return -lanes::sum(lanes::log_softmax(logits) * lanes::one_hot(label, kClasses));
}

// Per example: its loss and its gradient clipped to norm kClip; both averaged over the batch
// axis "batch", which spans every rank's examples when the vmap is sharded.
auto dp_step(const Params& p, const Tensor& x, const Tensor& label) {
  auto [loss, g] = lanes::value_and_grad(example_loss)(p, x, label);
  Tensor sq = lanes::zeros({});
  for (const Tensor& gi : g) sq = sq + lanes::sum(gi * gi);
  const Tensor scale = lanes::minimum(lanes::scalar(1.0), kClip / (lanes::sqrt(sq) + 1e-12));
  Params mean_grad;
  for (const Tensor& gi : g) mean_grad.push_back(lanes::pmean(gi * scale, "batch"));
  return std::make_pair(lanes::pmean(loss, "batch"), mean_grad);
}

struct Run {
  std::vector<double> losses;
  std::vector<double> weights;  // every final weight, in order
};

Run train(bool sharded) {
  const auto keys = lanes::random::split(lanes::random::key(7), 6);
  Params p = {lanes::random::normal(keys[0], {kIn, kHidden}) * 0.4, lanes::zeros({kHidden}),
              lanes::random::normal(keys[1], {kHidden, kClasses}) * 0.4, lanes::zeros({kClasses})};
  // A fixed data set: inputs, and labels from a random linear teacher.
  const Tensor xs = lanes::random::normal(keys[2], {kSteps, kBatch, kIn});
  const Tensor teacher = lanes::random::normal(keys[3], {kIn, kClasses});
  const Tensor labels = lanes::argmax(lanes::matmul(xs, teacher), -1);

  lanes::VmapOptions options;
  options.axis_name = "batch";
  if (sharded) options.shard = lanes::distributed::world();
  auto step = lanes::vmap(dp_step, lanes::in_axes(lanes::none, 0, 0), lanes::none, options);

  Run run;
  for (int64_t s = 0; s < kSteps; ++s) {
    auto [loss, grads] = step(p, xs[s], labels[s]);
    run.losses.push_back(loss.item<float>());
    const auto noise_keys = lanes::random::split(lanes::random::fold_in(keys[4], s), 4);
    for (size_t i = 0; i < p.size(); ++i) {
      // DP-SGD's noise on the mean of the clipped gradients: sigma * C / B.
      const Tensor noise =
          lanes::random::normal(noise_keys[i], p[i].shape()) * (kNoise * kClip / double(kBatch));
      p[i] = p[i] - (grads[i] + noise) * kLearningRate;
    }
  }
  for (const Tensor& w : p)
    for (float v : w.contiguous().to_vector<float>()) run.weights.push_back(v);
  return run;
}

void save(const Run& run, const std::string& path) {
  std::ofstream out(path);
  out.precision(9);
  out << run.losses.size() << ' ' << run.weights.size() << '\n';
  for (double v : run.losses) out << v << '\n';
  for (double v : run.weights) out << v << '\n';
}

// The largest difference from the run saved in `path` (infinity when the file does not match).
double compare(const Run& run, const std::string& path) {
  std::ifstream in(path);
  size_t n_losses = 0, n_weights = 0;
  if (!(in >> n_losses >> n_weights) || n_losses != run.losses.size() ||
      n_weights != run.weights.size())
    return INFINITY;
  double worst = 0, v = 0;
  for (double want : run.losses) {
    if (!(in >> v)) return INFINITY;
    worst = std::max(worst, std::abs(v - want));
  }
  for (double want : run.weights) {
    if (!(in >> v)) return INFINITY;
    worst = std::max(worst, std::abs(v - want));
  }
  return worst;
}

}  // namespace

int main(int argc, char** argv) {
  bool single = false;
  std::string save_path, compare_path;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--single")) single = true;
    if (!std::strcmp(argv[i], "--save") && i + 1 < argc) save_path = argv[++i];
    if (!std::strcmp(argv[i], "--compare") && i + 1 < argc) compare_path = argv[++i];
  }
  if (!single) lanes::distributed::init(&argc, &argv);
  const int rank = single ? 0 : lanes::distributed::rank();
  int status = 0;
  try {
    const Run run = train(!single);
    if (rank == 0) {
      std::printf("DP-SGD, %s: batch %lld over %d process(es)\n",
                  single ? "one process" : "sharded", static_cast<long long>(kBatch),
                  single ? 1 : lanes::distributed::size());
      for (size_t s = 0; s < run.losses.size(); s += 4)
        std::printf("  step %2zu  loss %.6f\n", s, run.losses[s]);
      std::printf("  final loss %.6f\n", run.losses.back());
    }
    if (!save_path.empty() && rank == 0) save(run, save_path);
    if (!compare_path.empty()) {
      // Every rank holds the weights: each checks its own.
      const double diff = compare(run, compare_path);
      if (rank == 0)
        std::printf("  largest difference from %s: %.3g\n", compare_path.c_str(), diff);
      if (!(diff <= 1e-5)) {
        std::fprintf(stderr, "rank %d: differs from the single-process run by %g\n", rank, diff);
        status = 1;
      }
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "rank %d: %s\n", rank, e.what());
    status = 1;
  }
  if (!single) lanes::distributed::finalize();
  return status;
}
