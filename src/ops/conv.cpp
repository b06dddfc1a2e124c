// conv2d over the conv primitive: one example (C, H, W) gets a batch dim of 1 and loses it
// again; float operands of different widths are promoted.
#include "primitives/conv.h"
#include "ops/internal.h"

namespace lanes {

namespace {

std::array<int64_t, 2> pair(const std::vector<int64_t>& v, const char* what) {
  check(v.size() == 2, "conv2d: ", what, " needs 2 values (height, width), got ", shape_str(v));
  return {v[0], v[1]};
}

}  // namespace

Tensor conv2d(const Tensor& x, const Tensor& weight, const Conv2dOptions& options) {
  check(x.defined() && weight.defined(), "conv2d: undefined input or weight");
  const std::string where =
      " (input shape " + shape_str(x.shape()) + ", weight shape " + shape_str(weight.shape()) + ")";
  check(x.ndim() == 3 || x.ndim() == 4,
        "conv2d: input must have rank 4 (N, C, H, W) or 3 (C, H, W)", where);
  check(is_floating(x.dtype()) && is_floating(weight.dtype()),
        "conv2d: only float32 and float64 are supported, got input ", dtype_name(x.dtype()),
        " and weight ", dtype_name(weight.dtype()), where);
  kernels::ConvParams p;
  p.stride = pair(options.stride, "stride");
  p.padding = pair(options.padding, "padding");
  p.dilation = pair(options.dilation, "dilation");
  p.groups = options.groups;
  const DType t = promote_types(x.dtype(), weight.dtype());
  const bool single = x.ndim() == 3;
  const Tensor y =
      ops::apply<prim::Conv>({cast(single ? expand_dims(x, 0) : x, t), cast(weight, t)}, p);
  return single ? squeeze(y, 0) : y;
}

}  // namespace lanes
