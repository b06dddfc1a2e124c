// Structural kernels: strided copies into a view, concatenation, constant padding and iota.
//
// Inputs may have any strides (0 included); outputs are fresh contiguous tensors. Copies move
// whole contiguous runs with memcpy and split big outputs over threads.
#pragma once

#include <cstdint>
#include <cstring>
#include <type_traits>
#include <vector>

#include "lanes/tensor.h"

namespace lanes::kernels {

/// Copies src's elements into `dst`, a view of equal shape and dtype into a tensor the caller
/// just created (and so may write). Threaded above ~32K elements.
void copy_into(const Tensor& src, const Tensor& dst);

/// Fills every element of `dst` (a writable view) with `value` converted to its dtype.
void fill(const Tensor& dst, double value);

/// `value` stored in dtype `dtype` without undefined behaviour: floats round, integers truncate
/// toward zero and saturate (NaN -> 0), bool is value != 0. Returned as the raw bytes in a
/// uint64_t (the first dtype_size bytes are the value).
uint64_t convert_scalar(double value, DType dtype);

/// The operands (same rank and dtype, same shape except along `axis`) joined along `axis`.
Tensor concatenate(const std::vector<Tensor>& xs, int64_t axis, const Shape& out_shape);

/// x with low[d] elements of `value` before and high[d] after in each dim d (negative crops).
Tensor pad(const Tensor& x, const Shape& low, const Shape& high, double value,
           const Shape& out_shape);

/// A tensor of `shape` whose value is the index along `dimension`, converted to `dtype`
/// (integers wrap, bool is index != 0).
Tensor iota(const Shape& shape, int64_t dimension, DType dtype);

// ---- byte-copy helpers shared with the indexing kernels ---------------------------------------

/// Elements per task below which threading does not pay (a dispatch costs ~0.8 us).
inline constexpr int64_t kCopyGrain = 32768;

/// Calls fn(std::integral_constant<size_t, S>) with S the element size in bytes: copies only
/// move bytes, so three instantiations cover the six dtypes.
template <class Fn>
void visit_size(size_t size, Fn&& fn) {
  switch (size) {
    case 1:
      return fn(std::integral_constant<size_t, 1>{});
    case 4:
      return fn(std::integral_constant<size_t, 4>{});
    default:
      return fn(std::integral_constant<size_t, 8>{});
  }
}

/// Copies elements [lo, hi) of a row of S-byte elements (steps in elements). memcpy of a
/// constant size compiles to a plain move, and bytes keep the copy free of aliasing questions.
template <size_t S>
void copy_run(char* dst, int64_t dst_step, const char* src, int64_t src_step, int64_t lo,
              int64_t hi) {
  if (dst_step == 1 && src_step == 1) {
    std::memcpy(dst + lo * S, src + lo * S, (hi - lo) * S);
    return;
  }
  for (int64_t k = lo; k < hi; ++k) std::memcpy(dst + k * dst_step * S, src + k * src_step * S, S);
}

}  // namespace lanes::kernels
