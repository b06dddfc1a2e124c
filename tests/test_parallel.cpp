// The thread runtime (lanes/parallel.h): one pool for the process, chunks claimed dynamically by
// the caller and idle workers. parallel_for must cover its range exactly once in chunks that do
// not depend on the thread count, carry exceptions out, never wait for a worker that has not
// started (the caller finishes alone), and share the pool between application threads.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <mutex>
#include <set>
#include <thread>
#include <utility>
#include <vector>

#include "lanes/lanes.h"

extern "C" int openblas_get_parallel();
extern "C" int openblas_get_num_threads();

namespace {

using Chunks = std::set<std::pair<int64_t, int64_t>>;

Chunks chunks_of(int64_t n, int64_t grain) {
  std::mutex m;
  Chunks seen;
  lanes::parallel_for(n, grain, [&](int64_t begin, int64_t end) {
    const std::lock_guard<std::mutex> hold(m);
    seen.emplace(begin, end);
  });
  return seen;
}

// Restores the thread count when a test ends.
struct Threads {
  int before = lanes::num_threads();
  explicit Threads(int n) { lanes::set_num_threads(n); }
  ~Threads() { lanes::set_num_threads(before); }
};

}  // namespace

TEST(Parallel, OpenBlasIsThePthreadsBuildRunSingleThreaded) {
  EXPECT_EQ(openblas_get_parallel(), 1) << "0 = sequential, 1 = pthreads, 2 = OpenMP";
  const lanes::Tensor a = lanes::ones({300, 300});
  (void)lanes::matmul(a, a);  // the first GEMM sets BLAS to one thread
  EXPECT_EQ(openblas_get_num_threads(), 1);
}

TEST(Parallel, CoversRangeOnceInDisjointChunks) {
  for (int64_t n : {0, 1, 7, 1000, 100003}) {
    std::vector<std::atomic<int>> hits(n);
    std::atomic<int> chunks{0};
    lanes::parallel_for(n, 10, [&](int64_t begin, int64_t end) {
      EXPECT_LE(0, begin);
      EXPECT_LT(begin, end);
      EXPECT_LE(end, n);
      EXPECT_TRUE(end - begin >= 10 || (begin == 0 && end == n)) << begin << " " << end;
      ++chunks;
      for (int64_t i = begin; i < end; ++i) ++hits[i];
    });
    for (int64_t i = 0; i < n; ++i) ASSERT_EQ(hits[i], 1) << "n=" << n << " i=" << i;
  }
}

TEST(Parallel, ChunksDoNotDependOnTheThreadCount) {
  for (int64_t n : {20, 1000, 100003}) {
    Chunks at_one, at_two, at_five;
    {
      Threads t(1);
      at_one = chunks_of(n, 10);
    }
    {
      Threads t(2);
      at_two = chunks_of(n, 10);
    }
    {
      Threads t(5);
      at_five = chunks_of(n, 10);
    }
    EXPECT_EQ(at_one, at_two) << n;
    EXPECT_EQ(at_one, at_five) << n;
    EXPECT_GE(at_one.size(), 2u) << n;
  }
}

TEST(Parallel, SmallRangesRunInline) {
  int calls = 0;  // not atomic: must run on this thread in one chunk
  lanes::parallel_for(15, 10, [&](int64_t begin, int64_t end) {
    ++calls;
    EXPECT_EQ(begin, 0);
    EXPECT_EQ(end, 15);
  });
  EXPECT_EQ(calls, 1);
}

TEST(Parallel, NestedCallsRunOnTheChunksThread) {
  Threads t(2);
  std::atomic<int> wrong{0};
  lanes::parallel_for(8, 1, [&](int64_t, int64_t) {
    const auto id = std::this_thread::get_id();
    lanes::parallel_for(1000, 1, [&](int64_t, int64_t) {
      if (std::this_thread::get_id() != id) ++wrong;
    });
  });
  EXPECT_EQ(wrong.load(), 0);
}

TEST(Parallel, RethrowsExceptionsFromWorkers) {
  EXPECT_THROW(lanes::parallel_for(1 << 20, 1,
                                   [](int64_t begin, int64_t) {
                                     if (begin > 0) throw lanes::Error("boom");
                                   }),
               lanes::Error);
  // The runtime still works afterwards.
  std::atomic<int64_t> total{0};
  lanes::parallel_for(1000, 1, [&](int64_t b, int64_t e) { total += e - b; });
  EXPECT_EQ(total.load(), 1000);
}

