// Shared by the demo's examples: timing and the one-line report each example prints.
#pragma once

#include <lanes/lanes.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

namespace tour {

/// Median wall time of fn over a few runs after one warm-up, in milliseconds.
template <class Fn>
double median_ms(Fn&& fn, int runs = 5) {
  fn();
  std::vector<double> times;
  for (int i = 0; i < runs; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    fn();
    times.push_back(
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

/// Largest |a - b| over all elements (shapes must match).
inline double max_abs_diff(const lanes::Tensor& a, const lanes::Tensor& b) {
  if (a.shape() != b.shape()) return INFINITY;
  const auto x = a.to_vector<double>(), y = b.to_vector<double>();
  double m = 0;
  for (size_t i = 0; i < x.size(); ++i) m = std::max(m, std::abs(x[i] - y[i]));
  return m;
}

/// Example i of a batch along axis 0 (a view).
inline lanes::Tensor example(const lanes::Tensor& x, int64_t i) {
  return lanes::squeeze(lanes::slice_axis(x, 0, i, i + 1), 0);
}

/// "name: shape (..), agrees with the loop (max |diff| 1e-7), loop 12.3 ms, vmap 0.4 ms: 30x"
inline void report(const std::string& name, const lanes::Tensor& result, double diff,
                   double loop_ms, double vmap_ms) {
  std::printf("%-28s %-22s max|vmap - loop| %.1e   loop %8.2f ms   vmap %7.2f ms   %6.1fx\n",
              name.c_str(), lanes::shape_str(result.shape()).c_str(), diff, loop_ms, vmap_ms,
              loop_ms / vmap_ms);
}

// The examples (examples/*.cpp); each prints its report lines.
void outer_products();
void dense_per_example_gradients();
void mlp_per_example_gradients();
void jacobian();
void hessian();
void ensemble();
void control_flow();
void dp_sgd();

}  // namespace tour
