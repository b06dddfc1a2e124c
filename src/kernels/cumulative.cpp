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

}  // namespace

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
