// Scaling of data-parallel per-example gradients across MPI ranks: perex_mlp (MLP 784-512-512-10,
// tanh, softmax cross-entropy; WORKLOADS.md), each example's gradient w.r.t. every weight, averaged
// with pmean over the batch axis of a vmap sharded across the ranks. Every rank holds the same
// batch (ShardInputs::Whole) and computes its share of the examples; the averaged gradients
// (669,706 floats, 2.68 MB) are combined with one MPI_Allreduce per weight.
//
//     mpirun -np 1 --bind-to none ./build/bench/scaling_mpi --threads 1
//     mpirun -np 2 --bind-to none ./build/bench/scaling_mpi --threads 1
//
// Rows (JSON lines, then a table): `sharded` is the whole step; `allreduce` is MPI_Allreduce of
// the gradient bytes alone (the communication part), and with one rank `unsharded` is the same
// step as an ordinary vmap (no MPI), for the sharding overhead. Options: --batch N (256),
// --runs N (20), --threads N (pool threads per rank).
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "lanes/distributed.h"
#include "lanes/lanes.h"

namespace {

using lanes::Tensor;
using Params = std::vector<Tensor>;  // w1, b1, w2, b2, w3, b3

Tensor normal(uint64_t seed, const lanes::Shape& shape, double scale = 1.0) {
  return lanes::random::normal(lanes::random::key(seed), shape) * scale;
}

Tensor loss(const Params& q, const Tensor& x, const Tensor& y) {
  const Tensor h1 = lanes::tanh(lanes::matmul(x, q[0]) + q[1]);
  const Tensor h2 = lanes::tanh(lanes::matmul(h1, q[2]) + q[3]);
  return lanes::softmax_cross_entropy(lanes::matmul(h2, q[4]) + q[5], y);
}

Params mean_gradient(const Params& p, const Tensor& x, const Tensor& y) {
  Params g = lanes::grad(loss)(p, x, y);
  for (Tensor& gi : g) gi = lanes::pmean(gi, "batch");
  return g;
}

// Median over `runs` timed calls after two warm-up calls, with every rank starting together.
template <class F>
double median_ms(int runs, F&& f) {
  f();
  f();
  std::vector<double> ms;
  for (int r = 0; r < runs; ++r) {
    MPI_Barrier(MPI_COMM_WORLD);
    const auto t0 = std::chrono::steady_clock::now();
    f();
    ms.push_back(
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(ms.begin(), ms.end());
  // The slowest rank's median: a step ends when every rank has its gradients.
  double median = ms[ms.size() / 2], worst = 0;
  MPI_Allreduce(&median, &worst, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return worst;
}

}  // namespace

int main(int argc, char** argv) {
  lanes::distributed::init(&argc, &argv);
  int64_t batch = 256;
  int runs = 20;
  for (int i = 1; i + 1 < argc; ++i) {
    if (!std::strcmp(argv[i], "--batch")) batch = std::atoll(argv[++i]);
    if (!std::strcmp(argv[i], "--runs")) runs = std::atoi(argv[++i]);
    if (!std::strcmp(argv[i], "--threads")) lanes::set_num_threads(std::atoi(argv[++i]));
  }
  const int ranks = lanes::distributed::size(), rank = lanes::distributed::rank();
  const Params p{normal(30, {784, 512}, 1 / std::sqrt(784.0)), normal(31, {512}, 0.1),
                 normal(32, {512, 512}, 1 / std::sqrt(512.0)), normal(33, {512}, 0.1),
                 normal(34, {512, 10}, 1 / std::sqrt(512.0)),  normal(35, {10}, 0.1)};
  const Tensor x = normal(36, {batch, 784});
  const Tensor y =
      lanes::cast(lanes::floor(lanes::random::uniform(lanes::random::key(37), {batch}, 0.0, 10.0)),
                  lanes::DType::Int32);

  lanes::VmapOptions options;
  options.axis_name = "batch";
  options.shard = lanes::distributed::world();
  auto sharded =
      lanes::vmap(mean_gradient, lanes::in_axes(lanes::none, 0, 0), lanes::none, options);
  double checksum = 0;
  const double step_ms = median_ms(runs, [&] {
    const Params g = sharded(p, x, y);
    checksum = lanes::sum(g[0]).item<float>();
  });

  int64_t floats = 0;
  for (const Tensor& w : p) floats += w.numel();
  std::vector<float> send(static_cast<size_t>(floats), 1.0f), recv(static_cast<size_t>(floats));
  const double allreduce_ms = median_ms(runs, [&] {
    MPI_Allreduce(send.data(), recv.data(), int(floats), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
  });

  double unsharded_ms = 0;
  if (ranks == 1) {
    lanes::VmapOptions plain;
    plain.axis_name = "batch";
    auto local = lanes::vmap(mean_gradient, lanes::in_axes(lanes::none, 0, 0), lanes::none, plain);
    unsharded_ms = median_ms(runs, [&] { (void)lanes::sum(local(p, x, y)[0]).item<float>(); });
  }
  if (rank == 0) {
    const int threads = lanes::num_threads();
    auto row = [&](const char* variant, double ms) {
      std::printf(
          "{\"workload\":\"perex_mlp_pmean\",\"variant\":\"%s\",\"ranks\":%d,\"threads\":%d,"
          "\"batch\":%lld,\"median_ms\":%.3f,\"checksum\":%.6g}\n",
          variant, ranks, threads, static_cast<long long>(batch), ms, checksum);
    };
    row("sharded", step_ms);
    row("allreduce", allreduce_ms);
    if (ranks == 1) row("unsharded", unsharded_ms);
    std::printf(
        "\nperex_mlp, per-example gradients averaged with pmean, batch %lld, %d rank(s) x "
        "%d thread(s)\n  step %.2f ms (%.0f examples/s); allreduce of %.2f MB alone %.3f ms",
        static_cast<long long>(batch), ranks, threads, step_ms, double(batch) / step_ms * 1e3,
        double(floats) * 4 / 1e6, allreduce_ms);
    if (ranks == 1) std::printf("; unsharded vmap %.2f ms", unsharded_ms);
    std::printf("\n");
  }
  lanes::distributed::finalize();
  return 0;
}
