// argmax / argmin along one axis (see reduce.h).
#include <cstdlib>

#include "core/strided.h"
#include "kernels/reduce.h"
#include "kernels/reduce_leaves.h"
#include "lanes/parallel.h"

namespace lanes::kernels {

namespace {

using namespace reduce_leaves;

constexpr int64_t kArgTile = 256;

/// Whether v replaces best as the extreme: it is NaN, or strictly beyond (the first one stays).
template <bool kMax, class T>
bool wins(T v, T best) {
  return is_nan(v) | (kMax ? v > best : v < best);
}

/// Index of the first extreme of p[0], p[step], ..., p[(n - 1) * step]: the SIMD max (min) of
/// each block, the first block holding the overall extreme (or a NaN), then a scan of that block.
template <bool kMax, class T>
int64_t arg_row(const T* p, int64_t n, int64_t step) {
  using Op = std::conditional_t<kMax, MaxOp, MinOp>;
  T buf[kBlock];
  T best = p[0];
  int64_t start = 0;
  for (int64_t b = 0; b < n && !is_nan(best); b += kBlock) {
    const int64_t m = std::min(kBlock, n - b);
    const T* q = p + b * step;
    if (step != 1) {
      for (int64_t i = 0; i < m; ++i) buf[i] = q[i * step];
      q = buf;
    }
    const T v = reduce_contiguous<Op>(q, m);
    if (b == 0 || wins<kMax>(v, best)) best = v, start = b;
  }
  const int64_t m = std::min(kBlock, n - start);
  for (int64_t i = 0; i < m; ++i) {
    const T v = p[(start + i) * step];
    if (v == best || (is_nan(best) && is_nan(v))) return start + i;
  }
  return start;  // not reached
}

/// arg_row for w adjacent columns (column c at p + c * col_step) at once, row by row, without
/// branches so the column loop vectorises.
template <bool kMax, class T>
void arg_columns(const T* p, int64_t n, int64_t step, int64_t w, int64_t col_step, int64_t* out,
                 int64_t out_step) {
  T best[kArgTile];
  int64_t index[kArgTile];
  for (int64_t c = 0; c < w; ++c) best[c] = p[c * col_step], index[c] = 0;
  auto scan = [&](auto col) {  // col: the column step, a constant 1 when contiguous
    for (int64_t i = 1; i < n; ++i) {
      const T* row = p + i * step;
      for (int64_t c = 0; c < w; ++c) {
        const T v = row[c * col], b = best[c];
        const bool take = !is_nan(b) & wins<kMax>(v, b);
        best[c] = take ? v : b;
        index[c] = take ? i : index[c];
      }
    }
  };
  if (col_step == 1)
    scan(std::integral_constant<int64_t, 1>{});
  else
    scan(col_step);
  for (int64_t c = 0; c < w; ++c) out[c * out_step] = index[c];
}

template <bool kMax, class T>
void run_arg(const Tensor& x, int64_t axis, Tensor& out) {
  const int64_t n = x.shape()[axis], step = x.strides()[axis];
  Shape shape;
  std::array<Strides, 2> strides;  // output, input
  const Strides out_strides = contiguous_strides(out.shape());
  for (int64_t d = 0, o = 0; d < x.ndim(); ++d) {
    if (d == axis) continue;
    shape.push_back(x.shape()[d]);
    strides[0].push_back(out_strides[o++]);
    strides[1].push_back(x.strides()[d]);
  }
  detail::coalesce(shape, strides);
  const T* in = static_cast<const T*>(x.raw_data());
  int64_t* o = out.mutable_data<int64_t>();
  const int64_t len = shape.back(), rows = detail::num_rows(shape);
  const int64_t col_in = strides[1].back(), col_out = strides[0].back();
  // Columns side by side when the reduced axis is the outer one in memory; else scan each.
  const bool by_columns = len > 1 && std::abs(step) > std::abs(col_in);
  const int64_t tile = by_columns ? std::min(len, kArgTile) : 1, tiles = (len + tile - 1) / tile;
  auto unit = [&](const T* q, int64_t* r, int64_t w) {
    if (by_columns)
      arg_columns<kMax>(q, n, step, w, col_in, r, col_out);
    else
      *r = arg_row<kMax>(q, n, step);
  };
  parallel_for(rows * tiles, std::max<int64_t>(1, kGrain / (n * tile)), [&](int64_t b, int64_t e) {
    int64_t u = b / tiles * tiles;
    detail::for_each_row<2>(
        shape, strides, b / tiles, (e + tiles - 1) / tiles, [&](const auto& off) {
          for (int64_t t = 0; t < tiles; ++t, ++u)
            if (u >= b && u < e)
              unit(in + off[1] + t * tile * col_in, o + off[0] + t * tile * col_out,
                   std::min(tile, len - t * tile));
        });
  });
}

}  // namespace

const char* arg_reduce_name(ArgReduceOp op) {
  return op == ArgReduceOp::ArgMax ? "argmax" : "argmin";
}

Tensor arg_reduce(ArgReduceOp op, const Tensor& x, int64_t axis) {
  check(axis >= 0 && axis < x.ndim() && x.shape()[axis] > 0, arg_reduce_name(op),
        ": cannot reduce axis ", axis, " of a tensor of shape ", fmt(x.shape()));
  Shape out_shape = x.shape();
  out_shape.erase(out_shape.begin() + axis);
  Tensor out = Tensor::empty(out_shape, DType::Int64);
  if (out.numel() == 0) return out;
  visit_dtype(x.dtype() == DType::Bool ? DType::UInt8 : x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (!std::is_same_v<T, bool>) {
      if (op == ArgReduceOp::ArgMax)
        run_arg<true, T>(x, axis, out);
      else
        run_arg<false, T>(x, axis, out);
    }
  });
  return out;
}

}  // namespace lanes::kernels
