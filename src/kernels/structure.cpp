#include "kernels/structure.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <limits>

#include "core/strided.h"
#include "kernels/copy_bytes.h"
#include "lanes/parallel.h"

namespace lanes::kernels {

namespace {

int64_t product(const Shape& s, size_t begin, size_t end) {
  int64_t n = 1;
  for (size_t i = begin; i < end; ++i) n *= s[i];
  return n;
}

template <class T>
T convert(double v) {
  if constexpr (std::is_same_v<T, bool>) {
    return v != 0;
  } else if constexpr (std::is_floating_point_v<T>) {
    return static_cast<T>(v);
  } else {
    if (std::isnan(v)) return 0;
    using L = std::numeric_limits<T>;
    if (v <= static_cast<double>(L::min())) return L::min();
    if (v >= static_cast<double>(L::max())) return L::max();
    return static_cast<T>(v);  // in range: truncates toward zero
  }
}

}  // namespace

void copy_into(const Tensor& src, const Tensor& dst) {
  if (src.numel() == 0) return;
  Shape shape = src.shape();
  std::array<Strides, 2> strides{dst.strides(), src.strides()};
  detail::coalesce(shape, strides);
  const int64_t len = shape.back(), rows = detail::num_rows(shape);
  const int64_t dst_step = strides[0].back(), src_step = strides[1].back();
  char* out = static_cast<char*>(dst.raw_mutable_data());
  const char* in = static_cast<const char*>(src.raw_data());
  visit_size(dtype_size(src.dtype()), [&](auto size) {
    constexpr size_t S = decltype(size)::value;
    auto run = [&](const std::array<int64_t, 2>& off, int64_t lo, int64_t hi) {
      copy_run<S>(out + off[0] * S, dst_step, in + off[1] * S, src_step, lo, hi);
    };
    // Few long rows (a contiguous copy is one row): split the rows themselves over threads.
    const int64_t pieces = rows >= 64 ? 1 : std::max<int64_t>(1, len / kCopyGrain);
    if (pieces == 1) {
      parallel_for(rows, std::max<int64_t>(1, kCopyGrain / len), [&](int64_t begin, int64_t end) {
        detail::for_each_row(shape, strides, begin, end,
                             [&](const auto& off) { run(off, 0, len); });
      });
      return;
    }
    const int64_t piece = (len + pieces - 1) / pieces;
    parallel_for(rows * pieces, 1, [&](int64_t begin, int64_t end) {
      for (int64_t t = begin; t < end; ++t) {
        const int64_t row = t / pieces, lo = t % pieces * piece;
        detail::for_each_row(shape, strides, row, row + 1,
                             [&](const auto& off) { run(off, lo, std::min(len, lo + piece)); });
      }
    });
  });
}

uint64_t convert_scalar(double value, DType dtype) {
  uint64_t bits = 0;
  visit_dtype(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T v = convert<T>(value);
    std::memcpy(&bits, &v, sizeof(T));
  });
  return bits;
}

void fill(const Tensor& dst, double value) {
  const uint64_t bits = convert_scalar(value, dst.dtype());
  visit_dtype(dst.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    T v;
    std::memcpy(&v, &bits, sizeof(T));
    if (dst.is_contiguous()) {
      T* out = dst.mutable_data<T>();
      parallel_for(dst.numel(), kCopyGrain,
                   [&](int64_t begin, int64_t end) { std::fill(out + begin, out + end, v); });
      return;
    }
    Tensor one = Tensor::empty({}, dst.dtype());
    *one.mutable_data<T>() = v;
    copy_into(one.view(dst.shape(), Strides(dst.ndim(), 0), one.offset()), dst);
  });
}

