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

}  // namespace detail
}  // namespace lanes
