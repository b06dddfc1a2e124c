#include "primitives/conv.h"

#include <memory>

#include "lanes/autodiff.h"
#include "lanes/ops.h"
#include "primitives/util.h"
#include "transforms/batching.h"

namespace lanes::prim {

namespace {

using Pair = std::array<int64_t, 2>;

std::string pair_str(const Pair& v) { return list_str({v[0], v[1]}); }

// " (input shape (1, 2, 5, 5), weight shape (4, 2, 3, 3))": every message names both operands.
std::string operands(const Shape& x, const Shape& w, const char* first = "input",
                     const char* second = "weight") {
  return std::string(" (") + first + " shape " + shape_str(x) + ", " + second + " shape " +
         shape_str(w) + ")";
}

void check_params(const char* op, const kernels::ConvParams& p) {
  for (int i = 0; i < 2; ++i) {
    check(p.stride[i] > 0, op, ": stride must be positive, got ", pair_str(p.stride));
    check(p.dilation[i] > 0, op, ": dilation must be positive, got ", pair_str(p.dilation));
    check(p.padding[i] >= 0, op, ": padding must be non-negative, got ", pair_str(p.padding));
  }
  check(p.groups > 0, op, ": groups must be positive, got ", p.groups);
}

// Both operands rank 4, of one float dtype; the params valid.
void check_operands(const char* op, const std::vector<TensorType>& in, const char* rank0,
                    const char* rank1, const std::string& where, const kernels::ConvParams& p) {
  check_arity(in, 2, op);
  check(in[0].shape.size() == 4, op, ": input must have rank 4 ", rank0, where);
  check(in[1].shape.size() == 4, op, ": ", rank1, where);
  check(in[0].dtype == in[1].dtype, op, ": operands must have one dtype, got ",
        dtype_name(in[0].dtype), " and ", dtype_name(in[1].dtype), where);
  check(is_floating(in[0].dtype), op, ": only float32 and float64 are supported, got ",
        dtype_name(in[0].dtype), where);
  check_params(op, p);
}

// The dilated kernel extent along spatial dim i.
int64_t span(const kernels::ConvParams& p, int i, int64_t k) { return p.dilation[i] * (k - 1) + 1; }

// Checks that every window of `out` positions along spatial dim i fits a `what` of size `in`
// (`out` is at most conv2d's output size for it).
void check_fits(const char* op, const char* what, const kernels::ConvParams& p, int i, int64_t in,
                int64_t k, int64_t out, const std::string& where) {
  check(k >= 1, op, ": the kernel must have positive size", where);
  const int64_t need = (out - 1) * p.stride[i] + span(p, i, k) - 2 * p.padding[i];
  check(in >= need && in >= 0, op, ": ", what, " ", i == 0 ? "height " : "width ", in,
        " is too small for ", out, " positions with this kernel, stride, padding and dilation (",
        need, " needed)", where);
}

Tensor conv_with(const kernels::ConvParams& p, const Tensor& x, const Tensor& w) {
  return bind1(std::make_shared<const Conv>(p), {x, w});
}
Tensor transpose_with(const kernels::ConvParams& p, Pair size, const Tensor& ct, const Tensor& w) {
  return bind1(std::make_shared<const ConvTranspose>(p, size), {ct, w});
}
Tensor weight_grad_with(const kernels::ConvParams& p, Pair kernel, const Tensor& x,
                        const Tensor& ct) {
  // No output position (the cotangent of an empty image, see conv_cut): the gradient is zero,
  // and x may be smaller than the kernel, which conv_weight_grad rejects.
  if (ct.shape(2) == 0 || ct.shape(3) == 0)
    return zeros({ct.shape(1), x.shape(1) / p.groups, kernel[0], kernel[1]}, x.dtype());
  return bind1(std::make_shared<const ConvWeightGrad>(p, kernel), {x, ct});
}

Pair spatial(const Tensor& t) { return {t.shape(2), t.shape(3)}; }

// conv(x, w) cut to the first (H', W') positions: Conv's output may be larger than a transpose's
// cotangent (ConvTranspose with output padding).
Tensor conv_cut(const kernels::ConvParams& p, const Tensor& x, const Tensor& w, Pair size) {
  // An empty image (conv_transpose2d's input of height or width 0, whose outputs are all
  // padding): x may be smaller than the kernel, which conv2d rejects, and the result is empty.
  if (size[0] == 0 || size[1] == 0)
    return zeros({x.shape(0), w.shape(0), size[0], size[1]}, x.dtype());
  const Tensor y = conv_with(p, x, w);
  if (spatial(y) == size) return y;
  return slice(y, {0, 0, 0, 0}, {y.shape(0), y.shape(1), size[0], size[1]});
}

Tensor add_defined(const Tensor& a, const Tensor& b) {
  return a.defined() ? (b.defined() ? add(a, b) : a) : b;
}

// ---- batching helpers: a batched (B, N, C, H, W) value folded into a 4-d operand --------------

// Dim i of one entry's (N, C, H, W) operand, whether v is mapped or not; no op is bound.
int64_t example_dim(const Batched& v, int64_t i) {
  return v.value.shape(v.mapped() && v.dim <= i ? i + 1 : i);
}

// (B * N, C, H, W): the examples of every batch entry one after another.
Tensor into_examples(const Batched& v) {
  const Tensor t = batching::move_batch_dim(v, 0);
  return reshape(t, {t.shape(0) * t.shape(1), t.shape(2), t.shape(3), t.shape(4)});
}

// Undoes into_examples on a result y (B * N, ...): (B, N, ...). The sizes are passed, never
// divided out of y's, which an empty batch (B = 0) would make a division by zero.
Batched from_examples(const Tensor& y, int64_t b, int64_t n) {
  return {reshape(y, {b, n, y.shape(1), y.shape(2), y.shape(3)}), 0};
}

// An empty batch (B = 0) has no weights, yet its result has a shape: an unmapped zero weight of
// the per-example shape gives it, since every entry of an empty batch is empty. The rules for
// both operands mapped fold B into the groups, and 0 groups is no convolution.
Batched stand_in(const Batched& v) {
  const Tensor t = batching::move_batch_dim(v, 0);
  const Shape example(t.shape().begin() + 1, t.shape().end());
  return {broadcast_to(scalar(0.0, t.dtype()), example), kNotMapped};
}

// (N, B * C, H, W): batch entry b's channels form the block b (with groups B * g, entry b's
// group grp is group b * g + grp). A single example (N = 1) needs no transpose.
Tensor into_groups(const Batched& v) {
  Tensor t = batching::move_batch_dim(v, 0);
  const Shape s = t.shape();
  if (s[1] != 1) t = moveaxis(t, 0, 1);
  return reshape(t, {s[1], s[0] * s[2], s[3], s[4]});
}

// (N, g * B * Cg, H, W): within each of the g groups, the batch entries' channels side by side,
// so one group of a g-group conv sees every entry's channels of that group.
Tensor within_groups(const Batched& v, int64_t g) {
  const Tensor t = batching::move_batch_dim(v, 0);
  const Shape s = t.shape();
  const Tensor u = transpose(reshape(t, {s[0], s[1], g, s[2] / g, s[3], s[4]}), {1, 2, 0, 3, 4, 5});
  return reshape(u, {s[1], s[2] * s[0], s[3], s[4]});
}

// Undoes within_groups on an axis of size g * B * c at `axis` of y: -> B at `axis`, then g * c.
Batched split_within_groups(const Tensor& y, int64_t axis, int64_t g, int64_t b, int64_t c) {
  Shape s = y.shape();
  Shape split(s.begin(), s.begin() + axis);
  for (int64_t d : {g, b, c}) split.push_back(d);
  split.insert(split.end(), s.begin() + axis + 1, s.end());
  std::vector<int64_t> perm(split.size());
  for (size_t i = 0; i < perm.size(); ++i) perm[i] = int64_t(i);
  std::swap(perm[axis], perm[axis + 1]);  // (g, B) -> (B, g)
  Shape merged = s;
  merged[axis] = g * c;
  merged.insert(merged.begin() + axis, b);
  return {reshape(transpose(reshape(y, split), perm), merged), axis};
}

// (B, N, C, ...) results of a conv whose groups were multiplied by B come out as (N, B * C, ...).
Batched split_groups(const Tensor& y, int64_t axis, int64_t b, int64_t c) {
  Shape s = y.shape();
  s[axis] = c;
  s.insert(s.begin() + axis, b);
  return {reshape(y, s), axis};
}

kernels::ConvParams times_groups(kernels::ConvParams p, int64_t b) {
  p.groups *= b;
  return p;
}

}  // namespace

// ---- Conv ------------------------------------------------------------------------------------

std::string Conv::params() const {
  return "stride=" + pair_str(p_.stride) + ", padding=" + pair_str(p_.padding) +
         ", dilation=" + pair_str(p_.dilation) + ", groups=" + std::to_string(p_.groups);
}

std::vector<TensorType> Conv::infer(const std::vector<TensorType>& in) const {
  check_arity(in, 2, "conv2d");
  const Shape &xs = in[0].shape, &ws = in[1].shape;
  const std::string where = operands(xs, ws);
  check_operands("conv2d", in, "(N, C, H, W)", "weight must have rank 4 (O, C / groups, kH, kW)",
                 where, p_);
  const int64_t g = p_.groups, c = xs[1], o = ws[0];
  check(c % g == 0, "conv2d: groups = ", g, " does not divide the ", c, " input channels", where);
  check(o % g == 0, "conv2d: groups = ", g, " does not divide the ", o, " output channels", where);
  check(ws[1] * g == c, "conv2d: channel mismatch: input has ", c, " channels but weight has ",
        ws[1], " per group x ", g, " groups", where);
  Shape out{xs[0], o, 0, 0};
  for (int i = 0; i < 2; ++i) {
    const int64_t k = ws[2 + i], n = xs[2 + i];
    check(k >= 1, "conv2d: the kernel must have positive size", where);
    check(span(p_, i, k) <= n + 2 * p_.padding[i], "conv2d: kernel ", i == 0 ? "height" : "width",
          " ", span(p_, i, k), " (dilated) is bigger than the padded input ", n + 2 * p_.padding[i],
          where);
    out[2 + i] = kernels::conv_out_size(n, k, p_.stride[i], p_.padding[i], p_.dilation[i]);
  }
  return {{out, in[0].dtype}};
}

namespace {
/// A multiply-add per weight element per example and output position of the convolution (ct is
/// its (N, O, H', W') output): the same for the conv and its two transposes.
double conv_flops(const Shape& ct, const Shape& weight) {
  return 2 * double(ct[0]) * double(ct[2]) * double(ct[3]) * double(shape_numel(weight));
}
}  // namespace

double Conv::flops(const std::vector<TensorType>& in, const std::vector<TensorType>& out) const {
  return conv_flops(out[0].shape, in[1].shape);
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
  if (b == 0 && in[0].mapped() && in[1].mapped()) return batch({in[0], stand_in(in[1])}, b);
  if (!in[1].mapped()) {
    const Tensor y = conv_with(p_, into_examples(in[0]), in[1].value);
    return {from_examples(y, b, example_dim(in[0], 0))};
  }
  if (!in[0].mapped()) {  // weights of group grp for every example next to each other
    const Tensor w = batching::move_batch_dim(in[1], 0);  // (B, O, C / g, kH, kW)
    const int64_t o = w.shape(1), og = o / g, cg = w.shape(2), kh = w.shape(3), kw = w.shape(4);
    const Tensor wg = transpose(reshape(w, {b, g, og, cg, kh, kw}), {1, 0, 2, 3, 4, 5});
    const Tensor y = conv_with(p_, in[0].value, reshape(wg, {g * b * og, cg, kh, kw}));
    return {split_within_groups(y, 1, g, b, og)};
  }
  const Tensor y = conv_with(times_groups(p_, b), into_groups(in[0]), into_examples(in[1]));
  return {split_groups(y, 1, b, example_dim(in[1], 0))};
}

// Conv is linear in each operand.
std::vector<Tensor> Conv::jvp(const std::vector<Tensor>& x, const std::vector<Tensor>& t,
                              const std::vector<Tensor>&) const {
  return {add_defined(t[0].defined() ? conv_with(p_, t[0], x[1]) : Tensor(),
                      t[1].defined() ? conv_with(p_, x[0], t[1]) : Tensor())};
}

std::vector<Tensor> Conv::vjp(const std::vector<Tensor>& x, const std::vector<Tensor>& ct,
                              const std::vector<Tensor>&) const {
  if (!ct[0].defined()) return {Tensor(), Tensor()};
  return {transpose_with(p_, spatial(x[0]), ct[0], x[1]),
          weight_grad_with(p_, spatial(x[1]), x[0], ct[0])};
}

// ---- ConvTranspose ---------------------------------------------------------------------------

std::string ConvTranspose::params() const {
  return Conv(p_).params() + ", size=" + pair_str(size_);
}

std::vector<TensorType> ConvTranspose::infer(const std::vector<TensorType>& in) const {
  const char* op = "conv_transpose2d";
  check_arity(in, 2, op);
  const Shape &ys = in[0].shape, &ws = in[1].shape;
  const std::string where = operands(ys, ws);
  check_operands(op, in, "(N, C_in, H, W)",
                 "weight must have rank 4 (C_in, C_out / groups, kH, kW)", where, p_);
  const int64_t g = p_.groups, o = ys[1];
  check(o % g == 0, op, ": groups = ", g, " does not divide the ", o, " input channels", where);
  check(ws[0] == o, op, ": channel mismatch: input has ", o, " channels but weight has ", ws[0],
        where);
  for (int i = 0; i < 2; ++i)
    check_fits(op, "output", p_, i, size_[i], ws[2 + i], ys[2 + i], where);
  return {{{ys[0], ws[1] * g, size_[0], size_[1]}, in[0].dtype}};
}

double ConvTranspose::flops(const std::vector<TensorType>& in,
                            const std::vector<TensorType>&) const {
  return conv_flops(in[0].shape, in[1].shape);
}

std::vector<Tensor> ConvTranspose::eval(const std::vector<Tensor>& in) const {
  return {kernels::conv_transpose2d(in[0], in[1], p_, size_)};
}

// Like Conv::batch: a mapped input folds into N, a mapped weight into the output channels of
// each group, both into the groups.
std::vector<Batched> ConvTranspose::batch(const std::vector<Batched>& in, int64_t size) const {
  const int64_t b = size, g = p_.groups;
  if (b == 0 && in[0].mapped() && in[1].mapped()) return batch({in[0], stand_in(in[1])}, b);
  if (!in[1].mapped()) {
    const Tensor y = transpose_with(p_, size_, into_examples(in[0]), in[1].value);
    return {from_examples(y, b, example_dim(in[0], 0))};
  }
  const int64_t cg = example_dim(in[1], 1);  // w (O, Cg, kH, kW) per entry
  if (!in[0].mapped()) {  // w (B, O, Cg, kH, kW) -> (O, B * Cg, kH, kW): output channels (b, c)
    const Tensor w = batching::move_batch_dim(in[1], 0);
    const Tensor wt = reshape(moveaxis(w, 0, 1), {w.shape(1), b * cg, w.shape(3), w.shape(4)});
    return {split_within_groups(transpose_with(p_, size_, in[0].value, wt), 1, g, b, cg)};
  }
  const Tensor y =
      transpose_with(times_groups(p_, b), size_, into_groups(in[0]), into_examples(in[1]));
  return {split_groups(y, 1, b, g * cg)};
}

std::vector<Tensor> ConvTranspose::jvp(const std::vector<Tensor>& x, const std::vector<Tensor>& t,
                                       const std::vector<Tensor>&) const {
  return {add_defined(t[0].defined() ? transpose_with(p_, size_, t[0], x[1]) : Tensor(),
                      t[1].defined() ? transpose_with(p_, size_, x[0], t[1]) : Tensor())};
}

// With B(x, w, ct) = <ct, conv(x, w)> and this = d/dx B: the input's cotangent is conv (d/dct B),
// the weight's is ConvWeightGrad (d/dw B), both at x = the cotangent here.
std::vector<Tensor> ConvTranspose::vjp(const std::vector<Tensor>& x, const std::vector<Tensor>& ct,
                                       const std::vector<Tensor>&) const {
  if (!ct[0].defined()) return {Tensor(), Tensor()};
  return {conv_cut(p_, ct[0], x[1], spatial(x[0])),
          weight_grad_with(p_, spatial(x[1]), ct[0], x[0])};
}

// ---- ConvWeightGrad --------------------------------------------------------------------------

std::string ConvWeightGrad::params() const {
  return Conv(p_).params() + ", kernel=" + pair_str(kernel_);
}

std::vector<TensorType> ConvWeightGrad::infer(const std::vector<TensorType>& in) const {
  const char* op = "conv_weight_grad";
  check_arity(in, 2, op);
  const Shape &xs = in[0].shape, &cs = in[1].shape;
  const std::string where = operands(xs, cs, "input", "cotangent");
  check_operands(op, in, "(N, C, H, W)", "cotangent must have rank 4 (N, O, H', W')", where, p_);
  const int64_t g = p_.groups;
  check(xs[0] == cs[0], op, ": the input has ", xs[0], " examples, the cotangent ", cs[0], where);
  check(xs[1] % g == 0 && cs[1] % g == 0, op, ": groups = ", g, " does not divide the channels",
        where);
  for (int i = 0; i < 2; ++i) {
    check(span(p_, i, kernel_[i]) <= xs[2 + i] + 2 * p_.padding[i], op,
          ": the kernel is bigger than the padded input", where);
    check_fits(op, "input", p_, i, xs[2 + i], kernel_[i], cs[2 + i], where);
  }
  return {{{cs[1], xs[1] / g, kernel_[0], kernel_[1]}, in[0].dtype}};
}

double ConvWeightGrad::flops(const std::vector<TensorType>& in,
                             const std::vector<TensorType>& out) const {
  return conv_flops(in[1].shape, out[0].shape);
}

std::vector<Tensor> ConvWeightGrad::eval(const std::vector<Tensor>& in) const {
  return {kernels::conv_weight_grad(in[0], in[1], p_, kernel_)};
}

// Both mapped (per-example weight gradients): batch entries become groups, one GEMM each. One
// mapped: its batch goes next to the channels within each group, so every group's GEMM yields
// the gradients of all entries at once.
std::vector<Batched> ConvWeightGrad::batch(const std::vector<Batched>& in, int64_t size) const {
  const int64_t b = size, g = p_.groups;
  if (b == 0 && in[0].mapped() && in[1].mapped()) return batch({in[0], stand_in(in[1])}, b);
  // Per entry: x (N, C, H, W), ct (N, O, H', W'), dw (O, C / g, kH, kW).
  const int64_t c = example_dim(in[0], 1), o = example_dim(in[1], 1);
  if (in[0].mapped() && in[1].mapped()) {
    const Tensor dw =
        weight_grad_with(times_groups(p_, b), kernel_, into_groups(in[0]), into_groups(in[1]));
    return {split_groups(dw, 0, b, o)};
  }
  if (in[0].mapped()) {  // dw (O, B * Cg, kH, kW): columns (b, c)
    const Tensor dw = weight_grad_with(p_, kernel_, within_groups(in[0], g), in[1].value);
    return {split_groups(dw, 1, b, c / g)};
  }
  const Tensor dw = weight_grad_with(p_, kernel_, in[0].value, within_groups(in[1], g));
  return {split_within_groups(dw, 0, g, b, o / g)};  // rows (grp, b, o)
}

std::vector<Tensor> ConvWeightGrad::jvp(const std::vector<Tensor>& x, const std::vector<Tensor>& t,
                                        const std::vector<Tensor>&) const {
  return {add_defined(t[0].defined() ? weight_grad_with(p_, kernel_, t[0], x[1]) : Tensor(),
                      t[1].defined() ? weight_grad_with(p_, kernel_, x[0], t[1]) : Tensor())};
}

// This = d/dw B: the input's cotangent is ConvTranspose (d/dx B), the cotangent's is conv
// (d/dct B), both at w = the cotangent here.
std::vector<Tensor> ConvWeightGrad::vjp(const std::vector<Tensor>& x, const std::vector<Tensor>& ct,
                                        const std::vector<Tensor>&) const {
  if (!ct[0].defined()) return {Tensor(), Tensor()};
  return {transpose_with(p_, spatial(x[0]), x[1], ct[0]), conv_cut(p_, x[0], ct[0], spatial(x[1]))};
}

}  // namespace lanes::prim
