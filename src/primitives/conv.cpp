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

// ---- derivatives
// ---------------------------------------------------------------------------------

namespace {

// The same convolution written with ops: patches gathered by kH * kW strided slices of the
// padded input, then one dot_general per group. Slower than the im2col kernel, but every op in
// it has derivative and batching rules, so differentiating it gives conv's vjp with respect to
// both operands for every stride, padding, dilation and group count, to any order.
Tensor conv_by_patches(const Tensor& x, const Tensor& w, const kernels::ConvParams& p) {
  const int64_t n = x.shape(0), c = x.shape(1), o = w.shape(0), kh = w.shape(2), kw = w.shape(3);
  const int64_t g = p.groups;
  const int64_t oh =
      kernels::conv_out_size(x.shape(2), kh, p.stride[0], p.padding[0], p.dilation[0]);
  const int64_t ow =
      kernels::conv_out_size(x.shape(3), kw, p.stride[1], p.padding[1], p.dilation[1]);
  const Tensor xp = pad(x, {0, 0, p.padding[0], p.padding[1]}, {0, 0, p.padding[0], p.padding[1]});
  std::vector<Tensor> taps;
  for (int64_t i = 0; i < kh; ++i)
    for (int64_t j = 0; j < kw; ++j) {
      const int64_t r = i * p.dilation[0], q = j * p.dilation[1];
      taps.push_back(slice(xp, {0, 0, r, q},
                           {n, c, r + (oh - 1) * p.stride[0] + 1, q + (ow - 1) * p.stride[1] + 1},
                           {1, 1, p.stride[0], p.stride[1]}));
    }
  const Tensor patches = reshape(stack(taps, 2), {n, g, c / g, kh * kw, oh, ow});
  const Tensor wg = reshape(w, {g, o / g, c / g, kh * kw});
  DotDims dims;
  dims.lhs_batch = {1};
  dims.rhs_batch = {0};
  dims.lhs_contracting = {2, 3};
  dims.rhs_contracting = {2, 3};
  const Tensor out = dot_general(patches, wg, dims);  // (g, n, oh, ow, o / g)
  return reshape(transpose(out, {1, 0, 4, 2, 3}), {n, o, oh, ow});
}

}  // namespace

// Conv is linear in each operand.
std::vector<Tensor> Conv::jvp(const std::vector<Tensor>& x, const std::vector<Tensor>& t,
                              const std::vector<Tensor>&) const {
  Tensor out;
  if (t[0].defined()) out = bind1(shared_from_this(), {t[0], x[1]});
  if (t[1].defined()) {
    const Tensor d = bind1(shared_from_this(), {x[0], t[1]});
    out = out.defined() ? out + d : d;
  }
  return {out};
}

std::vector<Tensor> Conv::vjp(const std::vector<Tensor>& x, const std::vector<Tensor>& ct,
                              const std::vector<Tensor>&) const {
  const kernels::ConvParams p = p_;
  auto f = [p](const Tensor& a, const Tensor& b) { return conv_by_patches(a, b, p); };
  auto [y, back] = lanes::vjp(f, x[0], x[1]);
  auto [dx, dw] = back(ct[0]);
  return {dx, dw};
}

}  // namespace lanes::prim
