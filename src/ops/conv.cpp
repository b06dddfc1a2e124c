// conv2d and conv_transpose2d over the conv primitives: one example (C, H, W) gets a batch dim of
// 1 and loses it again; float operands of different widths are promoted.
#include "primitives/conv.h"
#include "ops/internal.h"

namespace lanes {

namespace {

std::array<int64_t, 2> pair(const char* op, const std::vector<int64_t>& v, const char* what) {
  check(v.size() == 2, op, ": ", what, " needs 2 values (height, width), got ", fmt(v));
  return {v[0], v[1]};
}

std::string operands(const Tensor& x, const Tensor& w) {
  return " (input shape " + shape_str(x.shape()) + ", weight shape " + shape_str(w.shape()) + ")";
}

// Checks what the primitives cannot see (the example rank, the dtypes before promotion).
void check_inputs(const char* op, const Tensor& x, const Tensor& w, const char* rank4,
                  const char* rank3) {
  check(x.defined() && w.defined(), op, ": undefined input or weight");
  check(x.ndim() == 3 || x.ndim() == 4, op, ": input must have rank 4 ", rank4, " or 3 ", rank3,
        operands(x, w));
  check(is_floating(x.dtype()) && is_floating(w.dtype()), op,
        ": only float32 and float64 are supported, got input ", dtype_name(x.dtype()),
        " and weight ", dtype_name(w.dtype()), operands(x, w));
}

// Binds Prim to x (one example gets a batch dim of 1) and w, promoted to one float type.
template <class Prim, class... Params>
Tensor apply_conv(const Tensor& x, const Tensor& w, Params&&... params) {
  const DType t = promote_types(x.dtype(), w.dtype());
  const bool single = x.ndim() == 3;
  const Tensor y = ops::apply<Prim>({cast(single ? expand_dims(x, 0) : x, t), cast(w, t)},
                                    std::forward<Params>(params)...);
  return single ? squeeze(y, 0) : y;
}

}  // namespace

Tensor conv2d(const Tensor& x, const Tensor& weight, const Conv2dOptions& options) {
  check_inputs("conv2d", x, weight, "(N, C, H, W)", "(C, H, W)");
  kernels::ConvParams p;
  p.stride = pair("conv2d", options.stride, "stride");
  p.padding = pair("conv2d", options.padding, "padding");
  p.dilation = pair("conv2d", options.dilation, "dilation");
  p.groups = options.groups;
  return apply_conv<prim::Conv>(x, weight, p);
}

// The gradient of the conv2d with these params whose input has the output's size: the
// primitive ConvTranspose. The output size comes from output_padding, which (as in PyTorch) must
// be below the stride or the dilation so that it only adds rows no window of the input reached.
Tensor conv_transpose2d(const Tensor& x, const Tensor& weight,
                        const ConvTranspose2dOptions& options) {
  const char* op = "conv_transpose2d";
  check_inputs(op, x, weight, "(N, C_in, H, W)", "(C_in, H, W)");
  check(weight.ndim() == 4, op, ": weight must have rank 4 (C_in, C_out / groups, kH, kW)",
        operands(x, weight));
  kernels::ConvParams p;
  p.stride = pair(op, options.stride, "stride");
  p.padding = pair(op, options.padding, "padding");
  p.dilation = pair(op, options.dilation, "dilation");
  p.groups = options.groups;
  const std::array<int64_t, 2> extra = pair(op, options.output_padding, "output_padding");
  std::array<int64_t, 2> size{};
  for (int i = 0; i < 2; ++i) {
    const int64_t s = p.stride[i], d = p.dilation[i], in = x.shape(x.ndim() - 2 + i);
    check(extra[i] >= 0 && (extra[i] < s || extra[i] < d), op,
          ": output_padding must be non-negative and smaller than the stride or the dilation, "
          "got output_padding ",
          fmt(options.output_padding), ", stride ", fmt(options.stride), ", dilation ",
          fmt(options.dilation));
    size[i] = (in - 1) * s - 2 * p.padding[i] + d * (weight.shape(2 + i) - 1) + extra[i] + 1;
    check(size[i] > 0 || s <= 0 || d <= 0 || p.padding[i] < 0, op, ": the output ",
          i == 0 ? "height" : "width", " would be ", size[i], ", not positive",
          operands(x, weight));
  }
  return apply_conv<prim::ConvTranspose>(x, weight, p, size);
}

}  // namespace lanes