// Contiguous operands along an outer dim: each output row is the operands' blocks in turn.
static void concatenate_contiguous(const std::vector<Tensor>& xs, const Tensor& out, int64_t axis) {
  const int64_t outer = product(out.shape(), 0, axis);
  const size_t size = dtype_size(out.dtype());
  const int64_t row_bytes = out.numel() / outer * size;
  std::vector<const char*> src;
  std::vector<int64_t> bytes, starts;
  int64_t start = 0;
  for (const Tensor& x : xs) {
    if (x.numel() == 0) continue;
    src.push_back(static_cast<const char*>(x.raw_data()));
    bytes.push_back(x.numel() / outer * size);
    starts.push_back(start);
    start += bytes.back();
  }
  char* dst = static_cast<char*>(out.raw_mutable_data());
  const int64_t grain = std::max<int64_t>(1, kCopyGrain * int64_t(size) / row_bytes);
  parallel_for(outer, grain, [&](int64_t begin, int64_t end) {
    for (int64_t o = begin; o < end; ++o)
      for (size_t k = 0; k < src.size(); ++k)
        copy_bytes(dst + o * row_bytes + starts[k], src[k] + o * bytes[k], size_t(bytes[k]));
  });
}

Tensor concatenate(const std::vector<Tensor>& xs, int64_t axis, const Shape& out_shape) {
  Tensor out = Tensor::empty(out_shape, xs.at(0).dtype());
  if (out.numel() == 0) return out;
  const bool contiguous =
      std::all_of(xs.begin(), xs.end(), [](const Tensor& x) { return x.is_contiguous(); });
  // Many outer rows: one pass over them all, each row a few memcpys (threads split the rows).
  if (contiguous && product(out_shape, 0, axis) >= 4 * num_threads()) {
    concatenate_contiguous(xs, out, axis);
    return out;
  }
  // Otherwise each operand is copied into its slab of the output (threads split each copy).
  int64_t pos = 0;
  for (const Tensor& x : xs) {
    const int64_t offset = out.offset() + pos * out.strides()[axis];
    copy_into(x, out.view(x.shape(), out.strides(), offset));
    pos += x.shape()[axis];
  }
  return out;
}

Tensor pad(const Tensor& x, const Shape& low, const Shape& high, double value,
           const Shape& out_shape) {
  Tensor out = Tensor::empty(out_shape, x.dtype());
  if (out.numel() == 0) return out;
  const bool grows = std::any_of(low.begin(), low.end(), [](int64_t v) { return v > 0; }) ||
                     std::any_of(high.begin(), high.end(), [](int64_t v) { return v > 0; });
  if (grows) fill(out, value);
  // The part of x that survives the crops, and where it lands.
  Shape count(x.ndim());
  int64_t src = x.offset(), dst = out.offset();
  for (int64_t d = 0; d < x.ndim(); ++d) {
    const int64_t first = std::max<int64_t>(0, -low[d]);
    count[d] = x.shape()[d] - std::max<int64_t>(0, -high[d]) - first;
    if (count[d] <= 0) return out;  // everything cropped: only padding is left
    src += first * x.strides()[d];
    dst += std::max<int64_t>(0, low[d]) * out.strides()[d];
  }
  copy_into(x.view(count, x.strides(), src), out.view(count, out.strides(), dst));
  return out;
}

Tensor iota(const Shape& shape, int64_t dimension, DType dtype) {
  Tensor out = Tensor::empty(shape, dtype);
  if (out.numel() == 0) return out;
  const int64_t n = shape[dimension];
  const int64_t inner = product(shape, dimension + 1, shape.size());
  visit_dtype(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* data = out.mutable_data<T>();
    // A "row" is one run of `inner` equal values: index i of the outer block row / n.
    parallel_for(out.numel() / inner, std::max<int64_t>(1, kCopyGrain / inner),
                 [&](int64_t begin, int64_t end) {
                   for (int64_t r = begin; r < end; ++r) {
                     const int64_t i = r % n;
                     T v;
                     if constexpr (std::is_same_v<T, bool>)
                       v = i != 0;
                     else
                       v = static_cast<T>(i);  // integers wrap (well defined since C++20)
                     std::fill(data + r * inner, data + (r + 1) * inner, v);
                   }
                 });
  });
  return out;
}

}  // namespace lanes::kernels
