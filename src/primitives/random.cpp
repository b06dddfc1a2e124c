#include "primitives/random.h"

#include <ostream>
#include <sstream>

#include "kernels/random.h"
#include "primitives/util.h"
#include "transforms/batching.h"
#include "transforms/masking.h"

namespace lanes::prim {

namespace {

void check_keys(const TensorType& keys, const char* op) {
  check(keys.dtype == DType::Int64, op, ": keys must be an int64 tensor, got ", fmt(keys));
}

// Keys lead the output, so the batch dim of the keys is the batch dim of the output.
std::vector<Batched> same_prim_on_keys(const Primitive& prim, const Batched& keys) {
  return {{bind1(prim.shared_from_this(), {keys.value}), keys.dim}};
}

// Keys are integers: no input or output has a derivative.
std::vector<Tensor> no_tangents(size_t n) { return std::vector<Tensor>(n); }

}  // namespace

// ---- split ------------------------------------------------------------------------------------

std::string RandomSplit::params() const { return detail::concat("num=", num_); }

std::vector<TensorType> RandomSplit::infer(const std::vector<TensorType>& in) const {
  check_arity(in, 1, "random_split");
  check_keys(in[0], "random_split");
  check(num_ >= 0, "random_split: the number of keys must be >= 0, got ", num_);
  Shape out = in[0].shape;
  out.push_back(num_);
  return {{out, DType::Int64}};
}

std::vector<Tensor> RandomSplit::eval(const std::vector<Tensor>& in) const {
  return {kernels::random_split(in[0], num_)};
}

std::vector<Batched> RandomSplit::batch(const std::vector<Batched>& in, int64_t) const {
  return same_prim_on_keys(*this, in[0]);
}

std::vector<Tensor> RandomSplit::jvp(const std::vector<Tensor>&, const std::vector<Tensor>&,
                                     const std::vector<Tensor>&) const {
  return no_tangents(1);
}

std::vector<Tensor> RandomSplit::vjp(const std::vector<Tensor>&, const std::vector<Tensor>&,
                                     const std::vector<Tensor>&) const {
  return no_tangents(1);
}

// ---- fold_in ----------------------------------------------------------------------------------

std::vector<TensorType> RandomFoldIn::infer(const std::vector<TensorType>& in) const {
  check_arity(in, 2, "random_fold_in");
  check_keys(in[0], "random_fold_in");
  check(in[1].dtype == DType::Int64, "random_fold_in: data must be an int64 tensor, got ",
        fmt(in[1]));
  check(in[0].shape == in[1].shape, "random_fold_in: keys ", fmt(in[0]), " and data ", fmt(in[1]),
        " must have one shape");
  return {in[0]};
}

std::vector<Tensor> RandomFoldIn::eval(const std::vector<Tensor>& in) const {
  return {kernels::random_fold_in(in[0], in[1])};
}

// Elementwise in (keys, data): both at one batch dim (an unmapped one as a stride-0 view).
std::vector<Batched> RandomFoldIn::batch(const std::vector<Batched>& in, int64_t size) const {
  int64_t dim = batching::common_batch_dim(in);
  if (dim == kNotMapped) dim = in[0].mapped() ? in[0].dim : in[1].dim;
  return {{bind1(shared_from_this(), batching::align_batch(in, size, dim)), dim}};
}

std::vector<Tensor> RandomFoldIn::jvp(const std::vector<Tensor>&, const std::vector<Tensor>&,
                                      const std::vector<Tensor>&) const {
  return no_tangents(1);
}

std::vector<Tensor> RandomFoldIn::vjp(const std::vector<Tensor>&, const std::vector<Tensor>&,
                                      const std::vector<Tensor>&) const {
  return no_tangents(2);
}

// ---- uniform ----------------------------------------------------------------------------------

std::string RandomUniform::params() const {
  return "shape=" + list_str(shape_) + ", dtype=" + dtype_name(dtype_);
}

std::vector<TensorType> RandomUniform::infer(const std::vector<TensorType>& in) const {
  check_arity(in, 1, "random_uniform");
  check_keys(in[0], "random_uniform");
  check(is_floating(dtype_), "random_uniform: dtype must be float32 or float64, got ",
        dtype_name(dtype_));
  for (int64_t d : shape_)
    check(d >= 0, "random_uniform: negative dimension in shape ", fmt(shape_));
  Shape out = in[0].shape;
  out.insert(out.end(), shape_.begin(), shape_.end());
  return {{out, dtype_}};
}

std::vector<Tensor> RandomUniform::eval(const std::vector<Tensor>& in) const {
  return {kernels::random_uniform(in[0], shape_, dtype_)};
}

std::vector<Batched> RandomUniform::batch(const std::vector<Batched>& in, int64_t) const {
  return same_prim_on_keys(*this, in[0]);
}

std::vector<Tensor> RandomUniform::jvp(const std::vector<Tensor>&, const std::vector<Tensor>&,
                                       const std::vector<Tensor>&) const {
  return no_tangents(1);
}

std::vector<Tensor> RandomUniform::vjp(const std::vector<Tensor>&, const std::vector<Tensor>&,
                                       const std::vector<Tensor>&) const {
  return no_tangents(1);
}

// ---- bits, int, truncated normal -------------------------------------------------------------

std::vector<TensorType> RandomDraw::infer(const std::vector<TensorType>& in) const {
  check_arity(in, 1, name().c_str());
  check_keys(in[0], name().c_str());
  check(supports(dtype_), name(), ": cannot draw ", dtype_name(dtype_));
  for (int64_t d : shape_) check(d >= 0, name(), ": negative dimension in shape ", fmt(shape_));
  Shape out = in[0].shape;
  out.insert(out.end(), shape_.begin(), shape_.end());
  return {{out, dtype_}};
}

std::vector<Batched> RandomDraw::batch(const std::vector<Batched>& in, int64_t) const {
  return same_prim_on_keys(*this, in[0]);
}

std::vector<Tensor> RandomDraw::jvp(const std::vector<Tensor>&, const std::vector<Tensor>&,
                                    const std::vector<Tensor>&) const {
  return no_tangents(1);
}

std::vector<Tensor> RandomDraw::vjp(const std::vector<Tensor>&, const std::vector<Tensor>&,
                                    const std::vector<Tensor>&) const {
  return no_tangents(1);
}

std::string RandomBits::params() const { return "shape=" + list_str(shape_); }

std::vector<Tensor> RandomBits::eval(const std::vector<Tensor>& in) const {
  return {kernels::random_bits(in[0], shape_)};
}

std::string RandomInt::params() const {
  return detail::concat("shape=", list_str(shape_), ", lo=", lo_, ", hi=", hi_,
                        ", dtype=", dtype_name(dtype_));
}

std::vector<Tensor> RandomInt::eval(const std::vector<Tensor>& in) const {
  return {kernels::random_int(in[0], shape_, lo_, hi_, dtype_)};
}

std::string RandomTruncatedNormal::params() const {
  // Bounds at full precision: params key caches, and two bounds must not print alike.
  std::ostringstream os;
  os.precision(17);
  os << "shape=" << list_str(shape_) << ", lo=" << lo_ << ", hi=" << hi_
     << ", dtype=" << dtype_name(dtype_);
  return os.str();
}

std::vector<Tensor> RandomTruncatedNormal::eval(const std::vector<Tensor>& in) const {
  return {kernels::random_truncated_normal(in[0], shape_, lo_, hi_, dtype_)};
}

// Masking (Pad). Element i of what a key draws hashes its flat index i, so a draw padded along
// its first drawn axis alone holds each lane's own draw as its leading rows: what the unpadded
// example draws. Padded along a later axis, every row would shift: no rule. (The keys' own dims
// lead the output and may be padded: each key draws on its own.)
namespace {
std::vector<Tensor> mask_draw(const std::vector<Tensor>& in, const detail::MaskContext& ctx) {
  const detail::Tags& out = ctx.out(0);
  for (size_t ax = size_t(in[0].ndim()) + 1; ax < out.size(); ++ax)
    if (out[ax].ragged()) ctx.no_rule("a draw padded along an axis other than its first");
  return ctx.rebind(in);
}
}  // namespace

std::vector<Tensor> RandomSplit::mask(const std::vector<Tensor>& in,
                                      const detail::MaskContext& ctx) const {
  return mask_draw(in, ctx);
}
std::vector<Tensor> RandomFoldIn::mask(const std::vector<Tensor>& in,
                                       const detail::MaskContext& ctx) const {
  return ctx.rebind(in);  // elementwise
}
std::vector<Tensor> RandomUniform::mask(const std::vector<Tensor>& in,
                                        const detail::MaskContext& ctx) const {
  return mask_draw(in, ctx);
}
std::vector<Tensor> RandomInt::mask(const std::vector<Tensor>& in,
                                    const detail::MaskContext& ctx) const {
  for (int k = 0; k < int(ctx.lengths().size()); ++k) {
    const auto& probe = static_cast<const RandomInt&>(ctx.probe(k));
    if (probe.lo() != lo_ || probe.hi() != hi_) ctx.no_rule("its bounds are an extent");
  }
  return mask_draw(in, ctx);
}
std::vector<Tensor> RandomDraw::mask(const std::vector<Tensor>& in,
                                     const detail::MaskContext& ctx) const {
  return mask_draw(in, ctx);
}

}  // namespace lanes::prim
