// Per-call overhead on a tiny input: eager ops, vmap (traces every call), and compile(vmap)
// (traced once, then the cached graph runs). Run: build/bench/call_overhead
#include <lanes/lanes.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <vector>

namespace {
template <class Fn>
double median_us(Fn&& fn, int runs = 20001) {
  for (int i = 0; i < 100; ++i) fn();
  std::vector<double> t;
  for (int i = 0; i < runs; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    fn();
    t.push_back(
        std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
  }
  std::nth_element(t.begin(), t.begin() + t.size() / 2, t.end());
  return t[t.size() / 2];
}
}  // namespace

int main() {
  const lanes::Tensor w = lanes::ones({4, 4});
  const lanes::Tensor x = lanes::ones({2, 4});
  auto f = [&](const lanes::Tensor& v) { return lanes::tanh(lanes::matmul(v, w)) * 2.0; };
  auto batched = lanes::vmap(f);
  auto compiled = lanes::compile(batched);
  std::printf("per-call overhead, f(v) = tanh(v @ W) * 2 on a (2, 4) batch, median of 20001\n");
  std::printf("  eager ops on the batch      %7.2f us\n",
              median_us([&] { return lanes::tanh(lanes::matmul(x, w)) * 2.0; }));
  std::printf("  vmap (traces every call)    %7.2f us\n", median_us([&] { return batched(x); }));
  std::printf("  compile(vmap)               %7.2f us\n", median_us([&] { return compiled(x); }));
  // The call path alone: a compiled function of perex_linear's arguments (two parameters, a
  // (10, 32) batch and its (10, 1) labels) that returns the parameters, with no kernel to run.
  // bench/python/call_overhead.py times the same through lanes.jit: the difference is what the
  // Python layer adds to every jitted call.
  const std::vector<lanes::Tensor> params{lanes::ones({32, 1}), lanes::zeros({1})};
  const lanes::Tensor batch = lanes::ones({10, 32}), labels = lanes::ones({10, 1});
  auto no_work = lanes::compile([](const std::vector<lanes::Tensor>& p, const lanes::Tensor&,
                                   const lanes::Tensor&) { return p; });
  std::printf("  compile(p, x, y -> p), no work %4.2f us\n",
              median_us([&] { return no_work(params, batch, labels); }));
  // The thread pool's dispatch: a parallel_for of n trivial chunks, and of 50 chunks of ~1 us.
  std::vector<double> sink(64);
  auto spin_us = [](double us) {
    const auto until =
        std::chrono::steady_clock::now() + std::chrono::duration<double, std::micro>(us);
    while (std::chrono::steady_clock::now() < until) {
    }
  };
  std::printf("parallel_for at %d threads, median of 20001\n", lanes::num_threads());
  for (int64_t n : {2, 8}) {
    std::printf("  %ld empty chunks               %7.2f us\n", static_cast<long>(n), median_us([&] {
                  lanes::parallel_for(n, 1, [&](int64_t b, int64_t) { sink[b] += 1; });
                }));
  }
  std::printf("  50 chunks of 1 us (50 us serial) %5.2f us\n", median_us([&] {
                lanes::parallel_for(50, 1, [&](int64_t b, int64_t e) { spin_us(double(e - b)); });
              }));
  return 0;
}
