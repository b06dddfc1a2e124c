// The one thread runtime: a pool of worker threads for the whole process (src/runtime/
// thread_pool.h), shared by every kernel and by the GEMMs (OpenBLAS runs single-threaded inside
// lanes' own blocking), and by every application thread that calls lanes.
//
// It is built for shared machines: a parallel_for never waits for a thread that has not started
// its work (the caller claims chunks itself and can finish them all alone), and idle workers
// sleep after a short spin. Environment: LANES_NUM_THREADS (else OMP_NUM_THREADS, else the cores
// this process may run on) sets the default thread count; LANES_SPIN_US (default 300) how long
// an idle worker spins, yielding the core, before it sleeps.
#pragma once

#include <cstdint>
#include <functional>

namespace lanes {

/// Threads a parallel_for may use, the caller included.
int num_threads();
/// Sets the threads a parallel_for may use (at least 1); 1 runs everything on the caller.
void set_num_threads(int n);

/// Calls fn(begin, end) on disjoint chunks covering [0, n), in parallel when n >= 2 * grain and
/// we are not already inside a parallel_for (a nested call runs its chunks on the calling
/// thread); each chunk has at least `grain` items. The chunks depend on n and grain (and the
/// machine's core count), never on the thread count or on timing, so a kernel whose result
/// depends on its chunking gives the same bits at every thread count. A dispatch costs about a
/// microsecond, so grain should be a few microseconds of work. The first exception a chunk
/// throws is rethrown here, after the chunks already started have finished.
void parallel_for(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& fn);

}  // namespace lanes
