#include "ir/trace.h"

#include <atomic>

namespace lanes::detail {

namespace {
// Traces nest (a vmap inside a grad inside a compile); the innermost is last.
thread_local std::vector<TraceState*> active_traces;
std::atomic<uint64_t> next_trace_id{1};

// Position of the trace in the active stack, or -1.
int64_t depth_of(uint64_t trace_id) {
  for (size_t i = active_traces.size(); i-- > 0;)
    if (active_traces[i]->id() == trace_id) return static_cast<int64_t>(i);
  return -1;
}
}  // namespace

TraceState::TraceState() : id_(next_trace_id++) {}

ValueId TraceState::value_of(const Tensor& t) {
  if (t.is_tracer()) {
    const Tracer& tr = *t.tracer();
    if (tr.trace_id == id_) return tr.value;
    auto [it, inserted] = captured_ids_.try_emplace({tr.trace_id, tr.value}, 0);
    if (inserted) {
      it->second = graph.add_value({t.shape(), t.dtype()});
      captured_inputs_.push_back(it->second);
      graph.captured.push_back(t);
    }
    return it->second;
  }
  const ValueId v = graph.add_value({t.shape(), t.dtype()});
  graph.constants.emplace_back(v, t);
  return v;
}

Tensor TraceState::tracer(ValueId v) {
  const TensorType& type = graph.types[v];
  return Tensor::traced(Tracer{id_, v}, type.shape, type.dtype);
}

std::vector<Tensor> TraceState::record(const PrimitivePtr& prim, const std::vector<Tensor>& inputs,
                                       std::vector<TensorType> out_types) {
  Node node{prim, {}, {}};
  node.inputs.reserve(inputs.size());
  for (const Tensor& x : inputs) node.inputs.push_back(value_of(x));
  node.outputs.reserve(out_types.size());
  std::vector<Tensor> outputs;
  outputs.reserve(out_types.size());
  for (TensorType& type : out_types) {
    node.outputs.push_back(graph.add_value(std::move(type)));
    outputs.push_back(tracer(node.outputs.back()));
  }
  graph.nodes.push_back(std::move(node));
  return outputs;
}

TraceState* owning_trace(const std::vector<Tensor>& inputs) {
  int64_t deepest = -1;
  for (const Tensor& x : inputs) {
    if (!x.is_tracer()) continue;
    const int64_t d = depth_of(x.tracer()->trace_id);
    check(d >= 0, "a traced tensor of shape ", fmt(x.shape()),
          " was used after the transform that traced it finished (it escaped, e.g. through a "
          "captured variable); return it from the transformed function instead");
    deepest = std::max(deepest, d);
  }
  return deepest < 0 ? nullptr : active_traces[deepest];
}

size_t trace_depth() { return active_traces.size(); }

Tensor add_hidden_input(size_t depth, const TensorType& type) {
  check(depth < active_traces.size(), "hidden input for a trace that is not active (depth ", depth,
        " of ", active_traces.size(), ")");
  TraceState& s = *active_traces[depth];
  const ValueId v = s.graph.add_value(type);
  s.explicit_inputs.push_back(v);
  return s.tracer(v);
}

TraceState* active_trace(size_t depth) {
  return depth < active_traces.size() ? active_traces[depth] : nullptr;
}

// ---- TraceScope ---------------------------------------------------------------------------------

TraceScope::TraceScope() : state_(std::make_unique<TraceState>()) {
  active_traces.push_back(state_.get());
}

TraceScope::~TraceScope() {
  // Scopes end in reverse order of creation (RAII), also when an exception unwinds them.
  if (!active_traces.empty() && active_traces.back() == state_.get()) active_traces.pop_back();
}

Tensor TraceScope::input(const TensorType& type) {
  const ValueId v = state_->graph.add_value(type);
  state_->explicit_inputs.push_back(v);
  return state_->tracer(v);
}

Graph TraceScope::finish(const std::vector<Tensor>& outputs) {
  TraceState& s = *state_;
  for (const Tensor& y : outputs) {
    check(y.defined(), "trace: the function returned an undefined tensor");
    if (y.is_tracer()) owning_trace({y});  // rejects escaped tracers
    s.graph.outputs.push_back(s.value_of(y));
  }
  s.graph.inputs = s.explicit_inputs;
  s.graph.inputs.insert(s.graph.inputs.end(), s.captured_inputs_.begin(), s.captured_inputs_.end());
  if (!active_traces.empty() && active_traces.back() == &s) active_traces.pop_back();
  return std::move(s.graph);
}

}  // namespace lanes::detail
