#include "primitives/conv.h"

#include <memory>

#include "lanes/autodiff.h"
#include "lanes/ops.h"
#include "primitives/util.h"
#include "transforms/batching.h"

namespace lanes::prim {

namespace {

std::string pair_str(const std::array<int64_t, 2>& v) { return list_str({v[0], v[1]}); }

// " (input shape (1, 2, 5, 5), weight shape (4, 2, 3, 3))": every message names both operands.
std::string operands(const Shape& x, const Shape& w) {
  return " (input shape " + shape_str(x) + ", weight shape " + shape_str(w) + ")";
}

void check_params(const kernels::ConvParams& p) {
  for (int i = 0; i < 2; ++i) {
    check(p.stride[i] > 0, "conv2d: stride must be positive, got ", pair_str(p.stride));
    check(p.dilation[i] > 0, "conv2d: dilation must be positive, got ", pair_str(p.dilation));
    check(p.padding[i] >= 0, "conv2d: padding must be non-negative, got ", pair_str(p.padding));
  }
  check(p.groups > 0, "conv2d: groups must be positive, got ", p.groups);
}

Tensor conv_with(const kernels::ConvParams& p, const Tensor& x, const Tensor& w) {
  return bind1(std::make_shared<const Conv>(p), {x, w});
}

}  // namespace

std::string Conv::params() const {
  return "stride=" + pair_str(p_.stride) + ", padding=" + pair_str(p_.padding) +
         ", dilation=" + pair_str(p_.dilation) + ", groups=" + std::to_string(p_.groups);
}

std::vector<TensorType> Conv::infer(const std::vector<TensorType>& in) const {
  check_arity(in, 2, "conv2d");
  const Shape &xs = in[0].shape, &ws = in[1].shape;
  const std::string where = operands(xs, ws);
  check(xs.size() == 4, "conv2d: input must have rank 4 (N, C, H, W)", where);
  check(ws.size() == 4, "conv2d: weight must have rank 4 (O, C / groups, kH, kW)", where);
  check(in[0].dtype == in[1].dtype, "conv2d: operands must have one dtype, got ",
        dtype_name(in[0].dtype), " and ", dtype_name(in[1].dtype), where);
  check(is_floating(in[0].dtype), "conv2d: only float32 and float64 are supported, got ",
        dtype_name(in[0].dtype), where);
  check_params(p_);
  const int64_t g = p_.groups, c = xs[1], o = ws[0];
  check(c % g == 0, "conv2d: groups = ", g, " does not divide the ", c, " input channels", where);
  check(o % g == 0, "conv2d: groups = ", g, " does not divide the ", o, " output channels", where);
  check(ws[1] * g == c, "conv2d: channel mismatch: input has ", c, " channels but weight has ",
        ws[1], " per group x ", g, " groups", where);
  Shape out{xs[0], o, 0, 0};
  for (int i = 0; i < 2; ++i) {
    const int64_t k = ws[2 + i], n = xs[2 + i];
    check(k >= 1, "conv2d: the kernel must have positive size", where);
    const int64_t span = p_.dilation[i] * (k - 1) + 1;
    check(span <= n + 2 * p_.padding[i], "conv2d: kernel ", i == 0 ? "height" : "width", " ", span,
          " (dilated) is bigger than the padded input ", n + 2 * p_.padding[i], where);
    out[2 + i] = kernels::conv_out_size(n, k, p_.stride[i], p_.padding[i], p_.dilation[i]);
  }
  return {{out, in[0].dtype}};
}

std::vector<Tensor> Conv::eval(const std::vector<Tensor>& in) const {
  return {kernels::conv2d(in[0], in[1], p_)};
}

// A mapped input folds its batch into the convolution: into N for the input; into the output
// channels of each group for the weight; into the groups when both are mapped (example b's
// channels form groups b * groups ...). Results come back as (N, B, O, H', W') or
// (B, N, O, H', W'), reshaped, never looped.
std::vector<Batched> Conv::batch(const std::vector<Batched>& in, int64_t size) const {
  const int64_t b = size, g = p_.groups;
  const Shape xs =
      in[0].mapped() ? batching::move_batch_dim(in[0], 0).shape() : in[0].value.shape();
  if (!in[1].mapped()) {  // x (B, N, C, H, W)
    const Tensor x = batching::move_batch_dim(in[0], 0);
    const Tensor y = conv_with(p_, reshape(x, {b * xs[1], xs[2], xs[3], xs[4]}), in[1].value);
    return {{reshape(y, {b, xs[1], y.shape(1), y.shape(2), y.shape(3)}), 0}};
  }
  const Tensor w = batching::move_batch_dim(in[1], 0);  // (B, O, C / g, kH, kW)
  const int64_t o = w.shape(1), og = o / g, cg = w.shape(2), kh = w.shape(3), kw = w.shape(4);
  if (!in[0].mapped()) {  // weights of group grp for every example next to each other
    const Tensor wg = transpose(reshape(w, {b, g, og, cg, kh, kw}), {1, 0, 2, 3, 4, 5});
    const Tensor y = conv_with(p_, in[0].value, reshape(wg, {g * b * og, cg, kh, kw}));
    const int64_t n = y.shape(0), oh = y.shape(2), ow = y.shape(3);
    const Tensor yg = transpose(reshape(y, {n, g, b, og, oh, ow}), {0, 2, 1, 3, 4, 5});
    return {{reshape(yg, {n, b, o, oh, ow}), 1}};
  }
  const Tensor x = moveaxis(batching::move_batch_dim(in[0], 0), 0, 1);  // (N, B, C, H, W)
  kernels::ConvParams p = p_;
  p.groups = b * g;
  const Tensor y =
      conv_with(p, reshape(x, {xs[1], b * xs[2], xs[3], xs[4]}), reshape(w, {b * o, cg, kh, kw}));
  return {{reshape(y, {xs[1], b, o, y.shape(2), y.shape(3)}), 1}};
}

// Conv is linear in each operand.
std::vector<Tensor> Conv::jvp(const std::vector<Tensor>& x, const std::vector<Tensor>& t,
                              const std::vector<Tensor>&) const {
  Tensor out;
  if (t[0].defined()) out = conv_with(p_, t[0], x[1]);
  if (t[1].defined()) {
    const Tensor dw = conv_with(p_, x[0], t[1]);
    out = out.defined() ? add(out, dw) : dw;
  }
  return {out};
}

namespace {

// Reverses the two spatial axes of a weight (O, C, kH, kW) with a gather of constant indices.
Tensor flip_spatial(const Tensor& w) {
  Tensor out = w;
  for (int64_t axis = 2; axis < 4; ++axis) {
    const int64_t k = w.shape(axis);
    if (k > 1) out = gather(out, arange(double(k - 1), -1.0, -1.0, DType::Int64), axis);
  }
  return out;
}

// The input cotangent is a stride-1 convolution of the cotangent with the flipped weight, its
// input and output channels swapped within each group. A strided conv first spreads the
// cotangent (each element followed by stride - 1 zeros); then one pad (negative values crop)
// places it so that output h sees the cotangents of every window that read input h.
Tensor input_cotangent(const kernels::ConvParams& p, const Shape& xs, const Tensor& w,
                       const Tensor& ct) {
  const int64_t g = p.groups, o = w.shape(0), og = o / g, cg = w.shape(1);
  Tensor q = ct;
  Shape low(4, 0), high(4, 0);
  for (int i = 0; i < 2; ++i) {
    const int64_t s = p.stride[i], axis = 2 + i, oh = ct.shape(axis);
    if (s > 1) {
      const Tensor spread = expand_dims(q, axis + 1);
      Shape lo(5, 0), hi(5, 0);
      hi[axis + 1] = s - 1;
      Shape merged = q.shape();
      merged[axis] *= s;
      q = reshape(pad(spread, lo, hi), merged);
    }
    const int64_t span = p.dilation[i] * (w.shape(axis) - 1) + 1;
    low[axis] = span - 1 - p.padding[i];
    high[axis] = xs[axis] + p.padding[i] - oh * s;
  }
  q = pad(q, low, high);
  const Tensor wt = transpose(reshape(w, {g, og, cg, w.shape(2), w.shape(3)}), {0, 2, 1, 3, 4});
  kernels::ConvParams t;
  t.dilation = p.dilation;
  t.groups = g;
  return conv_with(t, q, flip_spatial(reshape(wt, {g * cg, og, w.shape(2), w.shape(3)})));
}

// The weight cotangent correlates the input with the cotangent over the examples: examples
// become channels, channels (per group) become examples, and stride and dilation trade places.
// The result can be larger than the kernel (rows no window reached); those are cut off.
Tensor weight_cotangent(const kernels::ConvParams& p, const Tensor& x, const Shape& ws,
                        const Tensor& ct) {
  const int64_t g = p.groups, n = x.shape(0), cg = ws[1], og = ws[0] / g;
  const Tensor xt =
      reshape(transpose(reshape(x, {n, g, cg, x.shape(2), x.shape(3)}), {2, 1, 0, 3, 4}),
              {cg, g * n, x.shape(2), x.shape(3)});
  const Tensor ctt =
      reshape(transpose(reshape(ct, {n, g, og, ct.shape(2), ct.shape(3)}), {1, 2, 0, 3, 4}),
              {g * og, n, ct.shape(2), ct.shape(3)});
  kernels::ConvParams t;
  t.stride = p.dilation;
  t.padding = p.padding;
  t.dilation = p.stride;
  t.groups = g;
  Tensor dw = conv_with(t, xt, ctt);  // (C / g, O, >= kH, >= kW)
  if (dw.shape(2) != ws[2] || dw.shape(3) != ws[3])
    dw = slice(dw, {0, 0, 0, 0}, {dw.shape(0), dw.shape(1), ws[2], ws[3]});
  return transpose(dw, {1, 0, 2, 3});
}

}  // namespace

std::vector<Tensor> Conv::vjp(const std::vector<Tensor>& x, const std::vector<Tensor>& ct,
                              const std::vector<Tensor>&) const {
  if (!ct[0].defined()) return {Tensor(), Tensor()};
  return {input_cotangent(p_, x[0].shape(), x[1], ct[0]),
          weight_cotangent(p_, x[0], x[1].shape(), ct[0])};
}

}  // namespace lanes::prim
