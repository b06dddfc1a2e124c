// Bit-for-bit comparison of tensors, shared by the reproducibility tests: == on values would let
// -0.0 pass for 0.0 and fail NaN against itself.
#pragma once

#include <gtest/gtest.h>

#include <cstring>

#include "lanes/lanes.h"

/// Same dtype, shape and bytes (in row-major order, whatever the layouts).
inline ::testing::AssertionResult same_bits(const lanes::Tensor& got, const lanes::Tensor& want) {
  if (got.dtype() != want.dtype() || got.shape() != want.shape())
    return ::testing::AssertionFailure()
           << "got " << lanes::dtype_name(got.dtype()) << lanes::shape_str(got.shape())
           << ", expected " << lanes::dtype_name(want.dtype()) << lanes::shape_str(want.shape());
  const lanes::Tensor g = got.contiguous(), w = want.contiguous();
  const size_t bytes = size_t(g.numel()) * lanes::dtype_size(g.dtype());
  if (bytes == 0 || std::memcmp(g.raw_data(), w.raw_data(), bytes) == 0)
    return ::testing::AssertionSuccess();
  const auto gv = g.to_vector<double>(), wv = w.to_vector<double>();
  int64_t differ = 0, first = -1;
  for (size_t i = 0; i < gv.size(); ++i)
    if (std::memcmp(&gv[i], &wv[i], sizeof(double)) != 0) {
      if (first < 0) first = int64_t(i);
      ++differ;
    }
  return ::testing::AssertionFailure()
         << differ << " of " << gv.size() << " elements differ; first " << first << ": "
         << gv[size_t(first)] << " vs " << wv[size_t(first)];
}
