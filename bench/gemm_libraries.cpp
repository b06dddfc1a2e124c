// GEMM libraries on this machine, for issue 29's choice of kernel library: OpenBLAS (Debian),
// oneDNN (libdnnl-dev, lanes' float32 GEMM) and, where installed, BLIS (libblis4-serial), on the
// float32 shapes of jacobian_mlp and perex_mlp, against the FMA peak. First lanes::matmul itself
// at 2 threads; then each library single-threaded on one thread, on two threads that each take
// half the columns (what lanes' pool does with a large product), and oneDNN with its own OpenMP
// team.
//
//   build/bench/gemm_libraries
#include <cblas.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "lanes/lanes.h"

#ifdef LANES_BENCH_DNNL
#include <omp.h>
#include <oneapi/dnnl/dnnl.h>
#endif
#include <dlfcn.h>

namespace {

using Clock = std::chrono::steady_clock;

/// Row-major C (m x n) = A (m x k) B (k x n), with A, B, C at leading dimensions lda, ldb, ldc.
using Gemm = std::function<void(int m, int n, int k, const float* a, int lda, const float* b,
                                int ldb, float* c, int ldc)>;

double best_seconds(const std::function<void()>& f, int reps) {
  f();
  double best = 1e9;
  for (int i = 0; i < reps; ++i) {
    const auto t0 = Clock::now();
    f();
    best = std::min(best, std::chrono::duration<double>(Clock::now() - t0).count());
  }
  return best;
}

struct Shape {
  const char* what;
  int m, n, k;
};

void run(const char* library, const Gemm& gemm, const std::vector<Shape>& shapes) {
  for (const Shape& s : shapes) {
    std::vector<float> a(size_t(s.m) * s.k, 1.01f), b(size_t(s.k) * s.n, 0.99f),
        c(size_t(s.m) * s.n);
    const double flops = 2.0 * s.m * s.n * s.k;
    const int reps = flops > 1e10 ? 3 : 20;
    const double one = best_seconds(
        [&] { gemm(s.m, s.n, s.k, a.data(), s.k, b.data(), s.n, c.data(), s.n); }, reps);
    const int half = s.n / 2;
    const double halves = best_seconds(
        [&] {
          std::thread other([&] {
            gemm(s.m, s.n - half, s.k, a.data(), s.k, b.data() + half, s.n, c.data() + half, s.n);
          });
          gemm(s.m, half, s.k, a.data(), s.k, b.data(), s.n, c.data(), s.n);
          other.join();
        },
        reps);
    std::printf("  %-9s %-34s %4d x %4d x %4d   1 thread %6.1f   2 threads (halves) %6.1f\n",
                library, s.what, s.m, s.n, s.k, flops / one / 1e9, flops / halves / 1e9);
  }
}

}  // namespace

int main() {
  const std::vector<Shape> shapes{
      {"jacobian_mlp: J = (E W2 D) W1", 512, 512, 512},
      {"perex_mlp forward: x W1", 256, 512, 784},
      {"perex_mlp backward: d2 W2^T", 256, 512, 512},
      {"large square", 2048, 2048, 2048},
  };
  std::printf(
      "float32 GEMM, GFLOP/s (best of several runs; compare bench/workloads --roofline's "
      "FMA peak)\n");
  // What lanes runs: lanes::matmul at 2 threads (the pool splits the product, each block one
  // single-threaded GEMM of the library lanes chose).
  lanes::set_num_threads(2);
  for (const Shape& s : shapes) {
    const lanes::Tensor a = lanes::random::normal(lanes::random::key(1), {s.m, s.k});
    const lanes::Tensor b = lanes::random::normal(lanes::random::key(2), {s.k, s.n});
    const double flops = 2.0 * s.m * s.n * s.k;
    const double t = best_seconds([&] { (void)lanes::matmul(a, b); }, flops > 1e10 ? 3 : 20);
    std::printf("  %-9s %-34s %4d x %4d x %4d   2 threads (lanes' pool) %6.1f\n", "lanes", s.what,
                s.m, s.n, s.k, flops / t / 1e9);
  }
  openblas_set_num_threads(1);
  run(
      "OpenBLAS",
      [](int m, int n, int k, const float* a, int lda, const float* b, int ldb, float* c, int ldc) {
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, n, k, 1.0f, a, lda, b, ldb, 0.0f,
                    c, ldc);
      },
      shapes);
  // BLIS (Debian's serial build) is opened privately: it also exports cblas_sgemm, which would
  // otherwise stand in for OpenBLAS's above. Its typed API: bli_sgemm(transa, transb, m, n, k,
  // alpha, a, row stride, column stride, b, ..., beta, c, ...), 0 = no transpose.
  using BliSgemm = void (*)(int, int, long, long, long, const float*, const float*, long, long,
                            const float*, long, long, const float*, float*, long, long);
  void* blis = dlopen("/usr/lib/x86_64-linux-gnu/blis-serial/libblis.so.4", RTLD_NOW | RTLD_LOCAL);
  if (auto bli_sgemm = blis ? reinterpret_cast<BliSgemm>(dlsym(blis, "bli_sgemm")) : nullptr) {
    run(
        "BLIS",
        [&](int m, int n, int k, const float* a, int lda, const float* b, int ldb, float* c,
            int ldc) {
          const float one = 1, zero = 0;
          bli_sgemm(0, 0, m, n, k, &one, a, lda, 1, b, ldb, 1, &zero, c, ldc, 1);
        },
        shapes);
  } else {
    std::printf("  BLIS: not installed (libblis4-serial)\n");
  }
#ifdef LANES_BENCH_DNNL
  // The team size is a per-thread OpenMP setting: each calling thread sets its own.
  int team = 1;
  auto dnnl = [&](int m, int n, int k, const float* a, int lda, const float* b, int ldb, float* c,
                  int ldc) {
    omp_set_num_threads(team);
    dnnl_sgemm('N', 'N', m, n, k, 1.0f, a, lda, b, ldb, 0.0f, c, ldc);
  };
  run("oneDNN", dnnl, shapes);
  team = 2;
  std::printf("  oneDNN with its own OpenMP team of 2 in the '1 thread' column:\n");
  run("oneDNN", dnnl, shapes);
#else
  std::printf("  oneDNN: not installed (libdnnl-dev)\n");
#endif
}
