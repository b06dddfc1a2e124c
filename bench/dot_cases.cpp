// dot_general on degenerate and small batched shapes, and jacrev beside jacfwd: the cases where
// a batch of tiny GEMMs or a bad layout used to cost far more than the memory traffic.
// Prints, per case, the median wall time of many runs (2 threads unless given), the GEMM
// calls and copied elements per run, and a reference (bandwidth or GEMM time) to compare with.
//
//   build/bench/dot_cases [--threads N] [dot] [gemv] [jac]   (no section: all; default 2 threads)
#include <cblas.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "kernels/matmul.h"
#include "lanes/lanes.h"

namespace {

using lanes::Tensor;
using Clock = std::chrono::steady_clock;

struct Timing {
  double median_ms, min_ms;
};

// Median and min wall time of f over enough runs to take ~0.5 s (at least 5), after a warm-up.
// The min says what the code can do; the median, what it does on a busy machine.
Timing time_ms(const std::function<void()>& f) {
  f();
  std::vector<double> t;
  const auto start = Clock::now();
  while (t.size() < 5 ||
         (t.size() < 2000 && Clock::now() - start < std::chrono::milliseconds(500))) {
    const auto t0 = Clock::now();
    f();
    t.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
  }
  std::sort(t.begin(), t.end());
  return {t[t.size() / 2], t[0]};
}

// Times f and prints its median and min, GEMM calls and copied elements per call, and a note.
void report(const char* what, const std::function<void()>& f, const char* note = "") {
  const auto before = lanes::kernels::dot_counters();
  f();
  const auto after = lanes::kernels::dot_counters();
  const Timing t = time_ms(f);
  std::printf("  %-50s %8.3f ms (min %8.3f)  gemm %5lld  copied %7lld  %s\n", what, t.median_ms,
              t.min_ms, static_cast<long long>(after.gemm_calls - before.gemm_calls),
              static_cast<long long>(after.copied_elements - before.copied_elements), note);
}

// Writes `bytes` of a non-zero value to a buffer allocated once: what writing an output costs
// at the machine's bandwidth (memset of zero is faster than any real output).
void report_write_bandwidth(const char* what, int64_t bytes) {
  std::vector<float> buffer(bytes / sizeof(float));
  report(
      what,
      [&] {
        lanes::parallel_for(int64_t(buffer.size()), 1 << 16, [&](int64_t begin, int64_t end) {
          std::fill(buffer.begin() + begin, buffer.begin() + end, 1.5f);
        });
      },
      "(bandwidth reference)");
}

Tensor normal(const lanes::Shape& shape, uint64_t seed, lanes::DType dtype = lanes::kFloat32) {
  return lanes::cast(lanes::random::normal(lanes::random::key(seed), shape), dtype);
}

// The previous kernel's path for a batch of row-major float32 products out_i = a_i (m x k)
// b_i (k x n): one single-threaded sgemm per matrix, in parallel over the batch.
void sgemm_per_matrix(const Tensor& a, const Tensor& b, Tensor& out, int64_t m, int64_t k,
                      int64_t n) {
  const int64_t batch = a.numel() / (m * k);
  const float* pa = a.data<float>();
  const float* pb = b.data<float>();
  float* pc = out.mutable_data<float>();
  const auto grain = static_cast<int64_t>(std::max(1.0, 2e5 / (2.0 * m * n * k)));
  lanes::parallel_for(batch, grain, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i)
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, int(m), int(n), int(k), 1.0f,
                  pa + i * m * k, int(k), pb + i * k * n, int(n), 0.0f, pc + i * m * n, int(n));
  });
}

// Times dot_general of a (B, m, k) and b (B, k, n) beside the previous per-matrix sgemm path.
void batched_product(const char* what, int64_t batch, int64_t m, int64_t k, int64_t n) {
  const Tensor a = normal({batch, m, k}, 4), b = normal({batch, k, n}, 5);
  Tensor out = lanes::zeros({batch, m, n});
  const std::string old = std::string(what) + ", old: sgemm per matrix";
  report(what, [&] { lanes::dot_general(a, b, {{2}, {1}, {0}, {0}}); });
  report(old.c_str(), [&] { sgemm_per_matrix(a, b, out, m, k, n); });
}

