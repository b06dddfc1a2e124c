// Elementwise comparison of a result with its float64 reference, shared by the tests.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

/// Every got[i] within tol * (1 + |want[i]|) of want[i], and as many of them.
inline void expect_near(const std::vector<double>& got, const std::vector<double>& want,
                        double tol = 1e-5) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i)
    ASSERT_NEAR(got[i], want[i], tol * (1 + std::abs(want[i]))) << "at " << i;
}
