// bind: the single path from an op to a primitive. It validates the inputs through the shape
// rule, then records a node when an input is traced, or evaluates eagerly otherwise.
#include <sstream>

#include "ir/trace.h"
#include "lanes/cost.h"
#include "lanes/primitive.h"

namespace lanes {

namespace {
void fill_types(const Primitive& prim, const std::vector<Tensor>& inputs,
                std::vector<TensorType>& types) {
  types.resize(inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i].defined()) fail(prim.name(), ": input ", i, " is an undefined tensor");
    types[i].shape.assign(inputs[i].shape().begin(), inputs[i].shape().end());
    types[i].dtype = inputs[i].dtype();
  }
}

// The shape rule of prim on the inputs' types. These go in a per-thread vector whose entries
// keep their shapes' capacity, so that after the first ops building them allocates nothing
// (three allocations per traced op otherwise). A shape rule that binds ops itself (a user's
// primitive may) gets a vector of its own for those.
std::vector<TensorType> infer(const Primitive& prim, const std::vector<Tensor>& inputs) {
  thread_local std::vector<TensorType> scratch;
  thread_local bool busy = false;
  if (busy) {
    std::vector<TensorType> types;
    fill_types(prim, inputs, types);
    return prim.infer(types);
  }
  busy = true;
  struct Release {
    ~Release() { busy = false; }
  } release;
  fill_types(prim, inputs, scratch);
  return prim.infer(scratch);
}

/// eval under a FlopCounter: the flops and the time of the evaluation.
std::vector<Tensor> counted_eval(const Primitive& prim, const std::vector<Tensor>& inputs,
                                 const std::vector<TensorType>& out_types) {
  std::vector<TensorType> in_types;
  for (const Tensor& t : inputs) in_types.push_back({t.shape(), t.dtype()});
  detail::CountedEvaluation counted;
  std::vector<Tensor> outputs = prim.eval(inputs);
  counted.done(prim, prim.flops(in_types, out_types));
  return outputs;
}
}  // namespace

std::vector<Tensor> bind(const PrimitivePtr& prim, const std::vector<Tensor>& inputs) {
  std::vector<TensorType> out_types = infer(*prim, inputs);
  // Every shape a rule makes (reshape, broadcast, pad, concatenate, dot_general, a user's
  // primitive, traced or not) is checked here once, so no rule can hand on a negative dimension
  // or an element count that wrapped around.
  for (const TensorType& t : out_types)
    if (!shape_fits(t.shape, t.dtype)) check_shape(t.shape, t.dtype, prim->name().c_str());
  detail::TraceState* trace = detail::owning_trace(inputs);
  if (const std::string* axis = prim->axis_name())
    trace = detail::collective_trace(*prim, *axis, trace);
  if (!trace && prim->has_effects() && detail::trace_depth() > 0)
    trace = detail::active_trace(detail::trace_depth() - 1);
  if (trace) return trace->record(prim, inputs, std::move(out_types));
  if (detail::counting_flops()) return counted_eval(*prim, inputs, out_types);
  std::vector<Tensor> outputs = prim->eval(inputs);
#ifndef NDEBUG
  // The shape rule and the kernel must agree; a mismatch is a bug in lanes, not bad input.
  check(outputs.size() == out_types.size(), describe(*prim), ": eval gave ", outputs.size(),
        " outputs, infer promised ", out_types.size());
  for (size_t i = 0; i < outputs.size(); ++i)
    check(outputs[i].shape() == out_types[i].shape && outputs[i].dtype() == out_types[i].dtype,
          describe(*prim), ": eval gave output ", i, " of shape ", fmt(outputs[i].shape()), " ",
          dtype_name(outputs[i].dtype()), ", infer promised ", fmt(out_types[i].shape), " ",
          dtype_name(out_types[i].dtype));
#endif
  return outputs;
}

namespace detail {

std::vector<Tensor> replay(const Graph& g, const Node& n, const std::vector<Tensor>& args) {
  TraceState* trace = owning_trace(args);
  bool same_types = trace && args.size() == n.inputs.size();
  for (size_t i = 0; same_types && i < args.size(); ++i) {
    const TensorType& t = g.types[n.inputs[i]];
    same_types = args[i].defined() && args[i].dtype() == t.dtype && args[i].shape() == t.shape;
  }
  if (!same_types || n.prim->axis_name()) return bind(n.prim, args);
  std::vector<TensorType> out_types;
  out_types.reserve(n.outputs.size());
  for (ValueId v : n.outputs) out_types.push_back(g.types[v]);
  return trace->record(n.prim, args, std::move(out_types));
}

}  // namespace detail

Tensor bind1(const PrimitivePtr& prim, const std::vector<Tensor>& inputs) {
  std::vector<Tensor> outputs = bind(prim, inputs);
  if (outputs.size() != 1) fail(describe(*prim), " has ", outputs.size(), " outputs, not 1");
  return outputs[0];
}

std::string describe(const Primitive& prim) {
  std::string params = prim.params();
  return params.empty() ? prim.name() : prim.name() + "[" + params + "]";
}

}  // namespace lanes
