#include "lanes/parallel.h"

#include <algorithm>

#include "lanes/error.h"
#include "runtime/thread_pool.h"

namespace lanes {

int num_threads() { return runtime::pool_threads(); }

void set_num_threads(int n) {
  check(n >= 1, "set_num_threads: n must be at least 1, got ", n);
  runtime::set_pool_threads(n);
}

void parallel_for(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& fn) {
  if (n <= 0) return;
  grain = std::max<int64_t>(grain, 1);
  // Chunk boundaries depend on n, grain and the cores, not on the thread count, so a kernel whose
  // chunks round differently gives the same bits at every thread count. Several chunks a thread
  // balance the load when a thread is slow or descheduled (another process shares the cores).
  const int64_t chunks = runtime::chunk_count(n, grain);
  if (chunks < 2) return fn(0, n);
  runtime::run_chunks(n, chunks, fn);
}

}  // namespace lanes
