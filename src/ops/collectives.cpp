// The collective ops (lanes/collectives.h): each checks its axis is named by an enclosing vmap
// and binds a Collective primitive, which bind records into that vmap's trace.
#include "lanes/collectives.h"

#include "ir/axis_scope.h"
#include "ops/internal.h"
#include "primitives/collectives.h"

namespace lanes {

namespace {
using Kind = prim::Collective::Kind;

Tensor collective(Kind kind, const char* op, const Tensor& x, const std::string& axis) {
  check(x.defined(), op, ": x is an undefined tensor");
  const detail::AxisFrame& frame = detail::find_axis(axis, op);
  return ops::apply<prim::Collective>({x}, kind, axis, frame.size);
}
}  // namespace

Tensor psum(const Tensor& x, const std::string& axis) {
  return collective(Kind::Sum, "psum", x, axis);
}
Tensor pmean(const Tensor& x, const std::string& axis) {
  return collective(Kind::Mean, "pmean", x, axis);
}
Tensor pmax(const Tensor& x, const std::string& axis) {
  return collective(Kind::Max, "pmax", x, axis);
}
Tensor pmin(const Tensor& x, const std::string& axis) {
  return collective(Kind::Min, "pmin", x, axis);
}

Tensor all_gather(const Tensor& x, const std::string& axis, int64_t gather_axis) {
  check(x.defined(), "all_gather: x is an undefined tensor");
  const detail::AxisFrame& frame = detail::find_axis(axis, "all_gather");
  const int64_t rank = x.ndim() + 1;
  check(gather_axis >= -rank && gather_axis < rank, "all_gather over axis '", axis,
        "': gather_axis ", gather_axis, " is out of range for a result of rank ", rank,
        " (operand shape ", fmt(x.shape()), ")");
  if (gather_axis < 0) gather_axis += rank;
  return ops::apply<prim::Collective>({x}, Kind::AllGather, axis, frame.size, gather_axis);
}

Tensor axis_index(const std::string& axis) {
  const detail::AxisFrame& frame = detail::find_axis(axis, "axis_index");
  return ops::apply<prim::Collective>({}, Kind::AxisIndex, axis, frame.size);
}

}  // namespace lanes
