#include "lanes/parallel.h"

#include <omp.h>

#include <algorithm>
#include <exception>

extern "C" void openblas_set_num_threads(int);

namespace lanes {

int num_threads() { return omp_get_max_threads(); }

void set_num_threads(int n) {
  n = std::max(1, n);
  omp_set_num_threads(n);
  openblas_set_num_threads(n);
}

void parallel_for(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& fn) {
  if (n <= 0) return;
  grain = std::max<int64_t>(grain, 1);
  const int64_t max_chunks = std::min<int64_t>(num_threads(), n / grain);
  if (max_chunks < 2 || omp_in_parallel()) {
    fn(0, n);
    return;
  }
  // An exception must not escape an OpenMP region (that terminates); carry the first one out.
  std::exception_ptr error;
#pragma omp parallel num_threads(static_cast <int>(max_chunks))
  {
    const int64_t chunks = omp_get_num_threads(), t = omp_get_thread_num();
    const int64_t begin = n * t / chunks, end = n * (t + 1) / chunks;
    try {
      if (begin < end) fn(begin, end);
    } catch (...) {
#pragma omp critical(lanes_parallel_for_error)
      if (!error) error = std::current_exception();
    }
  }
  if (error) std::rethrow_exception(error);
}

}  // namespace lanes
