// Helpers for walking strided n-d layouts: the shared machinery of every strided kernel.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <vector>

#include "lanes/tensor.h"

namespace lanes::detail {

/// Simplifies an iteration space shared by K operands: drops size-1 dims and merges adjacent dims
/// that are laid out contiguously relative to each other in every operand. A contiguous tensor
/// becomes 1-d; a transposed one stays 2-d; a broadcast one keeps its stride-0 dims. A 0-d space
/// becomes the 1-d space {1}, so callers always see at least one dim.
template <size_t K>
void coalesce(Shape& shape, std::array<Strides, K>& strides) {
  // In place: the n dims kept so far sit in front of dim d (n <= d), so nothing unread is
  // overwritten, and the vectors are only shortened (no allocation: this runs per kernel call).
  size_t n = 0;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == 1) continue;
    bool merge = n > 0;
    for (size_t k = 0; k < K && merge; ++k) merge = strides[k][n - 1] == strides[k][d] * shape[d];
    if (merge) {
      shape[n - 1] *= shape[d];
      for (size_t k = 0; k < K; ++k) strides[k][n - 1] = strides[k][d];
    } else {
      shape[n] = shape[d];
      for (size_t k = 0; k < K; ++k) strides[k][n] = strides[k][d];
      ++n;
    }
  }
  if (n == 0) {
    shape.assign(1, 1);
    for (size_t k = 0; k < K; ++k) strides[k].assign(1, 1);
    return;
  }
  shape.resize(n);
  for (size_t k = 0; k < K; ++k) strides[k].resize(n);
}

/// Visits rows [row_begin, row_end) of the space, a row being the innermost dim: calls
/// fn(offsets) with offsets[k] the element offset of operand k at the row's start. The row
/// length is shape.back() and operand k steps by strides[k].back() along it.
template <size_t K, class Fn>
void for_each_row(const Shape& shape, const std::array<Strides, K>& strides, int64_t row_begin,
                  int64_t row_end, Fn&& fn) {
  if (row_begin >= row_end) return;  // also keeps a 0-size dim out of the divisions below
  const int64_t outer = static_cast<int64_t>(shape.size()) - 1;
  std::vector<int64_t> index(outer, 0);
  std::array<int64_t, K> offsets{};
  int64_t rest = row_begin;
  for (int64_t d = outer - 1; d >= 0; --d) {
    index[d] = rest % shape[d];
    rest /= shape[d];
    for (size_t k = 0; k < K; ++k) offsets[k] += index[d] * strides[k][d];
  }
  for (int64_t row = row_begin; row < row_end; ++row) {
    fn(offsets);
    for (int64_t d = outer - 1; d >= 0; --d) {  // odometer increment
      for (size_t k = 0; k < K; ++k) offsets[k] += strides[k][d];
      if (++index[d] < shape[d]) break;
      for (size_t k = 0; k < K; ++k) offsets[k] -= strides[k][d] * shape[d];
      index[d] = 0;
    }
  }
}

/// for_each_row in runs along the second-to-last dim: calls fn(offsets, count) for `count`
/// consecutive rows starting at `offsets`, row r of the run at offsets + r * strides[k][nd - 2].
/// Kernels over short rows loop a run themselves: the odometer and the call per row cost ~8 ns,
/// as much as a 32-element row's arithmetic. A 1-d space is one run of one row.
template <size_t K, class Fn>
void for_each_row_run(const Shape& shape, const std::array<Strides, K>& strides, int64_t row_begin,
                      int64_t row_end, Fn&& fn) {
  if (row_begin >= row_end) return;
  if (shape.size() < 2) return fn(std::array<int64_t, K>{}, int64_t{1});
  const size_t nd = shape.size();
  const int64_t inner = shape[nd - 2];
  int64_t row = row_begin;
  while (row < row_end) {
    const int64_t block = row / inner, first = row % inner;
    const int64_t count = std::min(inner - first, row_end - row);
    std::array<int64_t, K> offsets{};
    int64_t rest = block;
    for (int64_t d = int64_t(nd) - 3; d >= 0; --d) {
      const int64_t i = rest % shape[d];
      rest /= shape[d];
      for (size_t k = 0; k < K; ++k) offsets[k] += i * strides[k][d];
    }
    for (size_t k = 0; k < K; ++k) offsets[k] += first * strides[k][nd - 2];
    fn(offsets, count);
    row += count;
  }
}

/// The dims in memory order: from the largest stride to the smallest (ties keep their order).
inline std::vector<size_t> memory_order(const Strides& strides) {
  std::vector<size_t> order(strides.size());
  for (size_t d = 0; d < order.size(); ++d) order[d] = d;
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return strides[a] > strides[b]; });
  return order;
}

/// Number of rows of a (coalesced) space.
inline int64_t num_rows(const Shape& shape) {
  int64_t n = 1;
  for (size_t d = 0; d + 1 < shape.size(); ++d) n *= shape[d];
  return n;
}

/// Copies a strided tensor's elements into `out` (row-major, numel elements), single-threaded.
void copy_strided(const Tensor& src, void* out);

}  // namespace lanes::detail
