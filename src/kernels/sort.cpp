#include "kernels/sort.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "lanes/parallel.h"

namespace lanes::kernels {

namespace {

template <class T>
bool is_nan(T v) {
  if constexpr (std::is_floating_point_v<T>)
    return std::isnan(v);
  else
    return false;
}

// Sorts the rows of a contiguous x; rows are independent, so threads split them.
template <class T>
void sort_rows(const T* x, int64_t* out, int64_t rows, int64_t n, bool descending) {
  auto before = [descending](T a, T b) {
    if (is_nan(a) || is_nan(b)) return !is_nan(a) && is_nan(b);  // NaN last
    return descending ? b < a : a < b;
  };
  const int64_t grain = std::max<int64_t>(1, 4096 / std::max<int64_t>(n, 1));
  parallel_for(rows, grain, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      const T* row = x + r * n;
      int64_t* idx = out + r * n;
      std::iota(idx, idx + n, int64_t{0});
      std::stable_sort(idx, idx + n, [&](int64_t i, int64_t j) { return before(row[i], row[j]); });
    }
  });
}

}  // namespace

Tensor argsort_last(const Tensor& x, bool descending) {
  const Tensor c = x.contiguous();
  Tensor out = Tensor::empty(x.shape(), DType::Int64);
  const int64_t n = x.shape().back();
  const int64_t rows = n == 0 ? 0 : x.numel() / n;
  int64_t* o = out.mutable_data<int64_t>();
  switch (x.dtype()) {
    case DType::Bool:
      sort_rows(c.data<bool>(), o, rows, n, descending);
      break;
    case DType::UInt8:
      sort_rows(c.data<uint8_t>(), o, rows, n, descending);
      break;
    case DType::Int32:
      sort_rows(c.data<int32_t>(), o, rows, n, descending);
      break;
    case DType::Int64:
      sort_rows(c.data<int64_t>(), o, rows, n, descending);
      break;
    case DType::Float32:
      sort_rows(c.data<float>(), o, rows, n, descending);
      break;
    case DType::Float64:
      sort_rows(c.data<double>(), o, rows, n, descending);
      break;
  }
  return out;
}

}  // namespace lanes::kernels
