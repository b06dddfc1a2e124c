// Kernel benchmarks: GEMM through lanes::matmul beside raw cblas_sgemm, batched small GEMMs and
// the two raw strategies for them, elementwise bandwidth beside the machine's triad
// bandwidth. Prints medians of several runs. Runs in well under 30 s.
//
//   build/bench/kernels [gemm] [batched] [nested] [bandwidth] [reduce]   (no argument: all)
//   build/bench/kernels fresh   (only when named: ~12 s of streaming into one fresh buffer)
#include <cblas.h>
#include <immintrin.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <functional>
#include <vector>

#include "lanes/lanes.h"

extern "C" void openblas_set_num_threads(int);
extern "C" int openblas_get_num_threads(void);

namespace {

using Clock = std::chrono::steady_clock;

// Median wall time of `runs` calls of f, in seconds, after one warm-up call.
double median_seconds(int runs, const std::function<void()>& f) {
  f();
  std::vector<double> t;
  for (int i = 0; i < runs; ++i) {
    const auto start = Clock::now();
    f();
    t.push_back(std::chrono::duration<double>(Clock::now() - start).count());
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

void row(const char* what, double value, const char* unit, double seconds) {
  std::printf("  %-58s %9.1f %-7s (%.2f ms)\n", what, value, unit, seconds * 1e3);
}

// A float32 tensor of `shape` with values in [-1, 1) (a fixed LCG; no dependence on lanes' RNG).
lanes::Tensor filled(const lanes::Shape& shape, uint32_t seed) {
  std::vector<float> v(lanes::shape_numel(shape));
  for (float& x : v) {
    seed = seed * 1664525u + 1013904223u;
    x = float(seed >> 8) / float(1 << 23) - 1.0f;
  }
  return lanes::tensor(v, shape);
}

// ---- GEMM -------------------------------------------------------------------------------------

void gemm_section() {
  std::printf("\nGEMM, float32, square n x n x n (GFLOP/s = 2 n^3 / time)\n");
  for (int64_t n : {512, 2048}) {
    const lanes::Tensor a = filled({n, n}, 1);
    const lanes::Tensor b = filled({n, n}, 2);
    const double flops = 2.0 * double(n) * double(n) * double(n);
    const int runs = n <= 512 ? 15 : 3;
    char label[96];
    const double t_lanes = median_seconds(runs, [&] { lanes::matmul(a, b); });
    std::snprintf(label, sizeof label, "lanes::matmul %ld^3", long(n));
    row(label, flops / t_lanes * 1e-9, "GFLOP/s", t_lanes);
    std::vector<float> c(n * n);
    const double t_blas = median_seconds(runs, [&] {
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, int(n), int(n), int(n), 1.0f,
                  a.data<float>(), int(n), b.data<float>(), int(n), 0.0f, c.data(), int(n));
    });
    std::snprintf(label, sizeof label, "cblas_sgemm   %ld^3 (direct)", long(n));
    row(label, flops / t_blas * 1e-9, "GFLOP/s", t_blas);
    const double t_fresh = median_seconds(runs, [&] {
      auto* out = static_cast<float*>(std::aligned_alloc(64, n * n * sizeof(float)));
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, int(n), int(n), int(n), 1.0f,
                  a.data<float>(), int(n), b.data<float>(), int(n), 0.0f, out, int(n));
      std::free(out);
    });
    std::snprintf(label, sizeof label, "cblas_sgemm   %ld^3 into a fresh output each call",
                  long(n));
    row(label, flops / t_fresh * 1e-9, "GFLOP/s", t_fresh);
  }
}

// ---- batched small GEMMs ----------------------------------------------------------------------

void sgemm32(const float* a, const float* b, float* c) {
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, 32, 32, 32, 1.0f, a, 32, b, 32, 0.0f, c,
              32);
}

