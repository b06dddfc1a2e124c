#include "primitives/indexing.h"

#include <algorithm>

#include "kernels/indexing.h"
#include "lanes/ops.h"
#include "primitives/util.h"
#include "transforms/batching.h"
#include "transforms/masking.h"

namespace lanes::prim {

namespace {

// Zeros as a stride-0 view of one element: scatter_add copies it into its fresh output anyway.
Tensor zeros_view(const Shape& shape, DType dtype) { return broadcast_to(zeros({}, dtype), shape); }

std::string axis_params(int64_t axis, int64_t batch_dims) {
  return "axis=" + std::to_string(axis) + ", batch_dims=" + std::to_string(batch_dims);
}

void check_index_dtype(const TensorType& indices, const char* op) {
  check(is_integral(indices.dtype), op, ": indices must be integers (uint8, int32 or int64), got ",
        dtype_name(indices.dtype), " indices of shape ", fmt(indices.shape));
}

}  // namespace

Shape Gather::output_shape(const Shape& x, const Shape& indices, int64_t axis, int64_t batch_dims,
                           const char* op) {
  const int64_t rank = static_cast<int64_t>(x.size());
  check(axis >= 0 && axis < rank, op, ": axis ", axis, " is out of range for x of shape ", fmt(x));
  check(batch_dims >= 0 && batch_dims <= axis && batch_dims <= int64_t(indices.size()), op,
        ": batch_dims ", batch_dims, " must be in [0, axis ", axis,
        "] and at most the rank of indices of shape ", fmt(indices), " (x of shape ", fmt(x), ")");
  for (int64_t d = 0; d < batch_dims; ++d)
    check(x[d] == indices[d], op, ": batch dim ", d, " of x of shape ", fmt(x),
          " does not match that of indices of shape ", fmt(indices));
  Shape out(x.begin(), x.begin() + axis);
  out.insert(out.end(), indices.begin() + batch_dims, indices.end());
  out.insert(out.end(), x.begin() + axis + 1, x.end());
  return out;
}

// ---- gather -----------------------------------------------------------------------------------

std::string Gather::params() const { return axis_params(axis_, batch_dims_); }

std::vector<TensorType> Gather::infer(const std::vector<TensorType>& in) const {
  check_arity(in, 2, "gather");
  check_index_dtype(in[1], "gather");
  return {{output_shape(in[0].shape, in[1].shape, axis_, batch_dims_, "gather"), in[0].dtype}};
}

std::vector<Tensor> Gather::eval(const std::vector<Tensor>& in) const {
  const Tensor &x = in[0], &indices = in[1];
  const Shape out = output_shape(x.shape(), indices.shape(), axis_, batch_dims_, "gather");
  const std::vector<int64_t> index =
      kernels::checked_indices(indices, x.shape()[axis_], "gather", axis_, x.shape());
  return {kernels::gather(x, index, indices.shape(), axis_, batch_dims_, out)};
}

std::vector<Tensor> Gather::jvp(const std::vector<Tensor>& x, const std::vector<Tensor>& t,
                                const std::vector<Tensor>&) const {
  if (!t[0].defined()) return {Tensor()};
  return {gather(t[0], x[1], axis_, batch_dims_)};
}

// The transpose of a gather scatters the cotangent back, summing where indices repeat.
std::vector<Tensor> Gather::vjp(const std::vector<Tensor>& x, const std::vector<Tensor>& ct,
                                const std::vector<Tensor>&) const {
  if (!ct[0].defined()) return {Tensor(), Tensor()};
  const Tensor zero = zeros_view(x[0].shape(), ct[0].dtype());
  return {scatter_add(zero, x[1], ct[0], axis_, batch_dims_), Tensor()};
}

// ---- scatter_add ------------------------------------------------------------------------------

std::string ScatterAdd::params() const { return axis_params(axis_, batch_dims_); }

std::vector<TensorType> ScatterAdd::infer(const std::vector<TensorType>& in) const {
  check_arity(in, 3, "scatter_add");
  check_index_dtype(in[1], "scatter_add");
  const Shape& x = in[0].shape;
  const Shape want = Gather::output_shape(x, in[1].shape, axis_, batch_dims_, "scatter_add");
  check(in[2].dtype == in[0].dtype, "scatter_add: updates of dtype ", dtype_name(in[2].dtype),
        " do not match x of dtype ", dtype_name(in[0].dtype));
  check(in[2].shape == want, "scatter_add: updates of shape ", fmt(in[2].shape),
        " do not match the gathered shape ", fmt(want), " of x of shape ", fmt(x),
        " and indices of shape ", fmt(in[1].shape), " along axis ", axis_);
  return {{x, in[0].dtype}};
}

std::vector<Tensor> ScatterAdd::eval(const std::vector<Tensor>& in) const {
  const Tensor &x = in[0], &indices = in[1];
  const std::vector<int64_t> index =
      kernels::checked_indices(indices, x.shape()[axis_], "scatter_add", axis_, x.shape());
  return {kernels::scatter_add(x, index, indices.shape(), in[2], axis_, batch_dims_)};
}

std::vector<Tensor> ScatterAdd::jvp(const std::vector<Tensor>& x, const std::vector<Tensor>& t,
                                    const std::vector<Tensor>&) const {
  if (!t[2].defined()) return {t[0]};  // undefined too when neither has a tangent
  const Tensor base = t[0].defined() ? t[0] : zeros_view(x[0].shape(), t[2].dtype());
  return {scatter_add(base, x[1], t[2], axis_, batch_dims_)};
}

std::vector<Tensor> ScatterAdd::vjp(const std::vector<Tensor>& x, const std::vector<Tensor>& ct,
                                    const std::vector<Tensor>&) const {
  if (!ct[0].defined()) return {Tensor(), Tensor(), Tensor()};
  return {ct[0], Tensor(), gather(ct[0], x[1], axis_, batch_dims_)};
}

// ---- batching rules
// ------------------------------------------------------------------------------

// tf.gather's batch_dims is made for vmap: with both operands mapped, the batch becomes one more
// leading batch dim. With only one mapped and no batch dims, the other stays as it is: a mapped
// x gathers along axis + 1 (batch first); mapped indices put the batch where the indices go.
std::vector<Batched> Gather::batch(const std::vector<Batched>& in, int64_t size) const {
  const Batched &x = in[0], &idx = in[1];
  if (batch_dims_ == 0 && !idx.mapped()) {
    const Tensor xb = batching::move_batch_dim(x, 0);
    return {{bind1(std::make_shared<const Gather>(axis_ + 1, 0), {xb, idx.value}), 0}};
  }
  if (batch_dims_ == 0 && !x.mapped()) {
    const Tensor ib = batching::move_batch_dim(idx, 0);
    return {{bind1(std::make_shared<const Gather>(axis_, 0), {x.value, ib}), axis_}};
  }
  const Tensor xb = batching::batch_at_front(x, size), ib = batching::batch_at_front(idx, size);
  return {{bind1(std::make_shared<const Gather>(axis_ + 1, batch_dims_ + 1), {xb, ib}), 0}};
}

// The result is a fresh copy of x either way, so every operand goes batch-first (unmapped ones as
// views) and the batch becomes one more leading batch dim.
std::vector<Batched> ScatterAdd::batch(const std::vector<Batched>& in, int64_t size) const {
  std::vector<Tensor> xs;
  for (const Batched& x : in) xs.push_back(batching::batch_at_front(x, size));
  return {{bind1(std::make_shared<const ScatterAdd>(axis_ + 1, batch_dims_ + 1), xs), 0}};
}

// Masking (Pad): indices into a padded axis count from each lane's own end when negative and
// are clamped to its valid extent. A scatter's padded updates (rows of the update that only
// padding produced: a gradient's cotangent broadcast into the padding, a histogram's padded
// labels) must not reach valid positions: scatter_add zeroes them, and an overwriting scatter
// whose updates are padded has no rule.
namespace {
Tensor clamp_to_valid(const Tensor& indices, const detail::AxisTag& tag,
                      const detail::MaskContext& ctx) {
  if (!tag.ragged()) return indices;
  const Tensor n = cast(ctx.valid(tag), indices.dtype());
  const Tensor from_end = where(less(indices, scalar(0, indices.dtype())), indices + n, indices);
  return minimum(maximum(from_end, 0), n - 1);
}

bool any_ragged(const detail::Tags& tags) {
  return std::any_of(tags.begin(), tags.end(), [](const detail::AxisTag& t) { return t.ragged(); });
}
}  // namespace

std::vector<Tensor> Gather::mask(const std::vector<Tensor>& in,
                                 const detail::MaskContext& ctx) const {
  return ctx.rebind({in[0], clamp_to_valid(in[1], ctx.in(0)[size_t(axis_)], ctx)});
}
std::vector<Tensor> ScatterAdd::mask(const std::vector<Tensor>& in,
                                     const detail::MaskContext& ctx) const {
  std::vector<int64_t> all(size_t(in[2].ndim()));
  for (size_t i = 0; i < all.size(); ++i) all[i] = int64_t(i);
  return ctx.rebind({in[0], clamp_to_valid(in[1], ctx.in(0)[size_t(axis_)], ctx),
                     ctx.fill_padding(in[2], ctx.in(2), all, 0.0)});
}
std::vector<Tensor> Scatter::mask(const std::vector<Tensor>& in,
                                  const detail::MaskContext& ctx) const {
  if (any_ragged(ctx.in(1)) || any_ragged(ctx.in(2)))
    ctx.no_rule("padded updates would overwrite valid positions");
  std::vector<Tensor> args = in;
  args[1] = clamp_to_valid(in[1], ctx.in(0)[size_t(axis_)], ctx);
  return ctx.rebind(args);
}

}  // namespace lanes::prim
