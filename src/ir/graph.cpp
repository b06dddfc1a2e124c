// Graph printing (jaxpr style) and evaluation.
#include <ostream>
#include <sstream>

#include "ir/trace.h"

namespace lanes {

ValueId Graph::add_value(TensorType type) {
  types.push_back(std::move(type));
  return static_cast<ValueId>(types.size()) - 1;
}

namespace {

// a, b, ..., z, ba, bb, ...: jaxpr's variable names.
std::string var_name(ValueId v) {
  std::string s;
  do {
    s.insert(s.begin(), static_cast<char>('a' + v % 26));
    v /= 26;
  } while (v > 0);
  return s;
}

const char* short_dtype(DType d) {
  switch (d) {
    case DType::Bool:
      return "bool";
    case DType::UInt8:
      return "u8";
    case DType::Int32:
      return "i32";
    case DType::Int64:
      return "i64";
    case DType::Float32:
      return "f32";
    case DType::Float64:
      return "f64";
  }
  return "?";
}

std::string typed(const Graph& g, ValueId v) {
  std::ostringstream os;
  os << var_name(v) << ':' << short_dtype(g.types[v].dtype) << '[';
  const Shape& s = g.types[v].shape;
  for (size_t i = 0; i < s.size(); ++i) os << (i ? "," : "") << s[i];
  os << ']';
  return os.str();
}

}  // namespace

namespace {
void print(std::ostream& os, const Graph& g, const std::string& indent);
}

std::ostream& operator<<(std::ostream& os, const Graph& g) {
  print(os, g, "");
  return os;
}

namespace {
// Sub-graphs print nested under their node, indented, as jaxprs print cond's branches.
void print(std::ostream& os, const Graph& g, const std::string& indent) {
  os << "{ lambda ";
  for (const auto& [v, t] : g.constants) os << typed(g, v) << ' ';
  os << ';';
  for (ValueId v : g.inputs) os << ' ' << typed(g, v);
  os << ". let\n";
  for (const Node& n : g.nodes) {
    os << indent << "    ";
    for (size_t i = 0; i < n.outputs.size(); ++i) os << (i ? " " : "") << typed(g, n.outputs[i]);
    os << " = " << describe(*n.prim);
    for (ValueId v : n.inputs) os << ' ' << var_name(v);
    os << '\n';
    for (const auto& [name, sub] : n.prim->subgraphs()) {
      os << indent << "      " << name << " = ";
      print(os, *sub, indent + "      ");
      os << '\n';
    }
  }
  os << indent << "  in (";
  for (size_t i = 0; i < g.outputs.size(); ++i) os << (i ? ", " : "") << var_name(g.outputs[i]);
  os << ") }";
}
}  // namespace

std::vector<Tensor> eval_graph(const Graph& g, const std::vector<Tensor>& inputs) {
  check(inputs.size() == g.inputs.size(), "eval_graph: the graph takes ", g.inputs.size(),
        " inputs, got ", inputs.size());
  // Last use of each value, so intermediates are freed as soon as possible.
  std::vector<int64_t> last_use(g.types.size(), -1);
  for (size_t i = 0; i < g.nodes.size(); ++i)
    for (ValueId v : g.nodes[i].inputs) last_use[v] = static_cast<int64_t>(i);
  for (ValueId v : g.outputs) last_use[v] = static_cast<int64_t>(g.nodes.size());

  std::vector<Tensor> env(g.types.size());
  for (const auto& [v, t] : g.constants) env[v] = t;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const TensorType& want = g.types[g.inputs[i]];
    check(inputs[i].shape() == want.shape && inputs[i].dtype() == want.dtype, "eval_graph: input ",
          i, " has shape ", fmt(inputs[i].shape()), " ", dtype_name(inputs[i].dtype()),
          ", the graph expects ", fmt(want.shape), " ", dtype_name(want.dtype));
    env[g.inputs[i]] = inputs[i];
  }
  std::vector<Tensor> args;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& n = g.nodes[i];
    args.clear();
    for (ValueId v : n.inputs) args.push_back(env[v]);
    std::vector<Tensor> outs = detail::replay(g, n, args);
    for (size_t k = 0; k < outs.size(); ++k) env[n.outputs[k]] = std::move(outs[k]);
    for (ValueId v : n.inputs)
      if (last_use[v] == static_cast<int64_t>(i)) env[v] = Tensor();
  }
  std::vector<Tensor> outputs;
  for (ValueId v : g.outputs) outputs.push_back(env[v]);
  return outputs;
}

}  // namespace lanes