TEST(Parallel, SetNumThreads) {
  Threads t(1);
  EXPECT_EQ(lanes::num_threads(), 1);
  const auto id = std::this_thread::get_id();
  std::atomic<int> elsewhere{0};
  lanes::parallel_for(1 << 20, 1, [&](int64_t, int64_t) {
    if (std::this_thread::get_id() != id) ++elsewhere;
  });
  EXPECT_EQ(elsewhere.load(), 0);
  EXPECT_THROW(lanes::set_num_threads(0), lanes::Error);
}

// The property that makes lanes fast on a busy machine: a call never waits for a worker that
// has not started its chunk. Here every worker is stuck inside another thread's job; the
// caller must still finish its own job, alone.
TEST(Parallel, CallerFinishesAloneWhileEveryWorkerIsBusy) {
  Threads t(2);
  std::atomic<int> started{0};
  std::atomic<bool> release{false};
  std::thread blocker([&] {
    lanes::parallel_for(2, 1, [&](int64_t, int64_t) {
      ++started;
      while (!release.load()) std::this_thread::sleep_for(std::chrono::microseconds(100));
    });
  });
  while (started.load() < 2) std::this_thread::sleep_for(std::chrono::microseconds(100));
  // The blocker's caller and the one worker both sit in the blocker's chunks now.
  std::atomic<int64_t> total{0};
  lanes::parallel_for(100000, 10, [&](int64_t b, int64_t e) { total += e - b; });
  EXPECT_EQ(total.load(), 100000);
  release = true;
  blocker.join();
}

// Application threads calling at once share the pool's workers: no thread runs a chunk but the
// callers and the num_threads() - 1 workers.
TEST(Parallel, ConcurrentCallersShareOnePool) {
  Threads t(2);
  std::mutex m;
  std::set<std::thread::id> runners;
  std::atomic<int64_t> total{0};
  std::vector<std::thread> callers;
  for (int c = 0; c < 4; ++c)
    callers.emplace_back([&] {
      for (int rep = 0; rep < 200; ++rep)
        lanes::parallel_for(1000, 10, [&](int64_t b, int64_t e) {
          total += e - b;
          const std::lock_guard<std::mutex> hold(m);
          runners.insert(std::this_thread::get_id());
        });
    });
  for (std::thread& c : callers) c.join();
  EXPECT_EQ(total.load(), 4 * 200 * 1000);
  EXPECT_LE(runners.size(), 4u + 1u) << "4 callers and one worker";
}

// A GEMM large enough to split over the pool gives the same bits at every thread count and
// matches a float64 reference.
TEST(Parallel, SplitGemmMatchesOneThreadAndFloat64) {
  const int64_t m = 300, k = 70, n = 200;
  std::vector<float> av(m * k), bv(k * n);
  for (int64_t i = 0; i < m * k; ++i) av[i] = float(std::sin(0.37 * double(i)));
  for (int64_t i = 0; i < k * n; ++i) bv[i] = float(std::cos(0.11 * double(i)));
  const lanes::Tensor a = lanes::tensor(av, {m, k}), b = lanes::tensor(bv, {k, n});
  std::vector<float> one, two;
  {
    Threads t(1);
    one = lanes::matmul(a, b).to_vector<float>();
  }
  {
    Threads t(2);
    two = lanes::matmul(a, b).to_vector<float>();
    // The transposed operands take the other split (by columns when the output is wide).
    const std::vector<float> wide =
        lanes::matmul(lanes::transpose(b), lanes::transpose(a)).to_vector<float>();
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double want = 0;
        for (int64_t p = 0; p < k; ++p) want += double(av[i * k + p]) * double(bv[p * n + j]);
        ASSERT_NEAR(wide[j * m + i], want, 1e-4 * (1 + std::abs(want)));
      }
  }
  ASSERT_EQ(one.size(), size_t(m * n));
  EXPECT_EQ(one, two);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double want = 0;
      for (int64_t p = 0; p < k; ++p) want += double(av[i * k + p]) * double(bv[p * n + j]);
      ASSERT_NEAR(one[i * n + j], want, 1e-4 * (1 + std::abs(want)));
    }
}
