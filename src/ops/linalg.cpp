// Linear-algebra ops, all composed from the dot_general primitive (plus broadcast_to views for
// matmul's batch dims and cast for dtype promotion).
#include <algorithm>
#include <numeric>

#include "ops/internal.h"
#include "primitives/dot_general.h"

namespace lanes {

namespace {

// Both operands in their common dtype (jnp: int32 @ float32 is float32).
std::pair<Tensor, Tensor> promoted(const Tensor& a, const Tensor& b) {
  const DType t = promote_types(a.dtype(), b.dtype());
  return {a.dtype() == t ? a : cast(a, t), b.dtype() == t ? b : cast(b, t)};
}

// Negative dims count from the end; out-of-range ones are left for dot_general to report.
std::vector<int64_t> wrapped(std::vector<int64_t> dims, int64_t rank) {
  for (int64_t& d : dims) d += d < 0 && d >= -rank ? rank : 0;
  return dims;
}

std::vector<int64_t> range(int64_t begin, int64_t end) {
  std::vector<int64_t> v(std::max<int64_t>(0, end - begin));
  std::iota(v.begin(), v.end(), begin);
  return v;
}

// Checks the contracted dims of a (a_axis) and b (b_axis) agree, naming op and both shapes.
void check_aligned(const char* op, const Tensor& a, int64_t a_axis, const Tensor& b,
                   int64_t b_axis) {
  check(a.shape()[a_axis] == b.shape()[b_axis], op, ": shapes ", fmt(a.shape()), " and ",
        fmt(b.shape()), " are not aligned: dim ", a_axis, " of the first (size ", a.shape()[a_axis],
        ") != dim ", b_axis, " of the second (size ", b.shape()[b_axis], ")");
}

}  // namespace

Tensor dot_general(const Tensor& lhs, const Tensor& rhs, const DotDims& dims) {
  DotDims d{wrapped(dims.lhs_contracting, lhs.ndim()), wrapped(dims.rhs_contracting, rhs.ndim()),
            wrapped(dims.lhs_batch, lhs.ndim()), wrapped(dims.rhs_batch, rhs.ndim())};
  const auto [a, b] = promoted(lhs, rhs);
  return ops::apply<prim::DotGeneral>({a, b}, std::move(d));
}

// 1-d operands contract directly (no promotion to 2-d and back), and when only one side has batch
// dims the other is not broadcast: they fold into dot_general's free dims (one GEMM).
Tensor matmul(const Tensor& a, const Tensor& b) {
  check(a.ndim() >= 1 && b.ndim() >= 1, "matmul: operands must be at least 1-d, got shapes ",
        fmt(a.shape()), " and ", fmt(b.shape()));
  const int64_t a_k = a.ndim() - 1, b_k = b.ndim() == 1 ? 0 : b.ndim() - 2;
  check_aligned("matmul", a, a_k, b, b_k);
  if (b.ndim() <= 2) return dot_general(a, b, {{a_k}, {0}, {}, {}});
  if (a.ndim() == 1) return dot_general(a, b, {{0}, {b_k}, {}, {}});
  const Shape ba(a.shape().begin(), a.shape().end() - 2),
      bb(b.shape().begin(), b.shape().end() - 2);
  const size_t nb = std::max(ba.size(), bb.size());
  Shape batch(nb);
  for (size_t i = 0; i < nb; ++i) {  // numpy broadcasting of the leading dims
    const int64_t da = i < nb - ba.size() ? 1 : ba[i - (nb - ba.size())];
    const int64_t db = i < nb - bb.size() ? 1 : bb[i - (nb - bb.size())];
    check(da == db || da == 1 || db == 1, "matmul: batch dims of shapes ", fmt(a.shape()), " and ",
          fmt(b.shape()), " cannot be broadcast together");
    batch[i] = da == 1 ? db : da;
  }
  Shape sa = batch, sb = batch;
  sa.insert(sa.end(), a.shape().end() - 2, a.shape().end());
  sb.insert(sb.end(), b.shape().end() - 2, b.shape().end());
  const auto n = static_cast<int64_t>(nb);
  return dot_general(broadcast_to(a, sa), broadcast_to(b, sb),
                     {{n + 1}, {n}, range(0, n), range(0, n)});
}

Tensor dot(const Tensor& a, const Tensor& b) {
  if (a.ndim() == 0 || b.ndim() == 0) return multiply(a, b);
  const int64_t a_k = a.ndim() - 1, b_k = b.ndim() == 1 ? 0 : b.ndim() - 2;
  check_aligned("dot", a, a_k, b, b_k);
  return dot_general(a, b, {{a_k}, {b_k}, {}, {}});
}

Tensor outer(const Tensor& a, const Tensor& b) { return dot_general(flatten(a), flatten(b), {}); }

Tensor tensordot(const Tensor& a, const Tensor& b, int64_t axes) {
  check(axes >= 0 && axes <= std::min(a.ndim(), b.ndim()), "tensordot: axes=", axes,
        " must be between 0 and the rank of both operands, got shapes ", fmt(a.shape()), " and ",
        fmt(b.shape()));
  return tensordot(a, b, range(a.ndim() - axes, a.ndim()), range(0, axes));
}

Tensor tensordot(const Tensor& a, const Tensor& b, const std::vector<int64_t>& a_axes,
                 const std::vector<int64_t>& b_axes) {
  check(a_axes.size() == b_axes.size(), "tensordot: axes ", fmt(a_axes), " and ", fmt(b_axes),
        " must have the same length (shapes ", fmt(a.shape()), " and ", fmt(b.shape()), ")");
  std::vector<int64_t> la = a_axes, lb = b_axes;
  for (size_t i = 0; i < la.size(); ++i) {
    check(la[i] >= -a.ndim() && la[i] < a.ndim() && lb[i] >= -b.ndim() && lb[i] < b.ndim(),
          "tensordot: axes ", fmt(a_axes), " and ", fmt(b_axes), " are out of range for shapes ",
          fmt(a.shape()), " and ", fmt(b.shape()));
    la[i] += la[i] < 0 ? a.ndim() : 0;
    lb[i] += lb[i] < 0 ? b.ndim() : 0;
    check_aligned("tensordot", a, la[i], b, lb[i]);
  }
  for (const auto* axes : {&la, &lb}) {
    std::vector<int64_t> sorted = *axes;
    std::sort(sorted.begin(), sorted.end());
    check(std::adjacent_find(sorted.begin(), sorted.end()) == sorted.end(),
          "tensordot: repeated axis in ", fmt(a_axes), " / ", fmt(b_axes), " for shapes ",
          fmt(a.shape()), " and ", fmt(b.shape()));
  }
  return dot_general(a, b, {la, lb, {}, {}});
}

}  // namespace lanes