void batched_section() {
  constexpr int64_t kBatch = 1000, kN = 32, kMat = kN * kN;
  std::printf("\nBatched GEMM, float32, %ld x %ld^3 (GFLOP/s = 2 * batch * n^3 / time)\n",
              long(kBatch), long(kN));
  const lanes::Tensor a = filled({kBatch, kN, kN}, 3);
  const lanes::Tensor b = filled({kBatch, kN, kN}, 4);
  const float* pa = a.data<float>();
  const float* pb = b.data<float>();
  std::vector<float> c(kBatch * kMat);
  const double flops = 2.0 * kBatch * kN * kN * kN;
  const double t_lanes = median_seconds(21, [&] { lanes::matmul(a, b); });
  row("lanes::matmul (1000,32,32) @ (1000,32,32)", flops / t_lanes * 1e-9, "GFLOP/s", t_lanes);
  const double t_par = median_seconds(21, [&] {
    lanes::parallel_for(kBatch, 1, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i)
        sgemm32(pa + i * kMat, pb + i * kMat, c.data() + i * kMat);
    });
  });
  row("raw: parallel loop of single-threaded sgemm", flops / t_par * 1e-9, "GFLOP/s", t_par);
  const double t_fresh = median_seconds(21, [&] {
    float* out = static_cast<float*>(std::aligned_alloc(64, kBatch * kMat * sizeof(float)));
    lanes::parallel_for(kBatch, 1, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) sgemm32(pa + i * kMat, pb + i * kMat, out + i * kMat);
    });
    std::free(out);
  });
  row("raw: the same into a fresh 4 MB output each call", flops / t_fresh * 1e-9, "GFLOP/s",
      t_fresh);
  const double t_ser = median_seconds(21, [&] {
    for (int64_t i = 0; i < kBatch; ++i) sgemm32(pa + i * kMat, pb + i * kMat, c.data() + i * kMat);
  });
  row("raw: serial loop of BLAS-threaded sgemm", flops / t_ser * 1e-9, "GFLOP/s", t_ser);
}

// CPU time of the calling thread, in seconds.
double thread_cpu_seconds() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return double(ts.tv_sec) + 1e-9 * double(ts.tv_nsec);
}

// Median CPU time the calling thread spends in f (robust to other processes on the machine,
// unlike wall time): about W for a single-threaded GEMM of work W, about W / threads when BLAS
// splits it over its threads (the caller being one of them).
double median_thread_cpu(int runs, const std::function<void()>& f) {
  std::vector<double> t;
  for (int i = 0; i <= runs; ++i) {
    const double start = thread_cpu_seconds();
    f();
    if (i > 0) t.push_back(thread_cpu_seconds() - start);
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

// Is OpenBLAS single-threaded inside a parallel region? One chunk of a lanes::parallel_for runs
// a large sgemm: the CPU time of that thread shows whether BLAS split the work.
void nested_blas_section() {
  constexpr int n = 1024;
  std::vector<float> a(n * n, 1.0f), b(n * n, 1.0f), c(n * n);
  auto sgemm = [&] {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, a.data(), n, b.data(), n,
                0.0f, c.data(), n);
  };
  const int threads = lanes::num_threads();
  std::printf(
      "\nOpenBLAS inside lanes::parallel_for: CPU time of the calling thread for one sgemm "
      "%d^3 (%d threads)\n",
      n, threads);
  const double cpu_threaded = median_thread_cpu(5, sgemm);
  openblas_set_num_threads(1);
  const double cpu_single = median_thread_cpu(5, sgemm);
  openblas_set_num_threads(threads);
  std::vector<double> inside;
  for (int i = 0; i < 6; ++i)
    lanes::parallel_for(threads, 1, [&](int64_t begin, int64_t) {
      if (begin != 0) return;
      const double start = thread_cpu_seconds();
      sgemm();
      if (i > 0) inside.push_back(thread_cpu_seconds() - start);
    });
  std::sort(inside.begin(), inside.end());
  const double cpu_inside = inside[inside.size() / 2];
  auto line = [](const char* what, double t) { std::printf("  %-58s %9.1f ms\n", what, t * 1e3); };
  line("outside any region, BLAS threads = all", cpu_threaded);
  line("outside any region, BLAS threads = 1", cpu_single);
  line("inside parallel_for (one chunk), BLAS threads = all", cpu_inside);
  if (threads < 2 || cpu_threaded > 0.75 * cpu_single)
    std::printf("  => inconclusive (BLAS did not split the GEMM outside a region either)\n");
  else
    std::printf("  => OpenBLAS runs %s inside a parallel region\n",
                cpu_inside > 0.75 * cpu_single ? "single-threaded" : "THREADED (nested)");
}

// ---- elementwise and triad --------------------------------------------------------------------

constexpr int64_t kFloats = 16 << 20;  // 64 MB of float32

float* alloc64(int64_t n) { return static_cast<float*>(std::aligned_alloc(64, n * sizeof(float))); }

void triad(float* a, const float* b, const float* c, float s) {
  lanes::parallel_for(kFloats, 1 << 16, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) a[i] = b[i] + s * c[i];
  });
}

