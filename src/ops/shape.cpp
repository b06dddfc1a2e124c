// Shape ops over the view primitives (reshape, transpose, broadcast_in_dim, slice).
#include <algorithm>
#include <numeric>

#include "ops/internal.h"
#include "primitives/shape.h"
#include "primitives/util.h"

namespace lanes {

namespace ops {

Shape broadcast_shapes(const Shape& a, const Shape& b, const char* op) {
  const size_t n = std::max(a.size(), b.size());
  Shape out(n);
  for (size_t i = 0; i < n; ++i) {
    const int64_t da = i < n - a.size() ? 1 : a[i - (n - a.size())];
    const int64_t db = i < n - b.size() ? 1 : b[i - (n - b.size())];
    check(da == db || da == 1 || db == 1, op, ": shapes ", fmt(a), " and ", fmt(b),
          " cannot be broadcast together");
    out[i] = da == 1 ? db : da;
  }
  return out;
}

std::vector<int64_t> normalize_axes(const Axes& axes, int64_t ndim, const char* op) {
  std::vector<int64_t> out;
  if (axes.all) {
    out.resize(ndim);
    std::iota(out.begin(), out.end(), 0);
    return out;
  }
  for (int64_t a : axes.list) out.push_back(prim::normalize_axis(a, ndim, op));
  std::sort(out.begin(), out.end());
  check(std::adjacent_find(out.begin(), out.end()) == out.end(), op, ": repeated axis in ",
        fmt(axes.list));
  return out;
}

}  // namespace ops

using ops::apply;

namespace detail {
Tensor slice_axis_reversed(const Tensor& x, int64_t axis, int64_t start, int64_t stop,
                           int64_t step);  // src/ops/reverse.cpp
}  // namespace detail

Tensor reshape(const Tensor& x, const Shape& shape) {
  Shape resolved = shape;
  int64_t inferred = -1;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == -1) {
      check(inferred < 0, "reshape: more than one -1 in shape ", fmt(shape));
      inferred = static_cast<int64_t>(i);
      resolved[i] = 1;
    } else {
      check(shape[i] >= 0, "reshape: invalid dimension ", shape[i], " in shape ", fmt(shape));
    }
  }
  // The product of the given dims in checked arithmetic (the -1 counted as 1).
  const int64_t known = check_shape(resolved, x.dtype(), "reshape");
  if (inferred >= 0) {
    check(known != 0 && x.numel() % known == 0, "reshape: cannot reshape a tensor of shape ",
          fmt(x.shape()), " into shape ", fmt(shape));
    resolved[inferred] = x.numel() / known;
  }
  if (resolved == x.shape()) return x;
  return apply<prim::Reshape>({x}, resolved);
}

Tensor flatten(const Tensor& x) { return reshape(x, {x.numel()}); }

Tensor transpose(const Tensor& x, const std::vector<int64_t>& perm) {
  std::vector<int64_t> p = perm;
  if (p.empty()) {
    p.resize(x.ndim());
    std::iota(p.rbegin(), p.rend(), 0);
  } else {
    for (int64_t& a : p) a = prim::normalize_axis(a, x.ndim(), "transpose");
  }
  bool identity = true;
  for (size_t i = 0; i < p.size(); ++i) identity &= p[i] == int64_t(i);
  if (identity && int64_t(p.size()) == x.ndim()) return x;
  return apply<prim::Transpose>({x}, p);
}

Tensor moveaxis(const Tensor& x, int64_t source, int64_t destination) {
  const int64_t src = prim::normalize_axis(source, x.ndim(), "moveaxis");
  const int64_t dst = prim::normalize_axis(destination, x.ndim(), "moveaxis");
  std::vector<int64_t> perm;
  for (int64_t i = 0; i < x.ndim(); ++i)
    if (i != src) perm.push_back(i);
  perm.insert(perm.begin() + dst, src);
  return transpose(x, perm);
}

