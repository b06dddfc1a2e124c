// The non-template half of lanes/custom.h: checks that the traced functions and rules agree,
// closes them (what they capture becomes operands) and binds the custom-rule nodes.
#include "lanes/custom.h"

#include <atomic>

#include "primitives/custom.h"

namespace lanes::detail {

namespace {

// The closed graphs and the operands of a node: args, then each graph's lifted tensors.
struct Bound {
  std::vector<GraphPtr> graphs;
  std::vector<size_t> n_lifted;
  std::vector<Tensor> operands;
};

Bound close_all(std::vector<Graph> graphs, std::vector<Tensor> args) {
  Bound b;
  b.operands = std::move(args);
  for (Graph& g : graphs) {
    Closed c = close_graph(std::move(g));
    b.graphs.push_back(c.graph);
    b.n_lifted.push_back(c.lifted.size());
    b.operands.insert(b.operands.end(), c.lifted.begin(), c.lifted.end());
  }
  return b;
}

// Checks that `got` (the leading outputs of a rule) are f's outputs `want`, leaf by leaf.
void check_outs(const std::vector<TensorType>& got, const std::vector<TensorType>& want,
                const char* op, const char* what) {
  check(got.size() >= want.size(), op, ": ", what, " returns ", got.size(),
        " output leaves but f returns ", want.size());
  for (size_t k = 0; k < want.size(); ++k)
    check(got[k] == want[k], op, ": ", what, " returns output leaf ", k, " as ", fmt(got[k]),
          " but f returns ", fmt(want[k]), " (they must agree in structure, shape and dtype)");
}

}  // namespace

std::vector<Tensor> bind_custom_vjp(Graph f, Graph fwd, Graph bwd, std::vector<Tensor> args) {
  const std::vector<TensorType> outs = output_types(f), fwd_outs = output_types(fwd);
  check_outs(fwd_outs, outs, "custom_vjp", "fwd's out (the pair's first)");
  const std::vector<TensorType> cts = output_types(bwd);
  check(cts.size() == args.size(), "custom_vjp: bwd returns ", cts.size(),
        " cotangent leaves but the arguments have ", args.size(),
        " leaves (bwd returns one cotangent per argument, shaped like it: a std::tuple for "
        "several arguments)");
  for (size_t i = 0; i < args.size(); ++i) {
    const TensorType a{args[i].shape(), args[i].dtype()};
    const bool same_dtype = cts[i].dtype == a.dtype || !is_floating(a.dtype);
    check(cts[i].shape == a.shape && same_dtype, "custom_vjp: bwd returns cotangent leaf ", i,
          " as ", fmt(cts[i]), " but argument leaf ", i, " is ", fmt(a),
          " (a cotangent has its argument's shape and dtype)");
  }
  Bound b = close_all({std::move(f), std::move(fwd), std::move(bwd)}, std::move(args));
  const size_t n = b.operands.size() - b.n_lifted[0] - b.n_lifted[1] - b.n_lifted[2];
  const auto node = std::make_shared<const prim::CustomVjpCall>(n, b.graphs, b.n_lifted);
  return lanes::bind(node, b.operands);
}

std::vector<Tensor> bind_custom_jvp(Graph f, Graph rule, std::vector<Tensor> args) {
  const std::vector<TensorType> outs = output_types(f), got = output_types(rule);
  check(got.size() == 2 * outs.size(), "custom_jvp: the rule returns ", got.size(),
        " leaves in all but f returns ", outs.size(),
        " (the rule returns out and tangent out, "
        "each shaped like f's result)");
  check_outs(got, outs, "custom_jvp", "the rule's out (the pair's first)");
  const std::vector<TensorType> tangents(got.begin() + int64_t(outs.size()), got.end());
  check_outs(tangents, outs, "custom_jvp", "the rule's tangent out (the pair's second)");
  Bound b = close_all({std::move(f), std::move(rule)}, std::move(args));
  const size_t n = b.operands.size() - b.n_lifted[0] - b.n_lifted[1];
  const auto node = std::make_shared<const prim::CustomJvpCall>(n, b.graphs, b.n_lifted);
  return lanes::bind(node, b.operands);
}

uint64_t next_custom_vmap_id() {
  static std::atomic<uint64_t> next{1};
  return next++;
}

std::vector<Tensor> bind_custom_vmap(Graph f, std::shared_ptr<const VmapRule> rule,
                                     std::vector<Tensor> args) {
  Bound b = close_all({std::move(f)}, std::move(args));
  const size_t n = b.operands.size() - b.n_lifted[0];
  const auto node =
      std::make_shared<const prim::CustomVmapCall>(n, b.graphs[0], b.n_lifted[0], std::move(rule));
  return lanes::bind(node, b.operands);
}

}  // namespace lanes::detail
