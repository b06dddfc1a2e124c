// The tracing context behind bind: a thread-local stack of traces, innermost last.
#pragma once

#include <map>
#include <utility>
#include <vector>

#include "lanes/graph.h"

namespace lanes {

namespace detail {

class TraceState {
 public:
  TraceState();
  uint64_t id() const { return id_; }

  /// The value of this trace's graph that `t` stands for: its own tracer's value, a new captured
  /// input for a tracer of an enclosing trace, or a new constant for a concrete tensor.
  ValueId value_of(const Tensor& t);
  /// A new traced tensor for value `v` of this trace.
  Tensor tracer(ValueId v);
  /// Records prim applied to inputs; returns traced outputs of the given types.
  std::vector<Tensor> record(const PrimitivePtr& prim, const std::vector<Tensor>& inputs,
                             std::vector<TensorType> out_types);

  Graph graph;
  std::vector<ValueId> explicit_inputs;

 private:
  uint64_t id_;
  std::map<std::pair<uint64_t, ValueId>, ValueId> captured_ids_;  // outer (trace, value) -> ours
  std::vector<ValueId> captured_inputs_;
  friend class TraceScope;
};

/// The innermost active trace that owns a traced input, or nullptr when no input is traced.
/// Throws when a traced input belongs to no active trace (it escaped its transform).
TraceState* owning_trace(const std::vector<Tensor>& inputs);

/// The number of traces active on this thread (the next trace opened gets this depth).
size_t trace_depth();
/// A new input of the active trace at `depth`, after the inputs it has (a transform's hidden
/// argument, lanes/implicit.h); its tracer.
Tensor add_hidden_input(size_t depth, const TensorType& type);
/// The trace a collective over `axis` is recorded into: `owner` (the innermost trace owning an
/// input), or the trace of the vmap named `axis` when that is deeper (a collective of concrete
/// values is still recorded, for that vmap's batching rule). Throws lanes::Error naming the axis
/// and the names in scope when no vmap of that name is being traced (src/ir/axis_scope.cpp).
TraceState* collective_trace(const Primitive& prim, const std::string& axis, TraceState* owner);

/// The active trace at position `depth` (0 = outermost; trace_depth() of them), or null.
TraceState* active_trace(size_t depth);

}  // namespace detail
}  // namespace lanes
