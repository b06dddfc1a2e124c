// Memory over many calls (issue 17): compiled, vmapped, grad and vmap(grad) functions built from
// fresh closures, each capturing new tensors, called again and again. What a call leaves behind
// must not grow with the number of calls: live tensor bytes (lanes::memory_stats) return to a
// plateau, and the process-wide caches stay within their documented bounds (src/ir/call.cpp: 16
// call bodies + 64 keys seen once; src/transforms/subgraphs.cpp: 1024 sub-graph ids). Prints
// the figures it checks.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>

#include "ir/graph_key.h"
#include "lanes/lanes.h"

using lanes::DType;
using lanes::Tensor;

namespace {

// 11 calls each: 110,000 calls. Under the sanitizers (several times slower, and one of CI's
// longest ASan tests) 33,000: growth at the rate a leak would have, ~300 bytes a round, still
// exceeds the 256 KiB bound after the warm-up, and LeakSanitizer checks every allocation anyway.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_UNDEFINED__)
constexpr int kIterations = 3000;
#else
constexpr int kIterations = 10000;
#endif
constexpr size_t kCallCacheBound = 16 + 64;
constexpr size_t kSubgraphIdBound = 1024;

Tensor filled(const lanes::Shape& s, double v) { return lanes::full(s, v, DType::Float64); }

// One round: fresh tensors, fresh closures, fresh transformed functions; returns a checksum so
// nothing is optimized away. Calls each several times: first sightings run eagerly, later calls
// build and then hit the cache entries (which pin the captured tensors).
double one_round(int i) {
  const Tensor w = filled({8, 4}, 0.01 * (i % 97));
  const Tensor b = filled({4}, 0.001 * i);
  auto f = [w, b](const Tensor& x) { return lanes::tanh(lanes::matmul(x, w) + b); };
  auto loss = [f](const Tensor& x) { return lanes::sum(lanes::square(f(x))); };
  auto branchy = [w](const Tensor& x) {
    return lanes::cond(
        lanes::sum(x) > 0.0, [w](const Tensor& v) { return lanes::matmul(v, w); },
        [w](const Tensor& v) { return lanes::matmul(v * 2.0, w); }, x);
  };
  const Tensor x = filled({2, 8}, 0.5), xs = filled({3, 2, 8}, -0.25 + 1e-4 * i);
  double sum = 0;
  const auto compiled = lanes::compile(f);
  for (int k = 0; k < 2; ++k) sum += lanes::sum(compiled(x)).item<double>();
  const auto batched = lanes::vmap(f);
  for (int k = 0; k < 3; ++k) sum += lanes::sum(batched(xs)).item<double>();
  sum += lanes::sum(lanes::grad(loss)(x)).item<double>();
  const auto per_example = lanes::vmap(lanes::grad(loss));  // grad under a trace: call bodies
  for (int k = 0; k < 3; ++k) sum += lanes::sum(per_example(xs)).item<double>();
  const auto conds = lanes::compile(lanes::vmap(branchy));
  for (int k = 0; k < 2; ++k) sum += lanes::sum(conds(xs)).item<double>();
  return sum;
}

TEST(MemoryBounds, FreshClosuresKeepMemoryAndCachesBounded) {
  // Warm up: the caches fill to their bounds and the allocator reaches its working set.
  double check = 0;
  for (int i = 0; i < 500; ++i) check += one_round(i);
  const size_t plateau = lanes::memory_stats().live_bytes;
  size_t most_live = plateau, most_calls = 0, most_ids = 0;
  for (int i = 500; i < kIterations; ++i) {
    check += one_round(i);
    if (i % 500 == 0) {
      most_live = std::max(most_live, lanes::memory_stats().live_bytes);
      most_calls = std::max(most_calls, lanes::detail::call_cache_entries());
      most_ids = std::max(most_ids, lanes::detail::subgraph_id_entries());
    }
  }
  const lanes::MemoryStats end = lanes::memory_stats();
  std::printf(
      "%d calls: live tensor bytes %zu after warm-up, %zu at most, %zu at the end (peak %zu); "
      "call cache %zu keys at most (bound %zu), sub-graph ids %zu at most (bound %zu); "
      "checksum %g\n",
      kIterations * 11, plateau, most_live, end.live_bytes, end.peak_bytes, most_calls,
      kCallCacheBound, most_ids, kSubgraphIdBound, check);
  // The caches hold a bounded number of entries, each pinning a few hundred bytes of captured
  // tensors; growth with the calls would be megabytes here (about 300 bytes a round).
  EXPECT_LE(most_live, plateau + (size_t{256} << 10));
  EXPECT_LE(end.live_bytes, plateau + (size_t{256} << 10));
  EXPECT_LE(most_calls, kCallCacheBound);
  EXPECT_LE(most_ids, kSubgraphIdBound);
  EXPECT_TRUE(std::isfinite(check));
}

}  // namespace