// Non-temporal stores skip the read-for-ownership of a's cache lines. Each thread streams a
// range [begin, end) that is a multiple of 16 floats into the 64-byte aligned a.
__attribute__((target("avx512f"))) void triad_nt512(float* a, const float* b, const float* c,
                                                    float s, int64_t begin, int64_t end) {
  const __m512 vs = _mm512_set1_ps(s);
  for (int64_t i = begin; i < end; i += 16)
    _mm512_stream_ps(a + i, _mm512_fmadd_ps(vs, _mm512_loadu_ps(c + i), _mm512_loadu_ps(b + i)));
  _mm_sfence();
}

__attribute__((target("avx2,fma"))) void triad_nt256(float* a, const float* b, const float* c,
                                                     float s, int64_t begin, int64_t end) {
  const __m256 vs = _mm256_set1_ps(s);
  for (int64_t i = begin; i < end; i += 8)
    _mm256_stream_ps(a + i, _mm256_fmadd_ps(vs, _mm256_loadu_ps(c + i), _mm256_loadu_ps(b + i)));
  _mm_sfence();
}

void triad_nt(float* a, const float* b, const float* c, float s, bool avx512) {
  lanes::parallel_for(kFloats / 16, 1 << 12, [&](int64_t b0, int64_t b1) {
    if (avx512)
      triad_nt512(a, b, c, s, b0 * 16, b1 * 16);
    else
      triad_nt256(a, b, c, s, b0 * 16, b1 * 16);
  });
}

// Streams non-temporal stores into one freshly allocated 680 MB buffer (the size of perex_mlp's
// per-example gradients) over and over for ~12 s and prints the rate second by second. On a
// virtual machine the host may back fresh memory with small pages and merge them into huge
// pages seconds later; on this one the rate went from 27 to 52 GB/s after 2-7 s, at a moment no
// process controls. That is why memory-bound workloads (outer, perex_mlp) read one of two values
// from run to run.
__attribute__((target("avx512f"))) void stream_range(float* p, int64_t begin, int64_t end,
                                                     float v) {
  const __m512 value = _mm512_set1_ps(v);
  for (int64_t i = begin; i < end; i += 16) _mm512_stream_ps(p + i, value);
  _mm_sfence();
}

void stream_fill(float* p, int64_t n, float v) {
  lanes::parallel_for(n / 16, 1 << 14, [&](int64_t begin, int64_t end) {
    stream_range(p, begin * 16, end * 16, v);
  });
}

