// The thread runtime: OpenBLAS must be the OpenMP build, and parallel_for must cover its range
// exactly once, respect the grain, and carry exceptions out of the parallel region.
#include <gtest/gtest.h>

#include <atomic>
#include <mutex>
#include <vector>

#include "lanes/lanes.h"

extern "C" int openblas_get_parallel();

TEST(Parallel, OpenBlasIsTheOpenMPBuild) {
  EXPECT_EQ(openblas_get_parallel(), 2) << "0 = sequential, 1 = pthreads, 2 = OpenMP";
}

TEST(Parallel, CoversRangeOnceInDisjointChunks) {
  for (int64_t n : {0, 1, 7, 1000, 100003}) {
    std::vector<std::atomic<int>> hits(n);
    std::atomic<int> chunks{0};
    lanes::parallel_for(n, 10, [&](int64_t begin, int64_t end) {
      EXPECT_LE(0, begin);
      EXPECT_LT(begin, end);
      EXPECT_LE(end, n);
      ++chunks;
      for (int64_t i = begin; i < end; ++i) ++hits[i];
    });
    for (int64_t i = 0; i < n; ++i) ASSERT_EQ(hits[i], 1) << "n=" << n << " i=" << i;
    EXPECT_LE(chunks.load(), std::max(1, lanes::num_threads()));
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
  const int before = lanes::num_threads();
  lanes::set_num_threads(1);
  EXPECT_EQ(lanes::num_threads(), 1);
  std::mutex m;
  int chunks = 0;
  lanes::parallel_for(1 << 20, 1, [&](int64_t, int64_t) {
    std::lock_guard<std::mutex> lock(m);
    ++chunks;
  });
  EXPECT_EQ(chunks, 1);
  lanes::set_num_threads(before);
  EXPECT_EQ(lanes::num_threads(), before);
}
