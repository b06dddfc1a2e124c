#include "primitives/cumulative.h"

#include "kernels/cumulative.h"
#include "primitives/util.h"
#include "transforms/batching.h"
#include "transforms/masking.h"

namespace lanes::prim {

std::string CumSum::params() const {
  return "axis=" + std::to_string(axis_) + ", reverse=" + (reverse_ ? "true" : "false");
}

std::vector<TensorType> CumSum::infer(const std::vector<TensorType>& in) const {
  check_arity(in, 1, "cumsum");
  const Shape& s = in[0].shape;
  check(axis_ >= 0 && axis_ < int64_t(s.size()), "cumsum: axis ", axis_,
        " is out of range for a tensor of shape ", fmt(s));
  check(in[0].dtype != DType::Bool, "cumsum: the primitive takes numbers, got bool of shape ",
        fmt(s));
  return single(s, in[0].dtype);
}

double CumSum::flops(const std::vector<TensorType>& in, const std::vector<TensorType>&) const {
  return is_floating(in[0].dtype) ? double(shape_numel(in[0].shape)) : 0;
}

std::vector<Tensor> CumSum::eval(const std::vector<Tensor>& in) const {
  return {kernels::cumsum(in[0], axis_, reverse_)};
}

// The batch dim stays where it is; the scanned axis moves past it when it comes after.
std::vector<Batched> CumSum::batch(const std::vector<Batched>& in, int64_t) const {
  const int64_t d = in[0].dim, axis = axis_ < d ? axis_ : axis_ + 1;
  return {{bind1(std::make_shared<const CumSum>(axis, reverse_), {in[0].value}), d}};
}

std::vector<Tensor> CumSum::jvp(const std::vector<Tensor>&, const std::vector<Tensor>& t,
                                const std::vector<Tensor>&) const {
  if (!t[0].defined()) return {Tensor()};
  return {bind1(shared_from_this(), {t[0]})};
}

// The transpose of a running sum is the running sum the other way.
std::vector<Tensor> CumSum::vjp(const std::vector<Tensor>&, const std::vector<Tensor>& ct,
                                const std::vector<Tensor>&) const {
  if (!ct[0].defined()) return {Tensor()};
  return {bind1(std::make_shared<const CumSum>(axis_, !reverse_), {ct[0]})};
}

// ---- argcummax / argcummin -------------------------------------------------------------------

std::string ArgCum::params() const {
  return std::string("reverse=") + (reverse_ ? "true" : "false");
}

std::vector<TensorType> ArgCum::infer(const std::vector<TensorType>& in) const {
  check_arity(in, 1, "argcum");
  check(!in[0].shape.empty(), name(), ": needs a tensor with at least one dim, got shape ",
        fmt(in[0].shape));
  return single(in[0].shape, DType::Int64);
}

std::vector<Tensor> ArgCum::eval(const std::vector<Tensor>& in) const {
  return {kernels::arg_cum_last(in[0], min_, reverse_)};
}

// Rows scan independently: with the batch first, the example's last axis is still last.
std::vector<Batched> ArgCum::batch(const std::vector<Batched>& in, int64_t) const {
  return {{bind1(shared_from_this(), {batching::move_batch_dim(in[0], 0)}), 0}};
}

// Indices are integers: no derivative flows through them.
std::vector<Tensor> ArgCum::jvp(const std::vector<Tensor>&, const std::vector<Tensor>&,
                                const std::vector<Tensor>&) const {
  return {Tensor()};
}

std::vector<Tensor> ArgCum::vjp(const std::vector<Tensor>&, const std::vector<Tensor>&,
                                const std::vector<Tensor>&) const {
  return {Tensor()};
}

// Masking (Pad): padding sits at the high end, so a forward cumulative op never reads it; a
// reverse one starts there: cumsum fills it with zeros, argcummax/argcummin have no rule.
std::vector<Tensor> CumSum::mask(const std::vector<Tensor>& in,
                                 const detail::MaskContext& ctx) const {
  if (!reverse_) return ctx.rebind(in);
  return ctx.rebind({ctx.fill_padding(in[0], ctx.in(0), {axis_}, 0.0)});
}
std::vector<Tensor> ArgCum::mask(const std::vector<Tensor>& in,
                                 const detail::MaskContext& ctx) const {
  if (reverse_ && ctx.in(0).back().ragged()) ctx.no_rule("a reverse scan along a padded axis");
  return ctx.rebind(in);
}

}  // namespace lanes::prim
