// Peak tensor memory of a compiled, vmapped while_loop against the same loop stopped after one
// iteration: a loop reuses its buffers (each iteration's carry replaces the last), so its peak is
// that of one iteration plus the carries, whatever the trip count. Prints both and their ratio
// (the target is 1.2 or less) for the Newton solve of bench/workloads (65536 lanes, float64, 2 to
// 25 iterations per lane) under each loop strategy, and for fori_loops of 1 and 1000 steps.
//
//     build/bench/loop_memory
#include <cmath>
#include <cstdio>

#include "lanes/lanes.h"

namespace {

using lanes::Tensor;

Tensor step(const Tensor& x, const Tensor& a) { return (x + a / x) * 0.5; }

// Newton's iteration for sqrt(a), at most `cap` iterations.
Tensor newton(const Tensor& a, int cap) {
  using C = std::pair<Tensor, Tensor>;
  return lanes::while_loop(
             [&](const C& c) {
               return lanes::logical_and(lanes::abs(c.first * c.first - a) > a * 1e-12,
                                         c.second < cap);
             },
             [&](const C& c) { return C(step(c.first, a), c.second + 1); },
             C(a + 1.0, lanes::scalar(0, lanes::kInt32)))
      .first;
}

// The peak bytes live during fn() beyond those live before it, after a warm-up call.
template <class Fn>
double peak_mb(Fn&& fn) {
  fn();
  const size_t before = lanes::memory_stats().live_bytes;
  lanes::reset_peak_memory();
  fn();
  return double(lanes::memory_stats().peak_bytes - before) / (1 << 20);
}

}  // namespace

int main() {
  const Tensor a = lanes::pow(
      lanes::scalar(10.0, lanes::kFloat64),
      lanes::random::uniform(lanes::random::key(50), {65536}, -4.0, 8.0, lanes::kFloat64));
  const char* names[] = {"auto", "mask", "compact"};
  for (auto s :
       {lanes::LoopStrategy::Auto, lanes::LoopStrategy::Mask, lanes::LoopStrategy::Compact}) {
    lanes::VmapOptions o;
    o.loop = s;
    auto one = lanes::compile(lanes::vmap([](const Tensor& v) { return newton(v, 1); }, 0, 0, o));
    auto all = lanes::compile(lanes::vmap([](const Tensor& v) { return newton(v, 100); }, 0, 0, o));
    const double one_mb = peak_mb([&] { return one(a); }), all_mb = peak_mb([&] { return all(a); });
    std::printf("while_loop %-7s: one iteration %.2f MB, to convergence %.2f MB: %.2fx\n",
                names[int(s)], one_mb, all_mb, all_mb / one_mb);
  }
  auto fori = [&](int steps) {
    return lanes::compile(lanes::vmap([steps](const Tensor& v) {
      return lanes::fori_loop(
          0, steps, [&](const Tensor&, const Tensor& x) { return step(x, v); }, v + 1.0);
    }));
  };
  auto f1 = fori(1), f1000 = fori(1000);
  const double one_mb = peak_mb([&] { return f1(a); }), many_mb = peak_mb([&] { return f1000(a); });
  std::printf("fori_loop: 1 step %.2f MB, 1000 steps %.2f MB: %.2fx\n", one_mb, many_mb,
              many_mb / one_mb);
  return 0;
}
