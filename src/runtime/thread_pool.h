// The process's one pool of worker threads, behind parallel_for (lanes/parallel.h).
//
// Built for machines that other work shares (a second training job, MPI ranks on one node, a
// data loader): a call never waits for a thread that has not started its work.
//  - A call splits [0, n) into chunks and publishes them as a job; the calling thread claims
//    chunks itself, and idle workers claim the rest. With every worker descheduled, the caller
//    runs the whole job alone, at one thread's speed, instead of waiting a time slice for each.
//  - The caller then waits only for chunks a worker has claimed (and so started), spinning
//    briefly and then sleeping on a futex, so a preempted worker gets its core back.
//  - Workers spin a short while for the next job (a lane loop issues thousands back to back),
//    then sleep until one is published: an idle pool costs the other processes nothing.
//  - Several application threads calling at once publish several jobs; the workers serve them
//    all, so concurrent calls share the pool's threads instead of oversubscribing the cores.
// Chunk boundaries depend on n and the chunk count only, never on which thread runs a chunk.
#pragma once

#include <cstdint>
#include <functional>

namespace lanes::runtime {

using ChunkFn = std::function<void(int64_t, int64_t)>;

/// Threads a call may use (the caller and the workers): LANES_NUM_THREADS, else
/// OMP_NUM_THREADS, else the cores this process may run on.
int pool_threads();
/// Sets the threads a call may use (>= 1); starts or retires workers to match.
void set_pool_threads(int n);

/// Runs fn over `chunks` equal chunks of [0, n) (chunk i is [n i / chunks, n (i + 1) / chunks)),
/// the caller and idle workers claiming them; returns when every chunk has run, rethrowing the
/// first exception a chunk threw (the chunks not yet started are skipped).
void run_chunks(int64_t n, int64_t chunks, const ChunkFn& fn);

/// The cores this process may run on (its affinity mask at start). Kernels that plan their work
/// by the machine plan by this, never by num_threads(), so results do not depend on the threads.
int cores();

/// The most chunks a parallel_for splits into: 4 per core this process may run on, fixed at
/// start (set_num_threads does not change it, so chunk boundaries do not depend on threads).
int64_t max_chunks();

/// The chunks a parallel_for of n items, at least `grain` each, splits into: as many as fit, up
/// to max_chunks(), and a multiple of the core count when there are more than cores (3 equal
/// chunks on 2 threads take 2 chunk-times, a third longer than 2 halves). Depends on n, grain and
/// the cores, never on the thread count.
int64_t chunk_count(int64_t n, int64_t grain);

/// Whether this thread is running a chunk (a nested call runs inline).
bool in_parallel_region();

/// Marks this thread as a caller of the pool for its lifetime (nested scopes count once). The
/// executor holds one over a whole graph, so an application thread counts as a caller between
/// its graph's small jobs too, not only inside each: with as many callers as threads, the
/// workers stay asleep instead of waking for every job and finding it taken (two request threads
/// on two cores then each run their calls alone, at full speed).
class CallScope {
 public:
  CallScope();
  ~CallScope();
  CallScope(const CallScope&) = delete;
  CallScope& operator=(const CallScope&) = delete;
};

}  // namespace lanes::runtime
