// Vector math benchmark: exp, log, tanh, erf and sigmoid on 1M contiguous float32 values, on 1
// and 2 threads, for a plain std:: loop, lanes' kernels (src/kernels/vector_math.h), xsimd's own
// float32 functions, SLEEF (u10: 1-ulp variants) and Google Highway (contrib/math). Prints the
// throughput in GElem/s (best of several runs) and the max error in ulps against float64 std::.
//
// SLEEF and Highway need link flags the default bench target lacks; the program says
// "not linked" / "not installed" for them instead of skipping silently. To measure them, the
// bench CMakeLists needs (for this target):
//   target_compile_options(vector_math PRIVATE -march=native)
//   target_compile_definitions(vector_math PRIVATE LANES_BENCH_SLEEF LANES_BENCH_HWY)
//   target_link_libraries(vector_math PRIVATE sleef hwy)
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include <xsimd/xsimd.hpp>

#include "kernels/elementwise.h"
#include "lanes/lanes.h"

#if __has_include(<sleef.h>)
#define LANES_SLEEF_HEADER 1
#if defined(LANES_BENCH_SLEEF)
#include <sleef.h>
#endif
#endif

#if __has_include(<hwy/contrib/math/math-inl.h>)
#define LANES_HWY_HEADER 1
#if defined(LANES_BENCH_HWY)
// Static dispatch only (the -march target): Highway 1.0.3's dynamic-target logic rejects some
// newer -march=native CPUs ("best baseline should be included in dynamic targets").
#define HWY_COMPILE_ONLY_STATIC 1
#include <hwy/contrib/math/math-inl.h>
#include <hwy/highway.h>
#endif
#endif

