// The executor of compiled graphs: nodes in order, each intermediate freed after its last use so
// the allocator can reuse its memory for the next ones.
#include <algorithm>
#include <cstring>

#include "core/arena.h"
#include "lanes/compile.h"
#include "lanes/cost.h"
#include "runtime/thread_pool.h"

namespace lanes::detail {

void signature(std::string& key, const std::vector<Tensor>& leaves, const std::type_info& types) {
  const std::type_info* tag = &types;
  size_t size = sizeof tag;
  for (const Tensor& t : leaves) size += sizeof(int64_t) * (2 + t.shape().size());
  key.resize(size);
  char* at = key.data();
  const auto put = [&](const void* bytes, size_t n) {
    if (n == 0) return;  // (a scalar's dims: data() may be null, which memcpy must not see)
    std::memcpy(at, bytes, n);
    at += n;
  };
  put(&tag, sizeof tag);
  for (const Tensor& t : leaves) {
    const int64_t head[2] = {int64_t(t.dtype()), int64_t(t.shape().size())};
    put(head, sizeof head);
    put(t.shape().data(), sizeof(int64_t) * t.shape().size());
  }
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

// A graph's values, with its constants set (the inputs are set by the caller).
std::vector<Tensor> environment(const Graph& g, size_t inputs) {
  check(g.captured.empty(), "execute: a compiled graph cannot read values of enclosing traces");
  check(inputs == g.inputs.size(), "compile: the function takes ", g.inputs.size(),
        " tensors, got ", inputs);
  std::vector<Tensor> env(g.types.size());
  for (const auto& [v, t] : g.constants) env[v] = t;
  return env;
}

// The nodes of g in order over env (constants and inputs set); returns the outputs.
std::vector<Tensor> run(const Graph& g, std::vector<Tensor>& env) {
  // Last use of each value; outputs live to the end. (On the stack: a loop body's graph runs once
  // per iteration, and each allocation of a call is a cost on its small kernels.)
  LocalArena<2048> arena;
  std::pmr::vector<int64_t> last_use(g.types.size(), -1, arena.resource());
  for (size_t i = 0; i < g.nodes.size(); ++i)
    for (ValueId v : g.nodes[i].inputs) last_use[v] = static_cast<int64_t>(i);
  for (ValueId v : g.outputs) last_use[v] = static_cast<int64_t>(g.nodes.size());

  const runtime::CallScope call;  // one caller of the pool for the whole graph
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
  // Each output is moved out of env at its last place in the list (one value may be returned
  // twice).
  std::vector<Tensor> outputs;
  outputs.reserve(g.outputs.size());
  for (auto v = g.outputs.begin(); v != g.outputs.end(); ++v)
    outputs.push_back(std::find(v + 1, g.outputs.end(), *v) == g.outputs.end() ? std::move(env[*v])
                                                                               : env[*v]);
  return outputs;
}

}  // namespace

std::vector<Tensor> execute(const Graph& g, const std::vector<Tensor>& inputs) {
  std::vector<Tensor> env = environment(g, inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) env[g.inputs[i]] = inputs[i];
  return run(g, env);
}

std::vector<Tensor> execute(const Graph& g, std::vector<Tensor>&& inputs) {
  std::vector<Tensor> env = environment(g, inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) env[g.inputs[i]] = std::move(inputs[i]);
  return run(g, env);
}

}  // namespace lanes::detail
