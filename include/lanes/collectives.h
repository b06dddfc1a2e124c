// Collectives over a named mapped axis (jax's psum / pmean / all_gather / axis_index).
//
//     lanes::VmapOptions o;
//     o.axis_name = "batch";
//     auto center = lanes::vmap([](const Tensor& x) { return x - lanes::pmean(x, "batch"); },
//                               0, 0, o);
//
// Inside a vmap whose VmapOptions::axis_name is `axis`, a collective combines the values of every
// lane (example) of that vmap; its result is the same for every lane. Nested vmaps with different
// names reduce over the one named: a collective naming an outer axis passes through the inner
// vmap's batching and is combined when the outer vmap batches it. A collective outside any vmap,
// or naming an axis no enclosing vmap has, is a lanes::Error naming the axis and the names in
// scope. When the vmap is sharded across processes (VmapOptions::shard, lanes/distributed.h) the
// lanes of every rank take part, through MPI.
//
// Every collective is differentiable (jax's conventions): under vmap the vjp of psum is the psum
// of the cotangents, of pmean their pmean, of pmax / pmin the psum of the cotangents routed to the
// lanes that hold the extreme (split among ties), and of all_gather each lane's slice of the psum
// of the cotangents. So grad through pmean, vmap(grad) with a collective inside and compile work.
//
// Limitation: a collective over the axis of a vmap cannot sit inside a cond, while_loop or scan
// that this vmap batches (its lanes may be partitioned or masked there); compute it outside the
// control flow. A collective naming an axis of an outer vmap is fine there, captured or as an
// operand or carry: the outer examples of an inner lane run it in step (a loop while any of them
// runs, the finished ones keeping their carry), unless which cond branch a lane takes differs
// along that axis too (a lanes::Error).
#pragma once

#include <cstdint>
#include <string>

#include "lanes/tensor.h"

namespace lanes {

/// The sum of x over the lanes of the vmap named `axis` (lax.psum). Numbers only.
Tensor psum(const Tensor& x, const std::string& axis);
/// The mean of x over the lanes of `axis` (lax.pmean). Floating x only.
Tensor pmean(const Tensor& x, const std::string& axis);
/// The maximum / minimum of x over the lanes of `axis` (lax.pmax / lax.pmin).
Tensor pmax(const Tensor& x, const std::string& axis);
Tensor pmin(const Tensor& x, const std::string& axis);
/// Every lane's x stacked along a new axis `gather_axis` of the result (lax.all_gather); the
/// result has the axis size of `axis` there. gather_axis may be negative (counted from the end of
/// the result).
Tensor all_gather(const Tensor& x, const std::string& axis, int64_t gather_axis = 0);
/// The position of the lane along `axis`, an Int32 scalar (lax.axis_index). Under a sharded vmap
/// it is the global position (the rank's offset plus the local one).
Tensor axis_index(const std::string& axis);

struct Graph;

namespace detail {
/// Whether g (or a sub-graph of it) holds a collective over an axis other than `own`: a vmap
/// running such a graph records it into the enclosing trace rather than running it from its
/// cache, since only the vmap of that axis can evaluate the collective.
bool reads_other_axes(const Graph& g, const std::string& own);
/// Whether g (or a sub-graph of it) holds any collective.
bool has_collectives(const Graph& g);

/// Names the axis of a vmap while it traces its function, with the axis size (over all ranks of
/// a sharded vmap), so that collectives can check their axis and all_gather knows its shape. An
/// empty name pushes nothing. Scopes nest (src/ir/axis_scope.cpp).
class AxisNameScope {
 public:
  AxisNameScope(const std::string& name, int64_t size);
  ~AxisNameScope();
  AxisNameScope(const AxisNameScope&) = delete;
  AxisNameScope& operator=(const AxisNameScope&) = delete;

 private:
  bool pushed_ = false;
};
}  // namespace detail

}  // namespace lanes