void batched_dot() {
  std::printf("\nbatched_dot: vmap(dot)(xs, ys), xs, ys (4096, 512)\n");
  for (lanes::DType dtype : {lanes::kFloat32, lanes::kFloat64}) {
    const Tensor xs = normal({4096, 512}, 1, dtype), ys = normal({4096, 512}, 2, dtype);
    auto f = lanes::vmap([](const Tensor& x, const Tensor& y) { return lanes::dot(x, y); });
    const bool f32 = dtype == lanes::kFloat32;
    report(f32 ? "f32 vmap(dot)" : "f64 vmap(dot)", [&] { f(xs, ys); });
    report(f32 ? "f32 manual sum(x * y, 1)" : "f64 manual sum(x * y, 1)",
           [&] { lanes::sum(xs * ys, {1}); });
    report(
        f32 ? "f32 sum(xs) + sum(ys)" : "f64 sum(xs) + sum(ys)",
        [&] { lanes::sum(xs) + lanes::sum(ys); }, "(reads the same bytes)");
  }
  batched_product("f32 (4096,1,512) x (4096,512,1)", 4096, 1, 512, 1);
  // xs mapped along axis 1: K has stride 4096, the batch is contiguous.
  const Tensor xt = normal({512, 4096}, 3), ys = normal({4096, 512}, 2);
  auto f = lanes::vmap([](const Tensor& x, const Tensor& y) { return lanes::dot(x, y); },
                       lanes::in_axes(1, 0));
  report("f32 vmap(dot), xs (512, 4096) mapped on axis 1", [&] { f(xt, ys); });
}

void gemv_and_outer() {
  const int64_t b = 256;
  std::printf("\nbatched GEMV and outer products, B = %lld (411 MB matrices)\n",
              static_cast<long long>(b));
  batched_product("(B,1,784) x (B,784,512)", b, 1, 784, 512);
  batched_product("(B,512,784) x (B,784,1)", b, 512, 784, 1);
  const Tensor x = normal({b, 1, 784}, 4), wt = normal({b, 512, 784}, 6);
  report("(B,1,784) x (B,512,784)^T", [&] { lanes::dot_general(x, wt, {{2}, {2}, {0}, {0}}); });
  report(
      "sum(wt)", [&] { lanes::sum(wt); }, "(reads 411 MB)");
  batched_product("(B,784,1) x (B,1,512)", b, 784, 1, 512);
  report_write_bandwidth("fill 411 MB", b * 784 * 512 * 4);
  // vmap(grad) of x @ W: the per-example outer products of the perex_mlp workload's first layer.
  const Tensor w0 = normal({784, 512}, 10), xs = normal({b, 784}, 11);
  auto loss = [](const Tensor& w, const Tensor& x) { return lanes::sum(lanes::matmul(x, w)); };
  auto per_example = lanes::vmap(lanes::grad(loss), lanes::in_axes(lanes::none, 0));
  report("vmap(grad(sum(x @ W))) wrt W (784,512)", [&] { per_example(w0, xs); });
}

// W2 tanh(W1 x + b1) + b2 with n x n weights.
void jacobians(int64_t n) {
  std::printf("\nJacobian of W2 tanh(W1 x + b1) + b2, %lld x %lld\n", static_cast<long long>(n),
              static_cast<long long>(n));
  const Tensor w1 = normal({n, n}, 12) * 0.05, w2 = normal({n, n}, 13) * 0.05;
  const Tensor b1 = normal({n}, 14), b2 = normal({n}, 15), x = normal({n}, 16);
  auto mlp = [&](const Tensor& v) {
    return lanes::matmul(w2, lanes::tanh(lanes::matmul(w1, v) + b1)) + b2;
  };
  report("jacrev", [&] { lanes::jacrev(mlp)(x); });
  report("jacfwd", [&] { lanes::jacfwd(mlp)(x); });
  const Tensor eye = lanes::eye(n);
  report(
      "two n^3 GEMMs: matmul(matmul(eye, w1), w2)",
      [&] { lanes::matmul(lanes::matmul(eye, w1), w2); }, "(reference)");
}

}  // namespace

int main(int argc, char** argv) {
  int threads = 2;
  std::vector<std::string> sections;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--threads") == 0 && i + 1 < argc)
      threads = std::atoi(argv[++i]);
    else
      sections.push_back(argv[i]);
  }
  auto want = [&](const char* s) {
    return sections.empty() || std::find(sections.begin(), sections.end(), s) != sections.end();
  };
  lanes::set_num_threads(threads);
  std::printf("dot_cases: %d threads, median of many runs\n", threads);
  if (want("dot")) batched_dot();
  if (want("gemv")) gemv_and_outer();
  if (want("jac")) jacobians(256), jacobians(512);
  return 0;
}
