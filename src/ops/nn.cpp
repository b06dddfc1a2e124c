// Neural-network composites, built only from ops so that batching and derivatives come from
// the primitives' rules: softmax, log_softmax, logsumexp, l2_loss, softmax_cross_entropy.
// Integer inputs compute in float32 (as jax.nn does).
#include <algorithm>
#include <limits>

#include "ops/internal.h"
#include "primitives/reduce.h"

namespace lanes {

namespace {

Tensor floating(const Tensor& x, const char* op, const char* arg) {
  check(x.defined(), op, ": ", arg, " is an undefined tensor");
  return is_floating(x.dtype()) ? x : cast(x, DType::Float32);
}

int64_t one_axis(const Tensor& x, int64_t axis, const char* op) {
  return prim::reduction_axes({axis}, false, x.shape(), op)[0];
}

/// The max over `axes` (kept as size-1 dims) with infinities replaced by 0. Subtracting it keeps
/// exp() in range (the largest term becomes exp(0) = 1), and a row of -inf stays -inf - 0
/// instead of becoming -inf - -inf = NaN (jax.nn.logsumexp does the same).
Tensor shift_of(const Tensor& x, const std::vector<int64_t>& axes) {
  const Tensor m = max(x, axes, true);
  return where(abs(m) < std::numeric_limits<double>::infinity(), m, as_weak(0.0, m));
}

}  // namespace

Tensor softmax(const Tensor& x, int64_t axis) {
  const Tensor xf = floating(x, "softmax", "x");
  const int64_t a = one_axis(xf, axis, "softmax");
  if (xf.shape()[a] == 0) return xf;
  const Tensor e = exp(xf - shift_of(xf, {a}));
  return e / sum(e, a, true);
}

Tensor log_softmax(const Tensor& x, int64_t axis) {
  const Tensor xf = floating(x, "log_softmax", "x");
  const int64_t a = one_axis(xf, axis, "log_softmax");
  if (xf.shape()[a] == 0) return xf;
  const Tensor shifted = xf - shift_of(xf, {a});
  return shifted - log(sum(exp(shifted), a, true));
}

// An empty reduction gives log(0) = -inf.
Tensor logsumexp(const Tensor& x, const Axes& axes, bool keepdims) {
  const Tensor xf = floating(x, "logsumexp", "x");
  const std::vector<int64_t> ax =
      prim::reduction_axes(axes.list, axes.all, xf.shape(), "logsumexp");
  int64_t count = 1;
  for (int64_t a : ax) count *= xf.shape()[a];
  if (count == 0) return log(sum(exp(xf), ax, keepdims));
  const Tensor m = shift_of(xf, ax);
  const Tensor r = log(sum(exp(xf - m), ax, true)) + m;
  if (keepdims) return r;
  Shape shape;
  for (int64_t d = 0; d < xf.ndim(); ++d)
    if (!std::binary_search(ax.begin(), ax.end(), d)) shape.push_back(xf.shape()[d]);
  return reshape(r, shape);
}

Tensor l2_loss(const Tensor& x) {
  check(x.defined(), "l2_loss: x is an undefined tensor");
  return sum(x * x) / 2.0;
}

// Integer labels pick log p[label] along the axis (a gather, which rejects out-of-range labels
// when it runs; concrete labels are checked here first for a clearer message).
Tensor softmax_cross_entropy(const Tensor& logits, const Tensor& labels, int64_t axis) {
  const char* op = "softmax_cross_entropy";
  const Tensor lf = floating(logits, op, "logits");
  check(labels.defined(), op, ": labels is an undefined tensor");
  const int64_t a = one_axis(lf, axis, op);
  Shape batch = lf.shape();
  batch.erase(batch.begin() + a);
  const Tensor logp = log_softmax(lf, a);
  if (is_floating(labels.dtype())) {
    check(labels.shape() == lf.shape(), op, ": float labels (probabilities) of shape ",
          fmt(labels.shape()), " must have the logits' shape ", fmt(lf.shape()));
    return -sum(labels * logp, a);
  }
  check(is_integral(labels.dtype()), op,
        ": labels must be integer class indices or float probabilities, got ",
        dtype_name(labels.dtype()), " labels of shape ", fmt(labels.shape()));
  check(labels.shape() == batch, op, ": integer labels of shape ", fmt(labels.shape()),
        " must have the logits' shape ", fmt(lf.shape()), " without axis ", axis, ", i.e. ",
        fmt(batch));
  const int64_t classes = lf.shape()[a];
  if (!labels.is_tracer())
    for (int64_t v : labels.to_vector<int64_t>())
      check(v >= 0 && v < classes, op, ": label ", v, " is out of range for ", classes,
            " classes (logits of shape ", fmt(lf.shape()), ", axis ", axis, ")");
  const auto nb = static_cast<int64_t>(batch.size());
  const Tensor picked = gather(moveaxis(logp, a, -1), expand_dims(labels, -1), nb, nb);
  return -reshape(picked, batch);
}

}  // namespace lanes
