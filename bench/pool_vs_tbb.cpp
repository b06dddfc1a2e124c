// lanes' thread pool against oneTBB (libtbb-dev, the field's work-stealing library) on the
// parallel loops lanes issues: many short ones back to back (a lane loop, a scan's steps) and
// fewer long ones (a large elementwise op). Built only when CMake finds TBB.
//
//     build/bench/pool_vs_tbb [--threads N]
//
// Run it alone, then beside a second copy of itself (`build/bench/pool_vs_tbb & build/bench/
// pool_vs_tbb; wait`) or beside a spinner, and compare: what matters on a shared machine is the
// second number relative to the first.
#include <oneapi/tbb/global_control.h>
#include <oneapi/tbb/parallel_for.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "lanes/parallel.h"

namespace {

// `iters` sines per item of [begin, end): arithmetic without memory traffic.
double work(int64_t begin, int64_t end, int iters) {
  double acc = 0;
  for (int64_t i = begin; i < end; ++i)
    for (int k = 0; k < iters; ++k) acc += std::sin(double(i + k));
  return acc;
}

template <class ParallelFor>
double ms_per_call(int calls, int64_t n, int iters, ParallelFor pfor) {
  std::vector<double> sink(64, 0);
  const auto t0 = std::chrono::steady_clock::now();
  for (int c = 0; c < calls; ++c)
    pfor(n, [&](int64_t b, int64_t e) { sink[size_t(b) % 64] += work(b, e, iters); });
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count() /
         calls;
}

}  // namespace

int main(int argc, char** argv) {
  int threads = 2;
  for (int i = 1; i + 1 < argc; ++i)
    if (!std::strcmp(argv[i], "--threads")) threads = std::atoi(argv[++i]);
  lanes::set_num_threads(threads);
  const tbb::global_control limit(tbb::global_control::max_allowed_parallelism, size_t(threads));
  auto lanes_for = [](int64_t n, auto fn) { lanes::parallel_for(n, 1, fn); };
  auto tbb_for = [](int64_t n, auto fn) {
    tbb::parallel_for(tbb::blocked_range<int64_t>(0, n),
                      [&](const tbb::blocked_range<int64_t>& r) { fn(r.begin(), r.end()); });
  };
  struct Case {
    const char* name;
    int calls;
    int64_t n;
    int iters;
  } cases[] = {{"short: 20000 loops, 16 items x 8 sin", 20000, 16, 8},
               {"medium: 2000 loops, 64 items x 80 sin", 2000, 64, 80},
               {"long: 100 loops, 256 items x 800 sin", 100, 256, 800}};
  std::printf("%d threads, ms per loop (lower is better)\n%-38s %10s %10s\n", threads, "loop",
              "lanes", "oneTBB");
  for (const Case& c : cases) {
    const double a = ms_per_call(c.calls, c.n, c.iters, lanes_for);
    const double b = ms_per_call(c.calls, c.n, c.iters, tbb_for);
    std::printf("%-38s %10.4f %10.4f\n", c.name, a, b);
  }
  return 0;
}
