#include "primitives/shape.h"

#include <algorithm>

#include "lanes/ops.h"
#include "primitives/util.h"
#include "transforms/batching.h"
#include "transforms/masking.h"

namespace lanes::prim {

// ---- reshape ----------------------------------------------------------------------------------

std::string Reshape::params() const { return "shape=" + list_str(shape_); }

std::vector<TensorType> Reshape::infer(const std::vector<TensorType>& in) const {
  check_arity(in, 1, "reshape");
  for (int64_t d : shape_) check(d >= 0, "reshape: negative dimension in ", fmt(shape_));
  check(shape_numel(shape_) == shape_numel(in[0].shape),
        "reshape: cannot reshape a tensor of shape ", fmt(in[0].shape), " (",
        shape_numel(in[0].shape), " elements) into shape ", fmt(shape_), " (", shape_numel(shape_),
        " elements)");
  return single(shape_, in[0].dtype);
}

std::vector<Tensor> Reshape::eval(const std::vector<Tensor>& in) const {
  const Tensor x = in[0].contiguous();
  return {x.view(shape_, contiguous_strides(shape_), x.offset())};
}

std::vector<Batched> Reshape::batch(const std::vector<Batched>& in, int64_t size) const {
  Shape shape = shape_;
  shape.insert(shape.begin(), size);
  return {{reshape(batching::move_batch_dim(in[0], 0), shape), 0}};
}

std::vector<Tensor> Reshape::jvp(const std::vector<Tensor>&, const std::vector<Tensor>& t,
                                 const std::vector<Tensor>&) const {
  return {reshape(t[0], shape_)};
}

std::vector<Tensor> Reshape::vjp(const std::vector<Tensor>& x, const std::vector<Tensor>& ct,
                                 const std::vector<Tensor>&) const {
  return {reshape(ct[0], x[0].shape())};
}

// ---- transpose --------------------------------------------------------------------------------

std::string Transpose::params() const { return "permutation=" + list_str(perm_); }

std::vector<TensorType> Transpose::infer(const std::vector<TensorType>& in) const {
  check_arity(in, 1, "transpose");
  const Shape& s = in[0].shape;
  std::vector<int64_t> sorted = perm_;
  std::sort(sorted.begin(), sorted.end());
  bool is_perm = sorted.size() == s.size();
  for (size_t i = 0; is_perm && i < sorted.size(); ++i) is_perm = sorted[i] == int64_t(i);
  check(is_perm, "transpose: permutation ", fmt(perm_), " is not a permutation of the ", s.size(),
        " axes of a tensor of shape ", fmt(s));
  Shape out(s.size());
  for (size_t i = 0; i < s.size(); ++i) out[i] = s[perm_[i]];
  return single(std::move(out), in[0].dtype);
}

std::vector<Tensor> Transpose::eval(const std::vector<Tensor>& in) const {
  const Tensor& x = in[0];
  Shape shape(perm_.size());
  Strides strides(perm_.size());
  for (size_t i = 0; i < perm_.size(); ++i) {
    shape[i] = x.shape()[perm_[i]];
    strides[i] = x.strides()[perm_[i]];
  }
  return {x.view(std::move(shape), std::move(strides), x.offset())};
}

// The batch dim stays first; the other dims are permuted as before, shifted past it.
std::vector<Batched> Transpose::batch(const std::vector<Batched>& in, int64_t) const {
  const int64_t d = in[0].dim;
  std::vector<int64_t> perm{d};
  for (int64_t p : perm_) perm.push_back(p < d ? p : p + 1);
  return {{transpose(in[0].value, perm), 0}};
}

std::vector<Tensor> Transpose::jvp(const std::vector<Tensor>&, const std::vector<Tensor>& t,
                                   const std::vector<Tensor>&) const {
  return {transpose(t[0], perm_)};
}

std::vector<Tensor> Transpose::vjp(const std::vector<Tensor>&, const std::vector<Tensor>& ct,
                                   const std::vector<Tensor>&) const {
  std::vector<int64_t> inverse(perm_.size());
  for (size_t i = 0; i < perm_.size(); ++i) inverse[perm_[i]] = static_cast<int64_t>(i);
  return {transpose(ct[0], inverse)};
}

// ---- broadcast_in_dim -------------------------------------------------------------------------

std::string BroadcastInDim::params() const {
  return "shape=" + list_str(shape_) + ", broadcast_dimensions=" + list_str(dims_);
}

std::vector<TensorType> BroadcastInDim::infer(const std::vector<TensorType>& in) const {
  check_arity(in, 1, "broadcast_in_dim");
  const Shape& s = in[0].shape;
  check(dims_.size() == s.size(), "broadcast_in_dim: operand of shape ", fmt(s), " needs ",
        s.size(), " broadcast_dimensions, got ", fmt(dims_));
  for (size_t i = 0; i < dims_.size(); ++i) {
    const int64_t d = dims_[i];
    check(d >= 0 && d < int64_t(shape_.size()) && (i == 0 || d > dims_[i - 1]),
          "broadcast_in_dim: broadcast_dimensions ", fmt(dims_),
          " must be increasing and within the rank of shape ", fmt(shape_));
    check(s[i] == 1 || s[i] == shape_[d], "broadcast_in_dim: cannot broadcast shape ", fmt(s),
          " to shape ", fmt(shape_), ": operand dim ", i, " has size ", s[i], " but target dim ", d,
          " has size ", shape_[d]);
  }
  return single(shape_, in[0].dtype);
}

std::vector<Tensor> BroadcastInDim::eval(const std::vector<Tensor>& in) const {
  const Tensor& x = in[0];
  Strides strides(shape_.size(), 0);
  for (size_t i = 0; i < dims_.size(); ++i)
    if (x.shape()[i] != 1) strides[dims_[i]] = x.strides()[i];
  return {x.view(shape_, std::move(strides), x.offset())};
}

std::vector<Batched> BroadcastInDim::batch(const std::vector<Batched>& in, int64_t size) const {
  Shape shape = shape_;
  shape.insert(shape.begin(), size);
  std::vector<int64_t> dims{0};
  for (int64_t d : dims_) dims.push_back(d + 1);
  return {{broadcast_in_dim(batching::move_batch_dim(in[0], 0), shape, dims), 0}};
}

std::vector<Tensor> BroadcastInDim::jvp(const std::vector<Tensor>&, const std::vector<Tensor>& t,
                                        const std::vector<Tensor>&) const {
  return {broadcast_in_dim(t[0], shape_, dims_)};
}

// The transpose of a broadcast sums over the dims it created or stretched.
std::vector<Tensor> BroadcastInDim::vjp(const std::vector<Tensor>& x, const std::vector<Tensor>& ct,
                                        const std::vector<Tensor>&) const {
  std::vector<int64_t> summed;
  size_t i = 0;
  for (int64_t d = 0; d < int64_t(shape_.size()); ++d) {
    const bool kept = i < dims_.size() && dims_[i] == d;
    if (!kept || (x[0].shape()[i] == 1 && shape_[d] != 1)) summed.push_back(d);
    if (kept) ++i;
  }
  return {reshape(sum(ct[0], summed), x[0].shape())};
}

// ---- slice ------------------------------------------------------------------------------------

namespace {
// Elements taken from [start, limit) every `stride`-th one.
int64_t slice_length(int64_t start, int64_t limit, int64_t stride) {
  return (limit - start + stride - 1) / stride;
}
}  // namespace

std::string Slice::params() const {
  return "start_indices=" + list_str(start_) + ", limit_indices=" + list_str(limit_) +
         ", strides=" + list_str(strides_);
}

std::vector<TensorType> Slice::infer(const std::vector<TensorType>& in) const {
  check_arity(in, 1, "slice");
  const Shape& s = in[0].shape;
  check(start_.size() == s.size() && limit_.size() == s.size() && strides_.size() == s.size(),
        "slice: start ", fmt(start_), ", limit ", fmt(limit_), " and strides ", fmt(strides_),
        " must each have one entry per dim of shape ", fmt(s));
  Shape out(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    check(0 <= start_[i] && start_[i] <= limit_[i] && limit_[i] <= s[i] && strides_[i] >= 1,
          "slice: dim ", i, " of shape ", fmt(s), " cannot be sliced from ", start_[i], " to ",
          limit_[i], " with stride ", strides_[i]);
    out[i] = slice_length(start_[i], limit_[i], strides_[i]);
  }
  return single(std::move(out), in[0].dtype);
}

std::vector<Tensor> Slice::eval(const std::vector<Tensor>& in) const {
  // (infer has checked the bounds when the node was made; a view costs no copy of the shape.)
  const Tensor& x = in[0];
  Shape shape(x.ndim());
  Strides strides(shape.size());
  int64_t offset = x.offset();
  for (size_t i = 0; i < shape.size(); ++i) {
    shape[i] = slice_length(start_[i], limit_[i], strides_[i]);
    offset += start_[i] * x.strides()[i];
    strides[i] = x.strides()[i] * strides_[i];
  }
  return {x.view(std::move(shape), std::move(strides), offset)};
}

// The batch dim is taken whole.
std::vector<Batched> Slice::batch(const std::vector<Batched>& in, int64_t size) const {
  const int64_t d = in[0].dim;
  Shape start = start_, limit = limit_, strides = strides_;
  start.insert(start.begin() + d, 0);
  limit.insert(limit.begin() + d, size);
  strides.insert(strides.begin() + d, 1);
  return {{slice(in[0].value, start, limit, strides), d}};
}

std::vector<Tensor> Slice::jvp(const std::vector<Tensor>&, const std::vector<Tensor>& t,
                               const std::vector<Tensor>&) const {
  return {slice(t[0], start_, limit_, strides_)};
}

// The transpose of a slice puts the cotangent back in place and zeros elsewhere: strided dims
// first spread out (each element followed by stride - 1 zeros), then pad to the input's size.
std::vector<Tensor> Slice::vjp(const std::vector<Tensor>& x, const std::vector<Tensor>& ct,
                               const std::vector<Tensor>&) const {
  Tensor g = ct[0];
  const Shape& in = x[0].shape();
  Shape low(in.size()), high(in.size());
  for (size_t d = 0; d < in.size(); ++d) {
    if (strides_[d] > 1 && g.shape()[d] > 0) {
      const Tensor spread = expand_dims(g, static_cast<int64_t>(d) + 1);
      Shape lo(spread.ndim(), 0), hi(spread.ndim(), 0);
      hi[d + 1] = strides_[d] - 1;
      Shape merged = g.shape();
      merged[d] *= strides_[d];
      g = reshape(pad(spread, lo, hi), merged);
    }
    low[d] = start_[d];
    high[d] = in[d] - start_[d] - g.shape()[d];  // negative crops the spread's tail
  }
  return {pad(g, low, high)};
}

// Masking (Pad). Transpose and broadcast_in_dim move whole axes, so padding stays padding.
// Reshape may regroup the other axes but must keep each padded axis whole, at the same stride;
// a slice of a padded axis keeps its offset from the end (x[1:] is each lane's x[1:n]) unless
// its extent is fixed, which needs every lane to reach it.
std::vector<Tensor> Reshape::mask(const std::vector<Tensor>& in,
                                  const detail::MaskContext& ctx) const {
  const Shape& from = in[0].shape();
  for (size_t i = 0; i < from.size(); ++i) {
    if (!ctx.in(0)[i].ragged()) continue;
    const int64_t before = shape_numel(Shape(from.begin(), from.begin() + int64_t(i)));
    bool kept = false;
    for (size_t j = 0; j < shape_.size() && !kept; ++j)
      kept = ctx.out(0)[j].symbol == ctx.in(0)[i].symbol && shape_[j] == from[i] &&
             shape_numel(Shape(shape_.begin(), shape_.begin() + int64_t(j))) == before;
    if (!kept) ctx.no_rule("it merges or splits a padded axis");
  }
  return ctx.rebind(in);
}
std::vector<Tensor> Transpose::mask(const std::vector<Tensor>& in,
                                    const detail::MaskContext& ctx) const {
  return ctx.rebind(in);
}
std::vector<Tensor> BroadcastInDim::mask(const std::vector<Tensor>& in,
                                         const detail::MaskContext& ctx) const {
  return ctx.rebind(in);
}
std::vector<Tensor> Slice::mask(const std::vector<Tensor>& in,
                                const detail::MaskContext& ctx) const {
  for (size_t i = 0; i < start_.size(); ++i) {
    const detail::AxisTag& tag = ctx.in(0)[i];
    if (!tag.ragged()) continue;
    if (strides_[i] != 1) ctx.no_rule("a strided slice of a padded axis");
    const auto& probe = static_cast<const Slice&>(ctx.probe(tag.symbol));
    if (probe.start()[i] != start_[i]) ctx.no_rule("a slice that starts from the end");
    if (!ctx.out(0)[i].ragged() && limit_[i] > ctx.min_valid(tag))
      ctx.no_rule("the slice [" + std::to_string(start_[i]) + ", " + std::to_string(limit_[i]) +
                  ") of axis " + std::to_string(i) + " reaches past a lane's length " +
                  std::to_string(ctx.min_valid(tag)));
  }
  return ctx.rebind(in);
}

}  // namespace lanes::prim