namespace {

using Kernel = std::function<void(const float*, float*, int64_t)>;
using lanes::kernels::UnaryOp;

constexpr int64_t kN = 1 << 20;

double ulps(float got, double want) {
  if (std::isnan(want)) return std::isnan(got) ? 0 : INFINITY;
  const float rounded = static_cast<float>(want);
  if (std::isinf(rounded)) return got == rounded ? 0 : INFINITY;
  int e;
  std::frexp(want, &e);
  return std::abs(double(got) - want) / std::ldexp(1.0, std::max(e - 24, -149));
}

/// Seconds for one pass over n elements split on `threads` threads (best of several runs).
double seconds(const Kernel& k, const float* x, float* out, int64_t n, int threads) {
  lanes::set_num_threads(threads);
  auto pass = [&] {
    lanes::parallel_for(n, 16384, [&](int64_t b, int64_t e) { k(x + b, out + b, e - b); });
  };
  pass();  // warm up: pages, caches, thread pool
  double best = 1e30;
  for (int rep = 0; rep < 15; ++rep) {
    const auto t0 = std::chrono::steady_clock::now();
    pass();
    best = std::min(best,
                    std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  return best;
}

/// Runs a W-wide vector function over n elements; the tail goes through a padded vector.
template <int W, class F>
void by_vectors(const float* x, float* out, int64_t n, F f) {
  int64_t i = 0;
  for (; i + W <= n; i += W) f(x + i, out + i);
  if (i == n) return;
  float in[W], res[W];
  std::fill(in, in + W, x[i]);
  std::copy(x + i, x + n, in);
  f(in, res);
  std::copy(res, res + (n - i), out + i);
}

template <class F>
Kernel xsimd_kernel(F f) {
  return [f](const float* x, float* out, int64_t n) {
    using B = xsimd::batch<float>;
    by_vectors<B::size>(
        x, out, n, [&](const float* a, float* b) { f(B::load_unaligned(a)).store_unaligned(b); });
  };
}

#if defined(LANES_SLEEF_HEADER) && defined(LANES_BENCH_SLEEF)
#if defined(__AVX512F__)
#define LANES_SLEEF(fn)                                             \
  [](const float* x, float* out, int64_t n) {                       \
    by_vectors<16>(x, out, n, [](const float* a, float* b) {        \
      _mm512_storeu_ps(b, Sleef_##fn##f16_u10(_mm512_loadu_ps(a))); \
    });                                                             \
  }
constexpr const char* kSleefWidth = "16 lanes (AVX-512)";
#elif defined(__AVX2__)
#define LANES_SLEEF(fn)                                            \
  [](const float* x, float* out, int64_t n) {                      \
    by_vectors<8>(x, out, n, [](const float* a, float* b) {        \
      _mm256_storeu_ps(b, Sleef_##fn##f8_u10(_mm256_loadu_ps(a))); \
    });                                                            \
  }
constexpr const char* kSleefWidth = "8 lanes (AVX2)";
#else
#define LANES_SLEEF(fn)                                      \
  [](const float* x, float* out, int64_t n) {                \
    by_vectors<4>(x, out, n, [](const float* a, float* b) {  \
      _mm_storeu_ps(b, Sleef_##fn##f4_u10(_mm_loadu_ps(a))); \
    });                                                      \
  }
constexpr const char* kSleefWidth = "4 lanes (SSE)";
#endif
#endif

#if defined(LANES_HWY_HEADER) && defined(LANES_BENCH_HWY)
namespace hn = hwy::HWY_NAMESPACE;
#define LANES_HWY(Fn)                                                                  \
  [](const float* x, float* out, int64_t n) {                                          \
    const hn::ScalableTag<float> d;                                                    \
    const int64_t w = static_cast<int64_t>(hn::Lanes(d));                              \
    int64_t i = 0;                                                                     \
    for (; i + w <= n; i += w) hn::StoreU(hn::Fn(d, hn::LoadU(d, x + i)), d, out + i); \
    if (i < n) {                                                                       \
      alignas(64) float in[64], res[64];                                               \
      std::fill(in, in + w, x[i]);                                                     \
      std::copy(x + i, x + n, in);                                                     \
      hn::StoreU(hn::Fn(d, hn::LoadU(d, in)), d, res);                                 \
      std::copy(res, res + (n - i), out + i);                                          \
    }                                                                                  \
  }
#endif

struct Impl {
  std::string name;
  Kernel kernel;  // empty: not available, `note` says why
  std::string note;
};

struct Function {
  std::string name;
  UnaryOp op;
  double (*ref)(double);
  float lo, hi;
  std::vector<Impl> impls;
};

double sigmoid_ref(double x) { return 1 / (1 + std::exp(-x)); }

Kernel lanes_kernel(UnaryOp op) {
  return [op](const float* x, float* out, int64_t n) { lanes::kernels::unary_f32(op, x, out, n); };
}

Kernel std_loop(float (*f)(float)) {
  return [f](const float* x, float* out, int64_t n) {
    for (int64_t i = 0; i < n; ++i) out[i] = f(x[i]);
  };
}

Impl missing(const char* lib, bool header) {
  return {lib,
          {},
          header ? "header found but not linked: see the CMake lines at the top of "
                   "bench/vector_math.cpp"
                 : "not installed"};
}

std::vector<Function> functions() {
  using B = xsimd::batch<float>;
  std::vector<Function> fs = {
      {"exp", UnaryOp::Exp, [](double x) { return std::exp(x); }, -10, 10, {}},
      {"log", UnaryOp::Log, [](double x) { return std::log(x); }, 1e-3f, 100, {}},
      {"tanh", UnaryOp::Tanh, [](double x) { return std::tanh(x); }, -5, 5, {}},
      {"erf", UnaryOp::Erf, [](double x) { return std::erf(x); }, -3, 3, {}},
      {"sigmoid", UnaryOp::Logistic, sigmoid_ref, -10, 10, {}},
  };
  fs[0].impls = {{"std:: loop", std_loop([](float v) { return std::exp(v); }), ""},
                 {"xsimd", xsimd_kernel([](B v) { return xsimd::exp(v); }), ""}};
  fs[1].impls = {{"std:: loop", std_loop([](float v) { return std::log(v); }), ""},
                 {"xsimd", xsimd_kernel([](B v) { return xsimd::log(v); }), ""}};
  fs[2].impls = {{"std:: loop", std_loop([](float v) { return std::tanh(v); }), ""},
                 {"xsimd", xsimd_kernel([](B v) { return xsimd::tanh(v); }), ""}};
  fs[3].impls = {{"std:: loop", std_loop([](float v) { return std::erf(v); }), ""},
                 {"xsimd", xsimd_kernel([](B v) { return xsimd::erf(v); }), ""}};
  fs[4].impls = {{"std:: loop", std_loop([](float v) { return 1 / (1 + std::exp(-v)); }), ""},
                 {"xsimd", xsimd_kernel([](B v) { return B(1) / (B(1) + xsimd::exp(-v)); }), ""}};
#if defined(LANES_SLEEF_HEADER) && defined(LANES_BENCH_SLEEF)
  const std::string sleef = std::string("SLEEF u10 ") + kSleefWidth;
  fs[0].impls.push_back({sleef, LANES_SLEEF(exp), ""});
  fs[1].impls.push_back({sleef, LANES_SLEEF(log), ""});
  fs[2].impls.push_back({sleef, LANES_SLEEF(tanh), ""});
  fs[3].impls.push_back({sleef, LANES_SLEEF(erf), ""});
#elif defined(LANES_SLEEF_HEADER)
  for (int i = 0; i < 4; ++i) fs[i].impls.push_back(missing("SLEEF", true));
#else
  for (int i = 0; i < 4; ++i) fs[i].impls.push_back(missing("SLEEF", false));
#endif
#if defined(LANES_HWY_HEADER) && defined(LANES_BENCH_HWY)
  const std::string hwy = std::string("Highway ") + hwy::TargetName(HWY_STATIC_TARGET);
  fs[0].impls.push_back({hwy, LANES_HWY(Exp), ""});
  fs[1].impls.push_back({hwy, LANES_HWY(Log), ""});
  fs[2].impls.push_back({hwy, LANES_HWY(Tanh), ""});
  fs[3].impls.push_back({"Highway", {}, "has no erf"});
#elif defined(LANES_HWY_HEADER)
  for (int i = 0; i < 3; ++i) fs[i].impls.push_back(missing("Highway", true));
#else
  for (int i = 0; i < 3; ++i) fs[i].impls.push_back(missing("Highway", false));
#endif
  for (Function& f : fs) f.impls.push_back({"lanes", lanes_kernel(f.op), ""});
  return fs;
}

}  // namespace

int main() {
  std::printf(
      "vector_math: %lld float32 elements, contiguous; xsimd arch %s; %d threads available\n",
      static_cast<long long>(kN), xsimd::default_arch::name(), lanes::num_threads());
  std::printf("%-8s %-28s %12s %12s %10s\n", "function", "implementation", "1 thr GE/s",
              "2 thr GE/s", "max ulp");
  std::vector<float> x(kN), out(kN);
  std::mt19937 rng(42);
  for (const Function& f : functions()) {
    std::uniform_real_distribution<float> dist(f.lo, f.hi);
    for (float& v : x) v = dist(rng);
    for (const Impl& impl : f.impls) {
      if (!impl.kernel) {
        std::printf("%-8s %-28s %s\n", f.name.c_str(), impl.name.c_str(), impl.note.c_str());
        continue;
      }
      const double t1 = seconds(impl.kernel, x.data(), out.data(), kN, 1);
      const double t2 = seconds(impl.kernel, x.data(), out.data(), kN, 2);
      double worst = 0;
      for (int64_t i = 0; i < kN; ++i) worst = std::max(worst, ulps(out[i], f.ref(x[i])));
      std::printf("%-8s %-28s %12.3f %12.3f %10.2f\n", f.name.c_str(), impl.name.c_str(),
                  kN / t1 * 1e-9, kN / t2 * 1e-9, worst);
    }
    // The public op on a Tensor: the same kernel plus allocating the output.
    const lanes::Tensor t = lanes::tensor(x, {kN});
    auto op = [&](int threads) {
      lanes::set_num_threads(threads);
      double best = 1e30;
      for (int rep = 0; rep < 15; ++rep) {
        const auto t0 = std::chrono::steady_clock::now();
        const lanes::Tensor y = lanes::kernels::unary(f.op, t);
        best = std::min(
            best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
      }
      return kN / best * 1e-9;
    };
    std::printf("%-8s %-28s %12.3f %12.3f\n", f.name.c_str(), "lanes op (allocates output)", op(1),
                op(2));
  }
  return 0;
}