void fresh_memory_section() {
  if (!__builtin_cpu_supports("avx512f")) {
    std::printf("\nfresh: needs AVX-512 (its stores are _mm512_stream_ps); not run here\n");
    return;
  }
  const int64_t n = int64_t{170} << 20;  // 680 MB of float32
  const lanes::Tensor buffer = lanes::Tensor::empty({n}, lanes::kFloat32);
  float* p = buffer.mutable_data<float>();
  std::printf("\nStreaming into one fresh 680 MB buffer (non-temporal stores), per second:\n");
  const auto start = Clock::now();
  auto t0 = start;
  int passes = 0;
  for (int second = 0; second < 12;) {
    stream_fill(p, n, float(passes++));
    const auto now = Clock::now();
    const double s = std::chrono::duration<double>(now - t0).count();
    if (s >= 1.0) {
      std::printf("  t=%4.1f s  %5.1f GB/s over %d passes\n",
                  std::chrono::duration<double>(now - start).count(), passes * n * 4e-9 / s,
                  passes);
      t0 = now, passes = 0, ++second;
    }
  }
}

void bandwidth_section() {
  const double mb = double(kFloats) * sizeof(float);
  std::printf(
      "\nBandwidth, float32 arrays of %.0f MB (GB/s = bytes read + written / time; "
      "write-allocate reads not counted, as STREAM)\n",
      mb / (1 << 20));
  float *a = alloc64(kFloats), *b = alloc64(kFloats), *c = alloc64(kFloats);
  lanes::parallel_for(kFloats, 1 << 16, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) a[i] = 0.0f, b[i] = 1.0f, c[i] = 2.0f;
  });
  const double t_triad = median_seconds(9, [&] { triad(a, b, c, 3.0f); });
  row("triad a = b + s*c, normal stores (parallel_for)", 3 * mb / t_triad * 1e-9, "GB/s", t_triad);
  const bool avx512 = __builtin_cpu_supports("avx512f");
  const double t_nt = median_seconds(9, [&] { triad_nt(a, b, c, 3.0f, avx512); });
  row(avx512 ? "triad, non-temporal stores (_mm512_stream_ps)"
             : "triad, non-temporal stores (_mm256_stream_ps)",
      3 * mb / t_nt * 1e-9, "GB/s", t_nt);
  std::free(a), std::free(b), std::free(c);

  // What a fresh output costs before any kernel runs: the first touch of each page.
  const double t_touch = median_seconds(3, [&] {
    float* p = alloc64(kFloats);
    lanes::parallel_for(kFloats, 1 << 20, [&](int64_t begin, int64_t end) {
      std::memset(p + begin, 0, (end - begin) * sizeof(float));
    });
    std::free(p);
  });
  row("memset of a fresh 64 MB allocation (page faults; 1 write)", mb / t_touch * 1e-9, "GB/s",
      t_touch);
  const lanes::Tensor x = filled({kFloats}, 5);
  const lanes::Tensor y = filled({kFloats}, 6);
  const double t_add = median_seconds(5, [&] { lanes::add(x, y); });
  row("lanes::add (2 reads + 1 write, fresh output each call)", 3 * mb / t_add * 1e-9, "GB/s",
      t_add);
  const double t_exp = median_seconds(5, [&] { lanes::exp(x); });
  row("lanes::exp (1 read + 1 write, fresh output each call)", 2 * mb / t_exp * 1e-9, "GB/s",
      t_exp);

  // Fused elementwise chains (compile's fusion pass): one pass over memory, as the triad.
  auto triad_fn = [](const lanes::Tensor& p, const lanes::Tensor& q) { return p + q * 3.0; };
  auto fused_triad = lanes::compile(triad_fn);
  const double t_ftriad = median_seconds(9, [&] { fused_triad(x, y); });
  row("compile(x + 3*y): fused triad", 3 * mb / t_ftriad * 1e-9, "GB/s", t_ftriad);
  std::printf("  => fused triad / raw triad bandwidth (normal stores) = %.2f, (streaming) = %.2f\n",
              t_triad / t_ftriad, t_nt / t_ftriad);
  const double t_eager = median_seconds(9, [&] { triad_fn(x, y); });
  row("x + 3*y eager (two passes)", 3 * mb / t_eager * 1e-9, "GB/s", t_eager);
  auto chain = [](const lanes::Tensor& p, const lanes::Tensor& q) {
    return lanes::tanh(p * q + 1.0) * lanes::exp(-p);
  };
  auto fused_chain = lanes::compile(chain);
  const double t_fchain = median_seconds(9, [&] { fused_chain(x, y); });
  row("compile(tanh(x*y + 1) * exp(-x)): 6 ops fused", 3 * mb / t_fchain * 1e-9, "GB/s", t_fchain);
  const double t_chain = median_seconds(9, [&] { chain(x, y); });
  row("tanh(x*y + 1) * exp(-x) eager (6 passes)", 3 * mb / t_chain * 1e-9, "GB/s", t_chain);
  // A tail reduction: row sums of the chain, rows of 4096. Fused, the chain's result never
  // reaches memory: the pass reads x and y only.
  const lanes::Tensor xr = lanes::reshape(x, {-1, 4096}), yr = lanes::reshape(y, {-1, 4096});
  auto chain_sum = [&](const lanes::Tensor& p, const lanes::Tensor& q) {
    return lanes::sum(chain(p, q), -1);
  };
  auto fused_sum = lanes::compile(chain_sum);
  const double t_fsum = median_seconds(9, [&] { fused_sum(xr, yr); });
  row("compile(sum(tanh(x*y + 1) * exp(-x), -1)): reduction fused", 2 * mb / t_fsum * 1e-9, "GB/s",
      t_fsum);
  const double t_sum = median_seconds(9, [&] { chain_sum(xr, yr); });
  row("the same eager (7 passes)", 2 * mb / t_sum * 1e-9, "GB/s", t_sum);
}

}  // namespace

