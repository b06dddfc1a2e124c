// The executor of compiled graphs: nodes in order, each intermediate freed after its last use so
// the allocator can reuse its memory for the next ones.
#include <algorithm>
#include <sstream>

#include "core/arena.h"
#include "lanes/compile.h"
#include "lanes/cost.h"
#include "runtime/thread_pool.h"

namespace lanes::detail {

std::string signature(const std::vector<Tensor>& leaves, const std::string& types) {
  std::string key = types;
  key += '|';
  for (const Tensor& t : leaves) {
    key += dtype_name(t.dtype());
    for (int64_t d : t.shape()) {
      key += ',';
      key += std::to_string(d);
    }
    key += ';';
  }
  return key;
}

bool any_traced(const std::vector<Tensor>& leaves) {
  for (const Tensor& t : leaves)
    if (t.is_tracer()) return true;
  return false;
}

namespace {
/// eval_consuming under a FlopCounter: the flops and the time of the evaluation.
std::vector<Tensor> counted_eval(const Graph& g, const Node& n, std::vector<Tensor>&& args) {
  std::vector<TensorType> in, out;
  for (ValueId v : n.inputs) in.push_back(g.types[v]);
  for (ValueId v : n.outputs) out.push_back(g.types[v]);
  CountedEvaluation counted;
  std::vector<Tensor> outs = n.prim->eval_consuming(std::move(args));
  counted.done(*n.prim, n.prim->flops(in, out));
  return outs;
}
}  // namespace

std::vector<Tensor> execute(const Graph& g, const std::vector<Tensor>& inputs) {
  check(g.captured.empty(), "execute: a compiled graph cannot read values of enclosing traces");
  check(inputs.size() == g.inputs.size(), "compile: the function takes ", g.inputs.size(),
        " tensors, got ", inputs.size());
  // Last use of each value; outputs live to the end. (On the stack: a loop body's graph runs once
  // per iteration, and each allocation of a call is a cost on its small kernels.)
  LocalArena<2048> arena;
  std::pmr::vector<int64_t> last_use(g.types.size(), -1, arena.resource());
  for (size_t i = 0; i < g.nodes.size(); ++i)
    for (ValueId v : g.nodes[i].inputs) last_use[v] = static_cast<int64_t>(i);
  for (ValueId v : g.outputs) last_use[v] = static_cast<int64_t>(g.nodes.size());

  const runtime::CallScope call;  // one caller of the pool for the whole graph
  std::vector<Tensor> env(g.types.size());
  for (const auto& [v, t] : g.constants) env[v] = t;
  for (size_t i = 0; i < inputs.size(); ++i) env[g.inputs[i]] = inputs[i];
  std::vector<Tensor> args;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& n = g.nodes[i];
    args.clear();
    // A value at its last use is moved, not copied: a kernel then sees it as the only holder of
    // its storage and may write its output there (fused elementwise chains do).
    for (size_t k = 0; k < n.inputs.size(); ++k) {
      const ValueId v = n.inputs[k];
      const bool again = std::find(n.inputs.begin() + k + 1, n.inputs.end(), v) != n.inputs.end();
      args.push_back(last_use[v] == int64_t(i) && !again ? std::move(env[v]) : env[v]);
    }
    std::vector<Tensor> outs = counting_flops() ? counted_eval(g, n, std::move(args))
                                                : n.prim->eval_consuming(std::move(args));
    args.clear();  // (moved from, or cleared by the primitive: the buffer is reused)
    for (size_t k = 0; k < outs.size(); ++k) env[n.outputs[k]] = std::move(outs[k]);
    for (ValueId v : n.inputs)
      if (last_use[v] == static_cast<int64_t>(i)) env[v] = Tensor();
  }
  std::vector<Tensor> outputs;
  outputs.reserve(g.outputs.size());
  for (ValueId v : g.outputs) outputs.push_back(env[v]);
  return outputs;
}

}  // namespace lanes::detail
