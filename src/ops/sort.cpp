// sort, argsort and top_k over the Argsort primitive (last axis) and gather: the values are
// gathered at the sorting indices, so their derivatives come from gather's rules.
#include "primitives/sort.h"
#include "lanes/array_ops.h"
#include "ops/internal.h"
#include "primitives/util.h"

namespace lanes {

namespace {

int64_t sort_axis(const Tensor& x, int64_t axis, const char* op) {
  check(x.defined(), op, ": x is an undefined tensor");
  check(x.ndim() > 0, op, ": needs a tensor with at least one dim, got shape ", fmt(x.shape()));
  return prim::normalize_axis(axis, x.ndim(), op);
}

// x[..., idx[..., j]]: a gather along the last axis with every leading dim matched.
Tensor take_along_last(const Tensor& x, const Tensor& idx) {
  return gather(x, idx, x.ndim() - 1, x.ndim() - 1);
}

Tensor argsort_last(const Tensor& x, bool descending) {
  return ops::apply<prim::Argsort>({x}, descending);
}

}  // namespace

Tensor argsort(const Tensor& x, int64_t axis) {
  const int64_t a = sort_axis(x, axis, "argsort");
  return moveaxis(argsort_last(moveaxis(x, a, -1), false), -1, a);
}

Tensor sort(const Tensor& x, int64_t axis) {
  const int64_t a = sort_axis(x, axis, "sort");
  const Tensor moved = moveaxis(x, a, -1);
  return moveaxis(take_along_last(moved, argsort_last(moved, false)), -1, a);
}

std::pair<Tensor, Tensor> top_k(const Tensor& x, int64_t k) {
  sort_axis(x, -1, "top_k");
  const int64_t n = x.shape().back();
  check(k >= 0 && k <= n, "top_k: k = ", k, " must be in [0, ", n, "] for x of shape ",
        fmt(x.shape()));
  const Tensor idx = slice_axis(argsort_last(x, true), -1, 0, k);
  return {take_along_last(x, idx), idx};
}

}  // namespace lanes