Tensor swapaxes(const Tensor& x, int64_t axis1, int64_t axis2) {
  std::vector<int64_t> perm(x.ndim());
  std::iota(perm.begin(), perm.end(), 0);
  std::swap(perm[prim::normalize_axis(axis1, x.ndim(), "swapaxes")],
            perm[prim::normalize_axis(axis2, x.ndim(), "swapaxes")]);
  return transpose(x, perm);
}

Tensor expand_dims(const Tensor& x, int64_t axis) {
  const int64_t a = prim::normalize_axis(axis, x.ndim() + 1, "expand_dims");
  Shape shape = x.shape();
  shape.insert(shape.begin() + a, 1);
  return reshape(x, shape);
}

Tensor squeeze(const Tensor& x, const Axes& axes) {
  std::vector<int64_t> drop;
  if (axes.all) {
    for (int64_t i = 0; i < x.ndim(); ++i)
      if (x.shape()[i] == 1) drop.push_back(i);
  } else {
    drop = ops::normalize_axes(axes, x.ndim(), "squeeze");
    for (int64_t a : drop)
      check(x.shape()[a] == 1, "squeeze: axis ", a, " of shape ", fmt(x.shape()), " has size ",
            x.shape()[a], ", not 1");
  }
  Shape shape;
  for (int64_t i = 0; i < x.ndim(); ++i)
    if (!std::binary_search(drop.begin(), drop.end(), i)) shape.push_back(x.shape()[i]);
  return reshape(x, shape);
}

Tensor broadcast_in_dim(const Tensor& x, const Shape& shape,
                        const std::vector<int64_t>& broadcast_dimensions) {
  // Only the identity mapping may skip the primitive (and its validation).
  bool identity = shape == x.shape() && broadcast_dimensions.size() == shape.size();
  for (size_t i = 0; identity && i < shape.size(); ++i)
    identity = broadcast_dimensions[i] == int64_t(i);
  if (identity) return x;
  return apply<prim::BroadcastInDim>({x}, shape, broadcast_dimensions);
}

Tensor broadcast_to(const Tensor& x, const Shape& shape) {
  if (x.defined() && x.shape() == shape) return x;  // the common case, with no allocation
  check_shape(shape, x.dtype(), "broadcast_to");
  check(shape.size() >= size_t(x.ndim()), "broadcast_to: cannot broadcast shape ", fmt(x.shape()),
        " to the lower-rank shape ", fmt(shape));
  std::vector<int64_t> dims(x.ndim());
  std::iota(dims.begin(), dims.end(), int64_t(shape.size()) - x.ndim());
  for (int64_t i = 0; i < x.ndim(); ++i)
    check(x.shape()[i] == 1 || x.shape()[i] == shape[dims[i]],
          "broadcast_to: cannot broadcast shape ", fmt(x.shape()), " to shape ", fmt(shape));
  return broadcast_in_dim(x, shape, dims);
}

Tensor slice(const Tensor& x, const Shape& start, const Shape& limit, const Shape& strides) {
  const Shape steps = strides.empty() ? Shape(x.ndim(), 1) : strides;
  return apply<prim::Slice>({x}, start, limit, steps);
}

Tensor slice_axis(const Tensor& x, int64_t axis, int64_t start, int64_t stop, int64_t step) {
  const int64_t a = prim::normalize_axis(axis, x.ndim(), "slice_axis");
  check(step != 0, "slice_axis: step must not be zero (x of shape ", fmt(x.shape()), ", axis ",
        axis, ")");
  if (step < 0) return detail::slice_axis_reversed(x, a, start, stop, step);
  const int64_t n = x.shape()[a];
  auto clamp = [n](int64_t i) { return std::clamp<int64_t>(i < 0 ? i + n : i, 0, n); };
  Shape lo(x.ndim(), 0), hi = x.shape(), st(x.ndim(), 1);
  lo[a] = clamp(start);
  hi[a] = std::max(lo[a], clamp(stop));
  st[a] = step;
  return slice(x, lo, hi, st);
}

}  // namespace lanes
