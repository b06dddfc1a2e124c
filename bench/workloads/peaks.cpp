// The machine's peaks for the roofline (roofline.h), measured with one std::thread per bench
// thread, started together: the FMA loop keeps 12 independent accumulators per thread (enough to
// cover the FMA latency on two ports), the read loop sums a buffer, the write loop streams
// non-temporal stores (no read-for-ownership). Compiled for the build's -march (LANES_ARCH).
#include <xsimd/xsimd.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <thread>
#include <vector>
#if defined(__AVX512F__) || defined(__AVX__)
#include <immintrin.h>
#endif

#include "roofline.h"

namespace workloads {
namespace {

using Clock = std::chrono::steady_clock;
using Batch = xsimd::batch<float>;

/// Runs body(thread index) on `threads` threads released at once; the seconds until all ended.
double run_together(int threads, const std::function<void(int)>& body) {
  std::atomic<int> ready{0};
  std::atomic<bool> go{false};
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t)
    pool.emplace_back([&, t] {
      ready.fetch_add(1);
      while (!go.load()) std::this_thread::yield();
      body(t);
    });
  while (ready.load() < threads) std::this_thread::yield();
  const auto t0 = Clock::now();
  go.store(true);
  for (std::thread& th : pool) th.join();
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

constexpr int kAccumulators = 12;

/// iterations x 12 dependent-free FMAs on one thread; the result keeps the compiler honest.
float fma_loop(int64_t iterations) {
  Batch acc[kAccumulators];
  for (int k = 0; k < kAccumulators; ++k) acc[k] = Batch(1.0f + 0.001f * float(k));
  const Batch a(0.999999f), b(1e-7f);
  for (int64_t i = 0; i < iterations; ++i)
    for (int k = 0; k < kAccumulators; ++k) acc[k] = xsimd::fma(acc[k], a, b);
  Batch sum(0.0f);
  for (int k = 0; k < kAccumulators; ++k) sum += acc[k];
  return xsimd::hadd(sum);
}

double fma_gflops(int threads, int64_t iterations) {
  std::vector<float> sink(static_cast<size_t>(threads), 0.0f);
  double best = 0;
  for (int rep = 0; rep < 3; ++rep) {
    const double s = run_together(threads, [&](int t) { sink[size_t(t)] = fma_loop(iterations); });
    const double flops = 2.0 * double(Batch::size) * kAccumulators * double(iterations) * threads;
    best = std::max(best, flops / s / 1e9);
  }
  volatile float keep = sink[0];
  (void)keep;
  return best;
}

float sum_slice(const float* p, int64_t n) {
  Batch s0(0.0f), s1(0.0f), s2(0.0f), s3(0.0f);
  const int64_t w = int64_t(Batch::size);
  int64_t i = 0;
  for (; i + 4 * w <= n; i += 4 * w) {
    s0 += Batch::load_aligned(p + i);
    s1 += Batch::load_aligned(p + i + w);
    s2 += Batch::load_aligned(p + i + 2 * w);
    s3 += Batch::load_aligned(p + i + 3 * w);
  }
  float tail = 0;
  for (; i < n; ++i) tail += p[i];
  return xsimd::hadd(s0 + s1 + s2 + s3) + tail;
}

void stream_slice(float* p, int64_t n, float v) {
  int64_t i = 0;
#if defined(__AVX512F__)
  const __m512 x = _mm512_set1_ps(v);
  for (; i + 16 <= n; i += 16) _mm512_stream_ps(p + i, x);
  _mm_sfence();
#elif defined(__AVX__)
  const __m256 x = _mm256_set1_ps(v);
  for (; i + 8 <= n; i += 8) _mm256_stream_ps(p + i, x);
  _mm_sfence();
#endif
  for (; i < n; ++i) p[i] = v;
}

struct FreeAligned {
  void operator()(float* p) const { std::free(p); }
};

}  // namespace

Peaks measure_peaks(int threads, bool quick) {
  Peaks p;
  p.threads = threads;
  p.isa = Batch::arch_type::name();
  const int64_t iterations = quick ? 2'000'000 : 20'000'000;
  p.gflops = fma_gflops(threads, iterations);
  p.gflops_one = fma_gflops(1, iterations);

  // 1 GiB, twice the 480 MiB last-level cache these VMs report (256 MiB with --quick).
  const int64_t n = (quick ? int64_t(64) : int64_t(256)) << 20;
  std::unique_ptr<float, FreeAligned> buf(
      static_cast<float*>(std::aligned_alloc(64, size_t(n) * sizeof(float))));
  const int64_t per = (n / threads) / 64 * 64;
  auto slice = [&](int t) {
    return std::make_pair(buf.get() + t * per, t + 1 == threads ? n - t * per : per);
  };
  run_together(threads, [&](int t) {  // first touch, each thread its own pages
    auto [q, m] = slice(t);
    std::memset(q, 0, size_t(m) * sizeof(float));
  });
  std::vector<float> sink(static_cast<size_t>(threads));
  const double bytes = double(n) * sizeof(float);
  for (int rep = 0; rep < 3; ++rep) {
    const double w = run_together(threads, [&](int t) {
      auto [q, m] = slice(t);
      stream_slice(q, m, float(rep + 1));
    });
    p.write_gbs = std::max(p.write_gbs, bytes / w / 1e9);
    const double r = run_together(threads, [&](int t) {
      auto [q, m] = slice(t);
      sink[size_t(t)] = sum_slice(q, m);
    });
    p.read_gbs = std::max(p.read_gbs, bytes / r / 1e9);
  }
  volatile float keep = sink[0];
  (void)keep;
  return p;
}

}  // namespace workloads
