#include "primitives/structure.h"

#include <charconv>

#include "kernels/structure.h"
#include "lanes/ops.h"
#include "primitives/util.h"
#include "transforms/batching.h"
#include "transforms/masking.h"

namespace lanes::prim {

namespace {

// A zero tangent made concrete (a stride-0 view of one zero), for rules that mix tangents.
Tensor zeros_view(const Shape& shape, DType dtype) { return broadcast_to(zeros({}, dtype), shape); }

Shape negated(const Shape& s) {
  Shape out(s.size());
  for (size_t i = 0; i < s.size(); ++i) out[i] = -s[i];
  return out;
}

}  // namespace

// ---- concatenate ------------------------------------------------------------------------------

std::string Concatenate::params() const { return "dimension=" + std::to_string(axis_); }

std::vector<TensorType> Concatenate::infer(const std::vector<TensorType>& in) const {
  check(!in.empty(), "concatenate: needs at least one operand");
  const Shape& first = in[0].shape;
  check(axis_ >= 0 && axis_ < int64_t(first.size()), "concatenate: axis ", axis_,
        " is out of range for operand 0 of shape ", fmt(first));
  Shape out = first;
  for (size_t k = 1; k < in.size(); ++k) {
    const Shape& s = in[k].shape;
    check(in[k].dtype == in[0].dtype, "concatenate: operand ", k, " has dtype ",
          dtype_name(in[k].dtype), " but operand 0 has ", dtype_name(in[0].dtype));
    check(s.size() == first.size(), "concatenate: operand ", k, " of shape ", fmt(s), " has rank ",
          s.size(), " but operand 0 of shape ", fmt(first), " has rank ", first.size());
    for (size_t d = 0; d < s.size(); ++d)
      check(int64_t(d) == axis_ || s[d] == first[d], "concatenate: operand ", k, " of shape ",
            fmt(s), " does not match operand 0 of shape ", fmt(first), " outside axis ", axis_);
    check(!__builtin_add_overflow(out[axis_], s[axis_], &out[axis_]), "concatenate: the sizes ",
          "along axis ", axis_, " overflow int64 at operand ", k, " of shape ", fmt(s));
  }
  return single(std::move(out), in[0].dtype);
}

std::vector<Tensor> Concatenate::eval(const std::vector<Tensor>& in) const {
  Shape out = in[0].shape();
  for (size_t k = 1; k < in.size(); ++k) out[axis_] += in[k].shape()[axis_];
  return {kernels::concatenate(in, axis_, out)};
}

std::vector<Tensor> Concatenate::jvp(const std::vector<Tensor>& x, const std::vector<Tensor>& t,
                                     const std::vector<Tensor>&) const {
  std::vector<Tensor> parts;
  bool any = false;
  for (size_t k = 0; k < x.size(); ++k) {
    any |= t[k].defined();
    parts.push_back(t[k].defined() ? t[k] : zeros_view(x[k].shape(), x[k].dtype()));
  }
  if (!any) return {Tensor()};
  return {concatenate(parts, axis_)};
}

// Each operand's cotangent is its slab of the output's.
std::vector<Tensor> Concatenate::vjp(const std::vector<Tensor>& x, const std::vector<Tensor>& ct,
                                     const std::vector<Tensor>&) const {
  std::vector<Tensor> out(x.size());
  if (!ct[0].defined()) return out;
  int64_t pos = 0;
  for (size_t k = 0; k < x.size(); ++k) {
    const int64_t n = x[k].shape()[axis_];
    out[k] = slice_axis(ct[0], axis_, pos, pos + n);
    pos += n;
  }
  return out;
}

// ---- pad --------------------------------------------------------------------------------------

// The value in its shortest round-trip form: params() keys the vmap cache, so two pads whose
// values differ past a printed 6 digits must not look alike (and a string stream costs ~1 us).
std::string Pad::params() const {
  char value[32];
  const auto end = std::to_chars(value, value + sizeof value, value_).ptr;
  return "low=" + list_str(low_) + ", high=" + list_str(high_) +
         ", value=" + std::string(value, end);
}

std::vector<TensorType> Pad::infer(const std::vector<TensorType>& in) const {
  check_arity(in, 1, "pad");
  const Shape& s = in[0].shape;
  check(low_.size() == s.size() && high_.size() == s.size(), "pad: low ", fmt(low_), " and high ",
        fmt(high_), " must each have one entry per dim of shape ", fmt(s));
  Shape out(s.size());
  for (size_t d = 0; d < s.size(); ++d) {
    check(!__builtin_add_overflow(low_[d], s[d], &out[d]) &&
              !__builtin_add_overflow(out[d], high_[d], &out[d]),
          "pad: dim ", d, " of shape ", fmt(s), " padded by low ", low_[d], " and high ", high_[d],
          " overflows int64");
    check(out[d] >= 0, "pad: dim ", d, " of shape ", fmt(s), " padded by low ", low_[d],
          " and high ", high_[d], " would have negative size ", out[d]);
  }
  return single(std::move(out), in[0].dtype);
}

std::vector<Tensor> Pad::eval(const std::vector<Tensor>& in) const {
  const Shape out = infer({{in[0].shape(), in[0].dtype()}})[0].shape;
  return {kernels::pad(in[0], low_, high_, value_, out)};
}

std::vector<Tensor> Pad::jvp(const std::vector<Tensor>&, const std::vector<Tensor>& t,
                             const std::vector<Tensor>&) const {
  return {pad(t[0], low_, high_, 0.0)};
}

// The transpose crops what was padded and zero-pads what was cropped: pad by the negation.
std::vector<Tensor> Pad::vjp(const std::vector<Tensor>&, const std::vector<Tensor>& ct,
                             const std::vector<Tensor>&) const {
  return {pad(ct[0], negated(low_), negated(high_), 0.0)};
}

// ---- iota -------------------------------------------------------------------------------------

std::string Iota::params() const {
  return std::string("dtype=") + dtype_name(dtype_) + ", shape=" + list_str(shape_) +
         ", dimension=" + std::to_string(dimension_);
}

std::vector<TensorType> Iota::infer(const std::vector<TensorType>& in) const {
  check_arity(in, 0, "iota");
  for (int64_t d : shape_) check(d >= 0, "iota: negative dimension in shape ", fmt(shape_));
  check(dimension_ >= 0 && dimension_ < int64_t(shape_.size()), "iota: dimension ", dimension_,
        " is out of range for shape ", fmt(shape_));
  return {{shape_, dtype_}};
}

std::vector<Tensor> Iota::eval(const std::vector<Tensor>&) const {
  return {kernels::iota(shape_, dimension_, dtype_)};
}

// ---- batching rules
// ------------------------------------------------------------------------------

// Every operand with the batch first (unmapped ones as stride-0 views: the kernel copies them into
// the output once, as it copies every operand), joined along the shifted axis.
std::vector<Batched> Concatenate::batch(const std::vector<Batched>& in, int64_t size) const {
  std::vector<Tensor> xs;
  for (const Batched& x : in) xs.push_back(batching::batch_at_front(x, size));
  return {{bind1(std::make_shared<const Concatenate>(axis_ + 1), xs), 0}};
}

// The batch dim is not padded.
std::vector<Batched> Pad::batch(const std::vector<Batched>& in, int64_t) const {
  const int64_t d = in[0].dim;
  Shape low = low_, high = high_;
  low.insert(low.begin() + d, 0);
  high.insert(high.begin() + d, 0);
  return {{bind1(std::make_shared<const Pad>(low, high, value_), {in[0].value}), d}};
}

// Masking (Pad): joining or padding along a padded axis would put the padding in the middle.
std::vector<Tensor> Concatenate::mask(const std::vector<Tensor>& in,
                                      const detail::MaskContext& ctx) const {
  for (size_t i = 0; i < in.size(); ++i)
    if (ctx.in(i)[size_t(axis_)].ragged()) ctx.no_rule("it joins along a padded axis");
  return ctx.rebind(in);
}
std::vector<Tensor> Pad::mask(const std::vector<Tensor>& in, const detail::MaskContext& ctx) const {
  for (int k = 0; k < int(ctx.lengths().size()); ++k)
    if (static_cast<const Pad&>(ctx.probe(k)).value() != value_)
      ctx.no_rule("its fill value is an extent");
  for (size_t i = 0; i < low_.size(); ++i)
    if (ctx.in(0)[i].ragged() && (low_[i] != 0 || high_[i] != 0))
      ctx.no_rule("it pads a padded axis");
  return ctx.rebind(in);
}

}  // namespace lanes::prim
