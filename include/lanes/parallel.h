// The one thread runtime: OpenMP (libgomp), which OpenBLAS's OpenMP build shares, so a parallel
// loop of single-threaded GEMMs and a threaded GEMM never oversubscribe the cores.
#pragma once

#include <cstdint>
#include <functional>

namespace lanes {

/// Threads lanes uses (default: OpenMP's, i.e. the cores or OMP_NUM_THREADS).
int num_threads();
/// Sets the threads lanes and OpenBLAS use.
void set_num_threads(int n);

/// Calls fn(begin, end) on disjoint chunks covering [0, n), in parallel when n >= 2 * grain and
/// we are not already inside a parallel region; each chunk has at least `grain` items. A dispatch
/// costs about a microsecond, so grain should be a few microseconds of work.
void parallel_for(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& fn);

}  // namespace lanes
