#include "primitives/collectives.h"

#include <atomic>

#include "lanes/collectives.h"
#include "lanes/control_flow.h"
#include "lanes/graph.h"
#include "lanes/ops.h"
#include "primitives/util.h"
#include "transforms/batching.h"

namespace lanes::detail {

namespace {
thread_local std::vector<const ShardContext*> shard_stack;
// Whether this process ever made a collective: until it has, no graph holds one, and every vmap
// call skips the walk over its graph (call bodies inlined) that would look for them.
std::atomic<bool> collectives_made{false};
}  // namespace

void note_collective_made() { collectives_made.store(true, std::memory_order_relaxed); }

const ShardContext* current_shard() { return shard_stack.empty() ? nullptr : shard_stack.back(); }
ShardScope::ShardScope(const ShardContext* c) { shard_stack.push_back(c); }
ShardScope::~ShardScope() { shard_stack.pop_back(); }

bool reads_other_axes(const Graph& g, const std::string& own) {
  if (!collectives_made.load(std::memory_order_relaxed)) return false;
  if (has_calls(g)) return reads_other_axes(inline_calls(g), own);
  for (const Node& n : g.nodes) {
    if (const std::string* axis = n.prim->axis_name(); axis && *axis != own) return true;
    for (const auto& [label, sub] : n.prim->subgraphs())
      if (reads_other_axes(*sub, own)) return true;
  }
  return false;
}

bool has_collectives(const Graph& g) {
  if (!collectives_made.load(std::memory_order_relaxed)) return false;
  if (has_calls(g)) return has_collectives(inline_calls(g));
  for (const Node& n : g.nodes) {
    if (n.prim->axis_name()) return true;
    for (const auto& [label, sub] : n.prim->subgraphs())
      if (has_collectives(*sub)) return true;
  }
  return false;
}

}  // namespace lanes::detail

