// Concurrency (issue 17): 8 std::threads share one compiled, one vmapped, one grad, one jacrev and
// one vmapped cond / while_loop function object and call them on several input signatures, each
// thread in its own order, so first calls of new signatures race each other (trace, cache fill,
// the call-body registry) while other threads hit the entries already built. Every result must
// equal what fresh objects compute on one thread. CI runs this under ThreadSanitizer.
#include <gtest/gtest.h>

#include <atomic>
#include <barrier>
#include <cmath>
#include <thread>

#include "lanes/lanes.h"

using lanes::DType;
using lanes::Shape;
using lanes::Tensor;

namespace {

constexpr int kThreads = 8;
constexpr int kRounds = 20;  // calls per thread per signature: first sightings, then cached

Tensor data(const Shape& s, double phase) {
  const int64_t n = lanes::shape_numel(s);
  std::vector<double> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[size_t(i)] = std::sin(0.7 * double(i) + phase);
  return lanes::tensor(v, s);
}

const Tensor& weight() {
  static const Tensor w = data({4, 3}, 0.3);
  return w;
}

// The functions under test; each builder makes a fresh object (fresh caches).
Tensor mlp(const Tensor& x) { return lanes::tanh(lanes::matmul(x, weight())) * 2.0; }
Tensor loss(const Tensor& x) { return lanes::sum(lanes::square(mlp(x))); }
Tensor branchy(const Tensor& x) {
  return lanes::cond(
      lanes::sum(x) > 0.0, [](const Tensor& v) { return lanes::sin(v); },
      [](const Tensor& v) { return v * v; }, x);
}
Tensor loopy(const Tensor& x) {  // a per-example trip count: floor(sum |x|) clipped to [0, 5]
  using C = std::pair<Tensor, Tensor>;
  const Tensor n = lanes::clip(lanes::floor(lanes::sum(lanes::abs(x))), 0, 5);
  const C out = lanes::while_loop(
      [n](const C& c) { return c.first < n; },
      [](const C& c) { return C(c.first + 1.0, c.second * 0.9 + lanes::cos(c.second) * 0.1); },
      C(lanes::zeros({}, DType::Float64), x));
  return out.second;
}

struct Functions {
  decltype(lanes::compile(mlp)) compiled = lanes::compile(mlp);
  decltype(lanes::vmap(mlp)) vmapped = lanes::vmap(mlp);
  decltype(lanes::grad(loss)) gradient = lanes::grad(loss);
  decltype(lanes::vmap(lanes::grad(loss))) per_example = lanes::vmap(lanes::grad(loss));
  decltype(lanes::jacrev(mlp)) jacobian = lanes::jacrev(mlp);
  decltype(lanes::vmap(branchy)) conds = lanes::vmap(branchy);
  decltype(lanes::vmap(loopy)) loops = lanes::vmap(loopy);
  decltype(lanes::compile(lanes::vmap(loopy))) compiled_loops = lanes::compile(lanes::vmap(loopy));

  static constexpr int kCount = 8;
  Tensor call(int which, const Tensor& example, const Tensor& batch) const {
    switch (which) {
      case 0:
        return compiled(example);
      case 1:
        return vmapped(batch);
      case 2:
        return gradient(example);
      case 3:
        return per_example(batch);
      case 4:
        return jacobian(example);
      case 5:
        return conds(batch);
      case 6:
        return loops(batch);
      default:
        return compiled_loops(batch);
    }
  }
};

// Signatures: (example, batch) pairs of different shapes.
struct Input {
  Tensor example, batch;
};
std::vector<Input> inputs() {
  std::vector<Input> out;
  for (int64_t rows : {1, 2, 3, 5})
    out.push_back({data({rows, 4}, double(rows)), data({6, rows, 4}, -double(rows))});
  out.push_back({data({4}, 0.5), data({7, 4}, 1.5)});
  return out;
}

bool same(const Tensor& a, const Tensor& b) {
  if (a.shape() != b.shape() || a.dtype() != b.dtype()) return false;
  const auto x = a.to_vector<double>(), y = b.to_vector<double>();
  for (size_t i = 0; i < x.size(); ++i)  // eager and optimized runs may round differently
    if (!(std::abs(x[i] - y[i]) <= 1e-12 * (1 + std::abs(y[i])))) return false;
  return true;
}

TEST(Threads, SharedFunctionsMatchOneThread) {
  const std::vector<Input> in = inputs();
  std::vector<std::vector<Tensor>> want(Functions::kCount);
  {
    const Functions reference;
    for (int f = 0; f < Functions::kCount; ++f)
      for (const Input& x : in) want[f].push_back(reference.call(f, x.example, x.batch));
  }
  const Functions shared;
  std::atomic<int> mismatches{0}, errors{0};
  std::barrier start(kThreads);
  auto check = [&](int t, int g, size_t s) {
    try {
      if (!same(shared.call(g, in[s].example, in[s].batch), want[g][s])) ++mismatches;
    } catch (const std::exception& e) {
      ++errors;
      std::fprintf(stderr, "thread %d, function %d: %s\n", t, g, e.what());
    }
  };
  auto work = [&](int t) {
    // All threads call each (function, signature) pair at once: its first call (trace, eager
    // first sighting), its second (the cache entry built) and its third (a hit) race.
    for (int pass = 0; pass < 3; ++pass)
      for (size_t s = 0; s < in.size(); ++s)
        for (int g = 0; g < Functions::kCount; ++g) {
          start.arrive_and_wait();
          check(t, g, s);
        }
    // Then each thread in its own order: entries being built on one thread, hit on another.
    for (int round = 0; round < kRounds; ++round)
      for (size_t k = 0; k < in.size(); ++k)
        for (int f = 0; f < Functions::kCount; ++f)
          check(t, (f + t + round) % Functions::kCount, (k + size_t(t)) % in.size());
  };
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) threads.emplace_back(work, t);
  for (std::thread& th : threads) th.join();
  EXPECT_EQ(mismatches.load(), 0);
  EXPECT_EQ(errors.load(), 0);
  EXPECT_EQ(shared.compiled.cache_size(), in.size());
}

// Fresh function objects made and called on every thread at once: the process-wide caches
// (call bodies, sub-graph ids) are what they share.
TEST(Threads, FreshObjectsPerThreadMatchOneThread) {
  const std::vector<Input> in = inputs();
  std::vector<Tensor> want;
  for (const Input& x : in) want.push_back(lanes::vmap(lanes::grad(loss))(x.batch));
  std::atomic<int> mismatches{0};
  std::barrier start(kThreads);
  auto work = [&](int t) {
    start.arrive_and_wait();
    for (int round = 0; round < kRounds; ++round) {
      const size_t s = size_t(t + round) % in.size();
      const auto f = lanes::vmap(lanes::grad(loss));
      for (int call = 0; call < 3; ++call)
        if (!same(f(in[s].batch), want[s])) ++mismatches;
    }
  };
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) threads.emplace_back(work, t);
  for (std::thread& th : threads) th.join();
  EXPECT_EQ(mismatches.load(), 0);
}

}  // namespace
