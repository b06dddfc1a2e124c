// Helpers of the graph-pass tests (test_passes.cpp, test_scan_passes.cpp): random inputs,
// comparisons with eager results and counts of a graph's nodes.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <string>

#include "lanes/lanes.h"

namespace pass_checks {

using namespace lanes;

inline Tensor randn(const Shape& shape, uint64_t seed) {
  return random::normal(random::key(seed), shape);
}

// Equal within tol relative to 1 + |want|; NaN and infinities must match exactly.
inline void expect_close(const Tensor& got, const Tensor& want, double tol = 1e-5) {
  ASSERT_EQ(got.shape(), want.shape());
  ASSERT_EQ(got.dtype(), want.dtype());
  const auto g = got.to_vector<double>(), w = want.to_vector<double>();
  for (size_t i = 0; i < g.size(); ++i) {
    if (std::isnan(w[i])) ASSERT_TRUE(std::isnan(g[i])) << i;
    if (!std::isfinite(w[i])) ASSERT_TRUE(g[i] == w[i] || std::isnan(w[i])) << i;
    if (std::isfinite(w[i])) ASSERT_NEAR(g[i], w[i], tol * (1 + std::abs(w[i]))) << i;
  }
}

// The rewrites only re-describe or skip work: bit-identical results.
inline void expect_equal(const Tensor& got, const Tensor& want) { expect_close(got, want, 0.0); }

template <class F, class... Args>
Graph optimized(const F& f, const Args&... args) {
  return detail::optimize(make_graph(f)(args...));
}

inline int count(const Graph& g, const std::string& name) {
  int n = 0;
  for (const Node& node : g.nodes) n += node.prim->name() == name;
  return n;
}

}  // namespace pass_checks
