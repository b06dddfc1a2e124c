// Indexing ops over the gather / scatter_add primitives; one_hot is a composite.
#include "primitives/indexing.h"
#include "lanes/array_ops.h"
#include "ops/internal.h"
#include "primitives/util.h"

namespace lanes {

using ops::apply;

namespace {

struct IndexedAxis {
  int64_t axis, batch_dims;
};

// Negative axis counts from x's end, negative batch_dims from the indices' end (tf.gather).
IndexedAxis normalize(const Tensor& x, const Tensor& indices, int64_t axis, int64_t batch_dims,
                      const char* op) {
  check(x.defined() && indices.defined(), op, ": x or indices is an undefined tensor");
  check(x.ndim() > 0, op, ": x of shape ", fmt(x.shape()),
        " is zero-dimensional (indices of shape ", fmt(indices.shape()), ")");
  const int64_t a = prim::normalize_axis(axis, x.ndim(), op);
  const int64_t b = batch_dims < 0 ? batch_dims + indices.ndim() : batch_dims;
  return {a, b};
}

// Like jnp's x.at[...].add(updates): updates broadcast to the gathered shape and take x's dtype.
Tensor prepared_updates(const Tensor& x, const Tensor& indices, const Tensor& updates,
                        const IndexedAxis& s, const char* op) {
  check(updates.defined(), op, ": updates is an undefined tensor");
  const Shape want =
      prim::Gather::output_shape(x.shape(), indices.shape(), s.axis, s.batch_dims, op);
  Tensor u = cast(updates, x.dtype());
  if (u.shape() != want) {
    bool ok = u.ndim() <= int64_t(want.size());
    for (int64_t i = 1; ok && i <= u.ndim(); ++i) {
      const int64_t have = u.shape()[u.ndim() - i];
      ok = have == 1 || have == want[want.size() - i];
    }
    check(ok, op, ": updates of shape ", fmt(updates.shape()),
          " cannot be broadcast to the gathered shape ", fmt(want), " of x of shape ",
          fmt(x.shape()), " and indices of shape ", fmt(indices.shape()), " along axis ", s.axis);
    u = broadcast_to(u, want);
  }
  return u;
}

}  // namespace

Tensor gather(const Tensor& x, const Tensor& indices, int64_t axis, int64_t batch_dims) {
  const IndexedAxis s = normalize(x, indices, axis, batch_dims, "gather");
  return apply<prim::Gather>({x, indices}, s.axis, s.batch_dims);
}

Tensor take(const Tensor& x, const Tensor& indices, int64_t axis) {
  const IndexedAxis s = normalize(x, indices, axis, 0, "take");
  return apply<prim::Gather>({x, indices}, s.axis, int64_t{0});
}

Tensor scatter_add(const Tensor& x, const Tensor& indices, const Tensor& updates, int64_t axis,
                   int64_t batch_dims) {
  const IndexedAxis s = normalize(x, indices, axis, batch_dims, "scatter_add");
  const Tensor u = prepared_updates(x, indices, updates, s, "scatter_add");
  return apply<prim::ScatterAdd>({x, indices, u}, s.axis, s.batch_dims);
}

Tensor scatter(const Tensor& x, const Tensor& indices, const Tensor& updates, ScatterMode mode,
               int64_t axis, int64_t batch_dims) {
  using Kind = kernels::ScatterKind;
  if (mode == ScatterMode::Add) return scatter_add(x, indices, updates, axis, batch_dims);
  const IndexedAxis s = normalize(x, indices, axis, batch_dims, "scatter");
  const Tensor u = prepared_updates(x, indices, updates, s, "scatter");
  const Kind kind = mode == ScatterMode::Set        ? Kind::Set
                    : mode == ScatterMode::Multiply ? Kind::Multiply
                    : mode == ScatterMode::Min      ? Kind::Min
                                                    : Kind::Max;
  return apply<prim::Scatter>({x, indices, u}, kind, s.axis, s.batch_dims);
}

// equal(indices[..., None], 0..depth-1): an out-of-range index matches nothing (a zero row).
Tensor one_hot(const Tensor& indices, int64_t depth, DType dtype) {
  check(indices.defined(), "one_hot: indices is an undefined tensor");
  check(depth >= 0, "one_hot: depth ", depth, " is negative (indices of shape ",
        fmt(indices.shape()), ")");
  check(indices.dtype() != DType::Bool, "one_hot: indices of shape ", fmt(indices.shape()),
        " must be numbers, not bool");
  const DType iota_dtype = is_floating(indices.dtype()) ? indices.dtype() : DType::Int64;
  return cast(equal(expand_dims(indices, -1), iota({depth}, 0, iota_dtype)), dtype);
}

}  // namespace lanes
