// What the custom-rule tests share (test_custom_rules.cpp, test_custom_vjp.cpp,
// test_custom_table.cpp): comparison helpers and the custom functions several of them use.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "lanes/lanes.h"

namespace custom_test {

using lanes::DType;
using lanes::Tensor;

inline Tensor f64(std::vector<double> v) { return lanes::tensor(v, {int64_t(v.size())}); }
inline Tensor f64(std::vector<double> v, lanes::Shape s) { return lanes::tensor(v, s); }
inline std::vector<double> values(const Tensor& t) { return t.to_vector<double>(); }

inline void expect_near(const Tensor& got, const std::vector<double>& want, double tol,
                        const char* what) {
  const auto g = values(got);
  ASSERT_EQ(g.size(), want.size()) << what;
  for (size_t i = 0; i < g.size(); ++i)
    EXPECT_NEAR(g[i], want[i], tol * (1 + std::abs(want[i]))) << what << " element " << i;
}

template <class F>
void expect_error(F f, const std::string& what) {
  try {
    f();
    FAIL() << "expected lanes::Error containing: " << what;
  } catch (const lanes::Error& e) {
    EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
  }
}

inline Tensor stacked(const std::vector<std::vector<double>>& rows) {
  std::vector<double> flat;
  for (const auto& r : rows) flat.insert(flat.end(), r.begin(), r.end());
  return f64(flat, {int64_t(rows.size()), int64_t(rows[0].size())});
}

// ---- custom_jvp: a softplus whose derivative stays finite ---------------------------------------

// log1p(exp(x)), kept finite by taking x itself past 30: the value is stable, but the naive
// derivative multiplies the select's zero by exp(1000) = inf in the branch not taken.
inline Tensor softplus_naive(const Tensor& x) {
  return lanes::where(x > 30.0, x, lanes::log1p(lanes::exp(x)));
}

inline const auto softplus = lanes::custom_jvp(softplus_naive, [](const auto& p, const auto& t) {
  const Tensor& x = std::get<0>(p);
  return std::make_pair(softplus_naive(x), std::get<0>(t) * lanes::sigmoid(x));
});

inline double softplus_ref(double x) { return x > 30 ? x : std::log1p(std::exp(x)); }
inline double sigmoid_ref(double x) { return 1 / (1 + std::exp(-x)); }

inline const std::vector<double> kXs = {-1000, -20, -1, 0, 0.5, 3, 40, 1000};

inline std::vector<double> map_ref(double (*f)(double), const std::vector<double>& xs) {
  std::vector<double> out;
  for (double x : xs) out.push_back(f(x));
  return out;
}

// ---- custom_vjp: gradient clipping --------------------------------------------------------------

inline constexpr double kClip = 1.0;

// The identity whose cotangent is clipped to norm kClip on the way back.
inline const auto clip_gradient = lanes::custom_vjp(
    [](const Tensor& w) { return w; },
    [](const Tensor& w) { return std::make_pair(w, std::tuple<>{}); },
    [](const std::tuple<>&, const Tensor& ct) {
      const Tensor norm = lanes::sqrt(lanes::sum(ct * ct));
      return std::make_tuple(ct * lanes::minimum(lanes::as_weak(1.0, norm), kClip / norm));
    });

// ---- custom_vmap
// ----------------------------------------------------------------------------------

// x / sum(x) for one example; the rule normalizes every row of the batch at once and counts
// its calls.
inline int normalize_rule_calls = 0;
inline const auto normalize = lanes::custom_vmap(
    [](const Tensor& x) { return x / lanes::sum(x); },
    [](int64_t size, const std::vector<bool>& in_batched, const Tensor& x) {
      ++normalize_rule_calls;
      EXPECT_EQ(in_batched.size(), 1u);
      EXPECT_TRUE(in_batched[0]);
      EXPECT_EQ(x.shape(0), size);
      return std::make_pair(x / lanes::sum(x, lanes::Axes{1}, true), std::vector<bool>{true});
    },
    "normalize_rows");

inline const std::vector<std::vector<double>> kRows = {
    {1, 2, 3}, {4, 5, 6}, {0.5, 0.25, 0.25}, {9, 1, 1}};

inline std::vector<double> normalized_ref(const std::vector<std::vector<double>>& rows) {
  std::vector<double> out;
  for (const auto& r : rows) {
    const double s = r[0] + r[1] + r[2];
    for (double v : r) out.push_back(v / s);
  }
  return out;
}

// x * w with w possibly shared: the rule sees which argument is batched and may leave the output
// unbatched when nothing is.
inline const auto scale_by = lanes::custom_vmap(
    [](const Tensor& x, const Tensor& w) { return x * w; },
    [](int64_t size, const std::vector<bool>& in_batched, const Tensor& x, const Tensor& w) {
      EXPECT_EQ(in_batched.size(), 2u);
      Tensor xb =
          in_batched[0] ? x : lanes::broadcast_to(lanes::expand_dims(x, 0), {size, x.shape(0)});
      Tensor wb = in_batched[1] ? w : lanes::expand_dims(w, 0);
      return std::make_pair(xb * wb, std::vector<bool>{true});
    },
    "scale_by");

}  // namespace custom_test
