#include "kernels/cumulative.h"

#include <algorithm>
#include <cstring>
#include <type_traits>

#include "lanes/parallel.h"

namespace lanes::kernels {

namespace {

// a + b without undefined behaviour: integers wrap.
template <class T>
T wrap_add(T a, T b) {
  if constexpr (std::is_integral_v<T>) {
    using U = std::make_unsigned_t<T>;
    return static_cast<T>(static_cast<U>(static_cast<U>(a) + static_cast<U>(b)));
  } else {
    return a + b;
  }
}

// x and out contiguous, viewed as (outer, n, inner): each row k of a block adds row k - 1 of the
// result (k + 1 when reversed). Threads split blocks and, when there are few, column ranges.
template <class T>
void scan_blocks(const T* x, T* out, int64_t outer, int64_t n, int64_t inner, bool reverse) {
  const int64_t threads = num_threads();
  const int64_t pieces =
      outer >= threads ? 1 : std::clamp<int64_t>(inner / 1024, 1, (threads + outer - 1) / outer);
  const int64_t piece = (inner + pieces - 1) / pieces;
  const int64_t grain = std::max<int64_t>(1, 16384 / std::max<int64_t>(1, n * piece));
  parallel_for(outer * pieces, grain, [&](int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t) {
      const int64_t o = t / pieces, lo = t % pieces * piece, hi = std::min(inner, lo + piece);
      const T* src = x + o * n * inner;
      T* dst = out + o * n * inner;
      for (int64_t k = 0; k < n; ++k) {
        const int64_t row = reverse ? n - 1 - k : k;
        const T* s = src + row * inner;
        T* d = dst + row * inner;
        if (k == 0) {
          for (int64_t j = lo; j < hi; ++j) d[j] = s[j];
          continue;
        }
        const T* prev = dst + (reverse ? row + 1 : row - 1) * inner;
        for (int64_t j = lo; j < hi; ++j) d[j] = wrap_add(prev[j], s[j]);
      }
    }
  });
}

template <class T>
void run(const Tensor& c, Tensor& out, int64_t axis, bool reverse) {
  const Shape& shape = c.shape();
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= shape[d];
  for (size_t d = axis + 1; d < shape.size(); ++d) inner *= shape[d];
  scan_blocks(c.data<T>(), out.mutable_data<T>(), outer, shape[axis], inner, reverse);
}

template <class T>
bool is_nan(T v) {
  if constexpr (std::is_floating_point_v<T>)
    return v != v;
  else
    return false;
}

// Rows are independent, so threads split them.
template <class T>
void arg_cum_rows(const T* x, int64_t* out, int64_t rows, int64_t n, bool min, bool reverse) {
  const int64_t grain = std::max<int64_t>(1, 16384 / std::max<int64_t>(n, 1));
  parallel_for(rows, grain, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      const T* row = x + r * n;
      int64_t* idx = out + r * n;
      int64_t best = reverse ? n - 1 : 0;
      for (int64_t k = 0; k < n; ++k) {
        const int64_t i = reverse ? n - 1 - k : k;
        const T v = row[i], b = row[best];
        if (!is_nan(b) && (is_nan(v) || (min ? v < b : b < v))) best = i;
        idx[i] = best;
      }
    }
  });
}

}  // namespace

Tensor arg_cum_last(const Tensor& x, bool min, bool reverse) {
  Tensor out = Tensor::empty(x.shape(), DType::Int64);
  const int64_t n = x.shape().back();
  if (x.numel() == 0) return out;
  const Tensor c = x.contiguous();
  int64_t* o = out.mutable_data<int64_t>();
  const int64_t rows = x.numel() / n;
  switch (x.dtype()) {
    case DType::Bool:
      arg_cum_rows(c.data<bool>(), o, rows, n, min, reverse);
      break;
    case DType::UInt8:
      arg_cum_rows(c.data<uint8_t>(), o, rows, n, min, reverse);
      break;
    case DType::Int32:
      arg_cum_rows(c.data<int32_t>(), o, rows, n, min, reverse);
      break;
    case DType::Int64:
      arg_cum_rows(c.data<int64_t>(), o, rows, n, min, reverse);
      break;
    case DType::Float32:
      arg_cum_rows(c.data<float>(), o, rows, n, min, reverse);
      break;
    case DType::Float64:
      arg_cum_rows(c.data<double>(), o, rows, n, min, reverse);
      break;
  }
  return out;
}

Tensor cumsum(const Tensor& x, int64_t axis, bool reverse) {
  Tensor out = Tensor::empty(x.shape(), x.dtype());
  if (x.numel() == 0) return out;
  const Tensor c = x.contiguous();
  switch (x.dtype()) {
    case DType::UInt8:
      run<uint8_t>(c, out, axis, reverse);
      break;
    case DType::Int32:
      run<int32_t>(c, out, axis, reverse);
      break;
    case DType::Int64:
      run<int64_t>(c, out, axis, reverse);
      break;
    case DType::Float32:
      run<float>(c, out, axis, reverse);
      break;
    case DType::Float64:
      run<double>(c, out, axis, reverse);
      break;
    case DType::Bool:
      break;  // rejected by the primitive's shape rule
  }
  return out;
}

}  // namespace lanes::kernels
