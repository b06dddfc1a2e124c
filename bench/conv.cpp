// Convolution kernels on the shapes of the perex_cnn workload (bench/workloads/cnn.h: batch 64,
// conv 1->16 and 16->32, k5 s2 p2): the forward convs, the input gradient of the second as a
// transposed conv, and the per-example weight gradients as vmap makes them (batch entries as
// groups of one example). Beside each, the formulation as a plain conv2d that the derivative
// rules used before there were transposed-conv and weight-gradient kernels (same flops as PyTorch
// would spend on neither). Prints the minimum and median of many runs (the minimum is the steadier
// on a shared machine) and GFLOP/s of the useful work at the minimum.
//
//   build/bench/conv [--threads N]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "kernels/conv.h"
#include "lanes/lanes.h"

namespace {

using Clock = std::chrono::steady_clock;
using lanes::Tensor;

struct Timing {
  double min_ms, median_ms;
};

// Runs f for about 0.4 s (at least 10 times) after a warm-up call.
Timing measure(const std::function<void()>& f) {
  f();
  std::vector<double> t;
  const auto begin = Clock::now();
  while (t.size() < 10 ||
         (Clock::now() - begin < std::chrono::milliseconds(400) && t.size() < 2000)) {
    const auto start = Clock::now();
    f();
    t.push_back(std::chrono::duration<double, std::milli>(Clock::now() - start).count());
  }
  std::sort(t.begin(), t.end());
  return {t.front(), t[t.size() / 2]};
}

void report(const char* what, double useful_flops, const std::function<void()>& f) {
  const Timing t = measure(f);
  std::printf("  %-64s %7.3f ms (median %7.3f)  %6.1f GFLOP/s\n", what, t.min_ms, t.median_ms,
              useful_flops / t.min_ms * 1e-6);
}

// Values in [-1, 1) from a fixed LCG.
Tensor filled(const lanes::Shape& shape, uint32_t seed) {
  std::vector<float> v(lanes::shape_numel(shape));
  for (float& x : v) {
    seed = seed * 1664525u + 1013904223u;
    x = float(seed >> 8) / float(1 << 23) - 1.0f;
  }
  return lanes::tensor(v, shape);
}

lanes::Conv2dOptions options(int64_t s, int64_t p, int64_t d = 1, int64_t g = 1) {
  return {{s, s}, {p, p}, {d, d}, g};
}

}  // namespace

int main(int argc, char** argv) {
  for (int i = 1; i + 1 < argc; ++i)
    if (std::strcmp(argv[i], "--threads") == 0) lanes::set_num_threads(std::atoi(argv[i + 1]));
  std::printf("conv kernels, float32, %d threads\n", lanes::num_threads());
  const int64_t b = 64;
  const Tensor x1 = filled({b, 1, 28, 28}, 1), w1 = filled({16, 1, 5, 5}, 2);
  const Tensor x2 = filled({b, 16, 14, 14}, 3), w2 = filled({32, 16, 5, 5}, 4);
  const Tensor d1 = filled({b, 16, 14, 14}, 5), d2 = filled({b, 32, 7, 7}, 6);
  const double f1 = 2.0 * b * 16 * 25 * 196, f2 = 2.0 * b * 32 * 400 * 49;

  std::printf("\nforward\n");
  report("fwd1 x(64,1,28,28) w(16,1,5,5) s2 p2", f1, [&] { lanes::conv2d(x1, w1, options(2, 2)); });
  report("fwd2 x(64,16,14,14) w(32,16,5,5) s2 p2", f2,
         [&] { lanes::conv2d(x2, w2, options(2, 2)); });

  std::printf("\ninput gradient of fwd2\n");
  lanes::ConvTranspose2dOptions t;
  t.stride = {2, 2}, t.padding = {2, 2}, t.output_padding = {1, 1};
  report("conv_transpose2d ct(64,32,7,7) w(32,16,5,5) s2 p2 op1", f2,
         [&] { lanes::conv_transpose2d(d2, w2, t); });
  const Tensor spread = filled({b, 32, 18, 18}, 7), w2t = filled({16, 32, 5, 5}, 8);
  report("as conv2d of the zero-spread cotangent x(64,32,18,18) w(16,32,5,5)", f2,
         [&] { lanes::conv2d(spread, w2t, options(1, 0)); });

  std::printf("\nper-example weight gradients (batch entries as groups)\n");
  lanes::kernels::ConvParams p;
  p.stride = {2, 2}, p.padding = {2, 2}, p.groups = b;
  const Tensor xg2 = lanes::reshape(x2, {1, b * 16, 14, 14});
  const Tensor dg2 = lanes::reshape(d2, {1, b * 32, 7, 7});
  report("dw2 x(1,1024,14,14) ct(1,2048,7,7) groups 64 -> (2048,16,5,5)", f2, [&] {
    lanes::kernels::conv_weight_grad(xg2, dg2, p, {5, 5});
  });
  const Tensor xt2 = filled({16, b, 14, 14}, 9), ct2 = filled({2048, 1, 7, 7}, 10);
  report("as conv2d x(16,64,14,14) w(2048,1,7,7) p2 d2 groups 64 (6x6 out)", f2,
         [&] { lanes::conv2d(xt2, ct2, options(1, 2, 2, b)); });
  const Tensor xg1 = lanes::reshape(x1, {1, b, 28, 28});
  const Tensor dg1 = lanes::reshape(d1, {1, b * 16, 14, 14});
  report("dw1 x(1,64,28,28) ct(1,1024,14,14) groups 64 -> (1024,1,5,5)", f1, [&] {
    lanes::kernels::conv_weight_grad(xg1, dg1, p, {5, 5});
  });
  const Tensor xt1 = filled({1, b, 28, 28}, 11), ct1 = filled({1024, 1, 14, 14}, 12);
  report("as conv2d x(1,64,28,28) w(1024,1,14,14) p2 d2 groups 64", f1,
         [&] { lanes::conv2d(xt1, ct1, options(1, 2, 2, b)); });

  std::printf("\nweight gradient summed over the batch (one group)\n");
  lanes::kernels::ConvParams q;
  q.stride = {2, 2}, q.padding = {2, 2};
  report("x(64,16,14,14) ct(64,32,7,7) -> (32,16,5,5)", f2, [&] {
    lanes::kernels::conv_weight_grad(x2, d2, q, {5, 5});
  });
  return 0;
}
