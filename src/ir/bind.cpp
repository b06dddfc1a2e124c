// bind: the single path from an op to a primitive. It validates the inputs through the shape
// rule, then records a node when an input is traced, or evaluates eagerly otherwise.
#include <sstream>

#include "ir/trace.h"
#include "lanes/primitive.h"

namespace lanes {

namespace {
std::vector<TensorType> types_of(const Primitive& prim, const std::vector<Tensor>& inputs) {
  std::vector<TensorType> types;
  types.reserve(inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i].defined()) fail(prim.name(), ": input ", i, " is an undefined tensor");
    types.push_back({inputs[i].shape(), inputs[i].dtype()});
  }
  return types;
}
}  // namespace

std::vector<Tensor> bind(const PrimitivePtr& prim, const std::vector<Tensor>& inputs) {
  std::vector<TensorType> out_types = prim->infer(types_of(*prim, inputs));
  if (detail::TraceState* trace = detail::owning_trace(inputs))
    return trace->record(prim, inputs, std::move(out_types));
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