namespace lanes::prim {

using Kind = Collective::Kind;

std::string Collective::name() const {
  switch (kind_) {
    case Kind::Sum:
      return "psum";
    case Kind::Mean:
      return "pmean";
    case Kind::Max:
      return "pmax";
    case Kind::Min:
      return "pmin";
    case Kind::AllGather:
      return "all_gather";
    case Kind::AxisIndex:
      return "axis_index";
  }
  return "collective";
}

std::string Collective::params() const {
  std::string p = "axis=" + axis_ + ", size=" + std::to_string(size_);
  if (kind_ == Kind::AllGather) p += ", gather_axis=" + std::to_string(gather_axis_);
  return p;
}

std::vector<TensorType> Collective::infer(const std::vector<TensorType>& in) const {
  if (kind_ == Kind::AxisIndex) {
    check_arity(in, 0, "axis_index");
    return single({}, DType::Int32);
  }
  check_arity(in, 1, name().c_str());
  const TensorType& x = in[0];
  if (kind_ == Kind::Sum || kind_ == Kind::Mean)
    check(x.dtype != DType::Bool, name(), " over axis '", axis_, "': does not accept a bool ",
          "operand (shape ", fmt(x.shape), "); cast it to a number first");
  if (kind_ == Kind::Mean)
    check(is_floating(x.dtype), "pmean over axis '", axis_, "': needs a floating operand, got ",
          dtype_name(x.dtype), " of shape ", fmt(x.shape));
  if (kind_ != Kind::AllGather) return single(x.shape, x.dtype);
  check(gather_axis_ >= 0 && gather_axis_ <= int64_t(x.shape.size()), "all_gather over axis '",
        axis_, "': gather_axis ", gather_axis_, " is out of range for an operand of shape ",
        fmt(x.shape));
  Shape out = x.shape;
  out.insert(out.begin() + gather_axis_, size_);
  return single(std::move(out), x.dtype);
}

// bind records a collective into the trace of its vmap, whose batching rule replaces it; a
// concrete evaluation means a graph holding one ran outside that vmap.
std::vector<Tensor> Collective::eval(const std::vector<Tensor>&) const {
  fail(describe(*this), ": a collective over axis '", axis_,
       "' was evaluated outside the vmap of that name (collectives run only inside a vmap whose "
       "VmapOptions::axis_name is their axis)");
}

std::vector<Batched> Collective::batch(const std::vector<Batched>& in, int64_t size) const {
  if (batching::current_options().axis_name != axis_) return pass_through(in);
  check(!batching::batching_subgraph(), name(), " over axis '", axis_,
        "' sits inside a cond, while_loop or scan that the vmap of that axis batches, where its "
        "lanes may be partitioned or masked: compute it outside the control flow");
  if (kind_ == Kind::AxisIndex) {
    const detail::ShardContext* shard = detail::current_shard();
    Tensor index = iota({size}, 0, DType::Int32);
    if (shard && shard->axis == axis_ && shard->offset != 0)
      index = index + scalar(double(shard->offset), DType::Int32);
    return {{index, 0}};
  }
  return combine(in[0], size);
}

// The values of every lane combined; the result is shared by all lanes (unmapped). A shared
// (unmapped) operand is the value of every lane.
std::vector<Batched> Collective::combine(const Batched& x, int64_t size) const {
  const detail::ShardContext* shard = detail::current_shard();
  if (shard && shard->axis != axis_) shard = nullptr;
  const int64_t global = shard ? shard->global : size;
  const int64_t d = x.dim;
  switch (kind_) {
    case Kind::Sum:
    case Kind::Mean: {
      if (!x.mapped())
        return {{kind_ == Kind::Sum ? x.value * scalar(double(global), x.value.dtype()) : x.value,
                 kNotMapped}};
      Tensor s = sum(x.value, d);
      if (shard) s = shard->allreduce(s, kernels::ReduceOp::Sum);
      return {{kind_ == Kind::Sum ? s : s / double(global), kNotMapped}};
    }
    case Kind::Max:
    case Kind::Min: {
      if (!x.mapped()) return {{x.value, kNotMapped}};
      const bool is_max = kind_ == Kind::Max;
      const auto op = is_max ? kernels::ReduceOp::Max : kernels::ReduceOp::Min;
      // A rank with no lanes of a sharded axis contributes the identity (the lowest or highest
      // value), which the kernel gives for an empty reduction.
      const Tensor m =
          shard && x.value.shape()[d] == 0
              ? kernels::reduce(op, Tensor::empty(x.value.shape(), x.value.dtype()), {d})
          : is_max ? max(x.value, d)
                   : min(x.value, d);
      if (shard) return {{shard->allreduce(m, op), kNotMapped}};
      return {{m, kNotMapped}};
    }
    case Kind::AllGather: {
      if (!x.mapped()) return {{batching::align_batch({x}, global, gather_axis_)[0], kNotMapped}};
      Tensor g = moveaxis(x.value, d, gather_axis_);
      if (shard) g = shard->allgather(g, gather_axis_);
      return {{g, kNotMapped}};
    }
    case Kind::AxisIndex:
      break;
  }
  fail("collective: unreachable kind");
}

// A collective over an outer axis, under an inner vmap: the same collective on the inner
// batch, which it treats elementwise; the outer vmap combines it when it batches its graph.
std::vector<Batched> Collective::pass_through(const std::vector<Batched>& in) const {
  const PrimitivePtr self = shared_from_this();
  if (kind_ == Kind::AxisIndex) return {{bind1(self, {}), kNotMapped}};
  const Batched& x = in[0];
  if (kind_ != Kind::AllGather || !x.mapped()) return {{bind1(self, {x.value}), x.dim}};
  // The inner batch dim d sits in the operand; the gathered axis goes in front of it or after.
  const int64_t d = x.dim, g = gather_axis_;
  const auto moved = std::make_shared<const Collective>(kind_, axis_, size_, g <= d ? g : g + 1);
  return {{bind1(moved, {x.value}), g <= d ? d + 1 : d}};
}

std::vector<Tensor> Collective::jvp(const std::vector<Tensor>& x, const std::vector<Tensor>& t,
                                    const std::vector<Tensor>& out) const {
  if (kind_ == Kind::AxisIndex || !t[0].defined()) return {Tensor()};
  switch (kind_) {
    case Kind::Sum:
      return {psum(t[0], axis_)};
    case Kind::Mean:
      return {pmean(t[0], axis_)};
    case Kind::AllGather:
      return {all_gather(t[0], axis_, gather_axis_)};
    default: {
      // The tangent of the lanes holding the extreme, averaged over ties (as reduce_max's).
      const Tensor mask = cast(equal(x[0], out[0]), x[0].dtype());
      return {psum(t[0] * mask, axis_) / psum(mask, axis_)};
    }
  }
}

// Under vmap the cotangent of a lane's input collects every lane's output cotangent (jax's
// convention: the transpose of psum is psum).
std::vector<Tensor> Collective::vjp(const std::vector<Tensor>& x, const std::vector<Tensor>& ct,
                                    const std::vector<Tensor>& out) const {
  if (kind_ == Kind::AxisIndex) return {};
  if (!ct[0].defined()) return {Tensor()};
  switch (kind_) {
    case Kind::Sum:
      return {psum(ct[0], axis_)};
    case Kind::Mean:
      return {pmean(ct[0], axis_)};
    case Kind::AllGather:
      // Each lane's slice of the summed cotangent of the gathered value.
      return {take(psum(ct[0], axis_), axis_index(axis_), gather_axis_)};
    default: {
      const Tensor mask = cast(equal(x[0], out[0]), x[0].dtype());
      return {psum(ct[0], axis_) * mask / psum(mask, axis_)};
    }
  }
}

}  // namespace lanes::prim