// With arguments, runs only the named sections: kernels [gemm] [batched] [nested] [bandwidth].
// ---- reductions over short rows -----------------------------------------------------------------

// A max and a sum over the last axis of rows of 16 to 256 floats (a softmax's rows: attention
// scores over 64 positions), where each row's own fold, not the memory, sets the speed.
void reduce_section() {
  std::printf("\nreductions over the last axis, float32, 4 MB each (GB/s read)\n");
  for (int64_t len : {16, 64, 256}) {
    const lanes::Tensor x = filled({(int64_t(1) << 20) / len, len}, 7);
    const double bytes = double(x.numel()) * 4;
    char what[96];
    std::snprintf(what, sizeof what, "max over rows of %lld", (long long)len);
    const double tmax = median_seconds(50, [&] { lanes::max(x, {-1}); });
    row(what, bytes / tmax * 1e-9, "GB/s", tmax);
    std::snprintf(what, sizeof what, "sum over rows of %lld", (long long)len);
    const double tsum = median_seconds(50, [&] { lanes::sum(x, {-1}); });
    row(what, bytes / tsum * 1e-9, "GB/s", tsum);
  }
}

int main(int argc, char** argv) {
  auto wanted = [&](const char* name) {
    if (argc < 2) return true;
    for (int i = 1; i < argc; ++i)
      if (std::strcmp(argv[i], name) == 0) return true;
    return false;
  };
  std::printf("lanes kernel benchmarks: %d threads (lanes' pool), OpenBLAS threads %d\n",
              lanes::num_threads(), openblas_get_num_threads());
  const auto start = Clock::now();
  if (wanted("gemm")) gemm_section();
  if (wanted("batched")) batched_section();
  if (wanted("nested")) nested_blas_section();
  if (wanted("bandwidth")) bandwidth_section();
  if (wanted("reduce")) reduce_section();
  for (int i = 1; i < argc; ++i)
    if (std::strcmp(argv[i], "fresh") == 0) fresh_memory_section();
  std::printf("\ntotal %.1f s\n", std::chrono::duration<double>(Clock::now() - start).count());
}
