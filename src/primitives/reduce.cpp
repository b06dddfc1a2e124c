#include "primitives/reduce.h"

#include <algorithm>

#include "lanes/dtype.h"
#include "lanes/ops.h"
#include "primitives/util.h"
#include "transforms/masking.h"

namespace lanes::prim {

std::vector<int64_t> reduction_axes(const std::vector<int64_t>& axes, bool all, const Shape& shape,
                                    const char* op) {
  const auto ndim = static_cast<int64_t>(shape.size());
  std::vector<int64_t> out;
  if (all) {
    for (int64_t d = 0; d < ndim; ++d) out.push_back(d);
    return out;
  }
  for (int64_t a : axes) {
    check(a >= -ndim && a < ndim, op, ": axis ", a, " is out of range for a tensor of shape ",
          fmt(shape), " (rank ", ndim, ")");
    out.push_back(a < 0 ? a + ndim : a);
  }
  std::sort(out.begin(), out.end());
  const auto repeated = std::adjacent_find(out.begin(), out.end());
  check(repeated == out.end(), op, ": repeated axis ", repeated == out.end() ? 0 : *repeated,
        " in axes ", fmt(axes), " for a tensor of shape ", fmt(shape));
  return out;
}

namespace {

/// The operand's axis list with the batch dim `d` inserted: axes at or past d shift by one.
int64_t past_batch(int64_t axis, int64_t d) { return axis < d ? axis : axis + 1; }

}  // namespace

// ---- reduce -----------------------------------------------------------------------------------

std::string Reduce::params() const { return "axes=" + list_str(axes_); }

std::vector<TensorType> Reduce::infer(const std::vector<TensorType>& in) const {
  check_arity(in, 1, name().c_str());
  const Shape& s = in[0].shape;
  for (size_t i = 0; i < axes_.size(); ++i)
    check(axes_[i] >= 0 && axes_[i] < int64_t(s.size()) && (i == 0 || axes_[i] > axes_[i - 1]),
          name(), ": axes ", fmt(axes_), " must be increasing and within the rank of shape ",
          fmt(s));
  const bool logical = in[0].dtype == DType::Bool;
  check(!logical || kind_ == Kind::Max || kind_ == Kind::Min, name(),
        ": does not accept a bool operand (shape ", fmt(s), ")");
  Shape out;
  int64_t reduced = 1;
  for (int64_t d = 0; d < int64_t(s.size()); ++d) {
    if (std::binary_search(axes_.begin(), axes_.end(), d))
      reduced *= s[d];
    else
      out.push_back(s[d]);
  }
  const bool has_identity = kind_ == Kind::Sum || kind_ == Kind::Prod;
  check(has_identity || reduced > 0 || shape_numel(out) == 0, name(),
        ": cannot reduce the empty axes ", fmt(axes_), " of a tensor of shape ", fmt(s),
        ": the operation has no identity");
  return single(std::move(out), in[0].dtype);
}

double Reduce::flops(const std::vector<TensorType>& in, const std::vector<TensorType>& out) const {
  // n - 1 operations fold n values into one.
  if (!is_floating(in[0].dtype)) return 0;
  return double(shape_numel(in[0].shape) - shape_numel(out[0].shape));
}

std::vector<Tensor> Reduce::eval(const std::vector<Tensor>& in) const {
  return {kernels::reduce(kind_, in[0], axes_)};
}

// The same reduction with the axes shifted past the batch dim, which stays in place.
std::vector<Batched> Reduce::batch(const std::vector<Batched>& in, int64_t) const {
  const int64_t d = in[0].dim;
  std::vector<int64_t> axes;
  int64_t before = 0;
  for (int64_t a : axes_) {
    axes.push_back(past_batch(a, d));
    before += a < d;
  }
  return {{bind1(std::make_shared<const Reduce>(kind_, axes), {in[0].value}), d - before}};
}

namespace {
// y (the shape of a reduction's output) broadcast back over the reduced axes of `shape`.
Tensor expand_back(const Tensor& y, const Shape& shape, const std::vector<int64_t>& axes) {
  std::vector<int64_t> kept;
  for (int64_t d = 0; d < int64_t(shape.size()); ++d)
    if (!std::binary_search(axes.begin(), axes.end(), d)) kept.push_back(d);
  return broadcast_in_dim(y, shape, kept);
}
}  // namespace

// Where a derivative flows to each input element, as a factor of the output's derivative:
// sum: 1; prod: out / x (exact for inputs without zeros); max/min: the positions equal to the
// extreme, split evenly among ties (as jax does).
static Tensor reduce_weights(kernels::ReduceOp kind, const Tensor& x, const Tensor& out,
                             const std::vector<int64_t>& axes) {
  const Tensor out_b = expand_back(out, x.shape(), axes);
  if (kind == kernels::ReduceOp::Prod) return out_b / x;
  const Tensor mask = cast(equal(x, out_b), x.dtype());
  return mask / expand_back(sum(mask, axes), x.shape(), axes);
}

std::vector<Tensor> Reduce::jvp(const std::vector<Tensor>& x, const std::vector<Tensor>& t,
                                const std::vector<Tensor>& out) const {
  if (kind_ == kernels::ReduceOp::Sum) return {sum(t[0], axes_)};
  return {sum(t[0] * reduce_weights(kind_, x[0], out[0], axes_), axes_)};
}

std::vector<Tensor> Reduce::vjp(const std::vector<Tensor>& x, const std::vector<Tensor>& ct,
                                const std::vector<Tensor>& out) const {
  const Tensor spread = expand_back(ct[0], x[0].shape(), axes_);
  if (kind_ == kernels::ReduceOp::Sum) return {spread};
  return {spread * reduce_weights(kind_, x[0], out[0], axes_)};
}

// ---- argmax / argmin --------------------------------------------------------------------------

std::string ArgReduce::params() const {
  return "axes=(" + std::to_string(axis_) + ",), index_dtype=int64";
}

std::vector<TensorType> ArgReduce::infer(const std::vector<TensorType>& in) const {
  check_arity(in, 1, name().c_str());
  const Shape& s = in[0].shape;
  check(!s.empty(), name(), ": needs a tensor with at least one dim, got shape ", fmt(s));
  check(axis_ >= 0 && axis_ < int64_t(s.size()), name(), ": axis ", axis_,
        " is out of range for a tensor of shape ", fmt(s));
  check(s[axis_] > 0, name(), ": cannot take the ", name(), " along axis ", axis_,
        " of size 0 (shape ", fmt(s), ")");
  Shape out = s;
  out.erase(out.begin() + axis_);
  return {{out, DType::Int64}};
}

std::vector<Tensor> ArgReduce::eval(const std::vector<Tensor>& in) const {
  return {kernels::arg_reduce(kind_, in[0], axis_)};
}

std::vector<Batched> ArgReduce::batch(const std::vector<Batched>& in, int64_t) const {
  const int64_t d = in[0].dim;
  const Tensor out =
      bind1(std::make_shared<const ArgReduce>(kind_, past_batch(axis_, d)), {in[0].value});
  return {{out, axis_ < d ? d - 1 : d}};
}

// Indices are integers: no derivative flows through them.
std::vector<Tensor> ArgReduce::jvp(const std::vector<Tensor>&, const std::vector<Tensor>&,
                                   const std::vector<Tensor>&) const {
  return {Tensor()};
}

std::vector<Tensor> ArgReduce::vjp(const std::vector<Tensor>&, const std::vector<Tensor>&,
                                   const std::vector<Tensor>&) const {
  return {Tensor()};
}

// Masking (Pad): the padding of a reduced axis becomes the reduction's identity (the extreme of
// the dtype for max and min, which have none); argmax/argmin fill it with what never wins.
std::vector<Tensor> Reduce::mask(const std::vector<Tensor>& in,
                                 const detail::MaskContext& ctx) const {
  const DType d = in[0].dtype();
  if (kind_ == Kind::Sum || kind_ == Kind::Prod)
    return ctx.rebind({ctx.fill_padding(in[0], ctx.in(0), axes_, kind_ == Kind::Sum ? 0.0 : 1.0)});
  const Tensor fill = detail::extreme_of(d, kind_ == Kind::Max);
  return ctx.rebind({ctx.fill_padding(in[0], ctx.in(0), axes_, fill)});
}
std::vector<Tensor> ArgReduce::mask(const std::vector<Tensor>& in,
                                    const detail::MaskContext& ctx) const {
  const Tensor fill = detail::extreme_of(in[0].dtype(), kind_ == Kind::ArgMax);
  return ctx.rebind({ctx.fill_padding(in[0], ctx.in(0), {axis_}, fill)});
}

}  // namespace lanes::prim
