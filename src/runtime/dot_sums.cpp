// A sum of products that share their dimension numbers becomes one product with one more
// contracting axis: sum_t dot(a_t, b_t) = dot(stack_t a_t, stack_t b_t), the new axis contracted.
//
// Reverse mode through a loop leaves such sums behind: a weight used at every step gets one
// gradient term per step, and under vmap each term is a per-example outer product, (B, m, n),
// written to memory and then added (8 of them per weight in an 8-step LSTM). The merged product
// writes the result once, as one batched GEMM with K = the number of terms, which is what a hand
// batched backward pass does. Only products whose output is at least as large as their operands
// are merged: for them the stacking copy is cheaper than the outputs it saves; a sum of ordinary
// GEMMs is left alone.
#include <algorithm>
#include <map>

#include "lanes/compile.h"
#include "primitives/dot_general.h"
#include "primitives/elementwise.h"
#include "primitives/shape.h"
#include "primitives/structure.h"

namespace lanes::detail {

namespace {

bool is_add(const Node& n) {
  const auto* b = dynamic_cast<const prim::Binary*>(n.prim.get());
  return b && b->kind() == prim::Binary::Kind::Add;
}

class DotSums {
 public:
  explicit DotSums(const Graph& g)
      : g_(g), producer_(g.types.size(), -1), consumer_(g.types.size(), -1), uses_(g.types.size()) {
    for (size_t i = 0; i < g.nodes.size(); ++i) {
      for (ValueId v : g.nodes[i].outputs) producer_[v] = int64_t(i);
      for (ValueId v : g.nodes[i].inputs) ++uses_[v], consumer_[v] = int64_t(i);
    }
    for (ValueId v : g.outputs) ++uses_[v];
  }

  Graph run() {
    Graph out = g_;
    out.nodes.clear();
    for (size_t i = 0; i < g_.nodes.size(); ++i) {
      const Node& n = g_.nodes[i];
      if (!is_add(n) || inner_add(n.outputs[0]) || !merge(n, out)) out.nodes.push_back(n);
    }
    return out;
  }

 private:
  const Node* producer(ValueId v) const {
    return producer_[v] < 0 ? nullptr : &g_.nodes[producer_[v]];
  }

  // An add whose only use is another add of its type: part of that add's tree, not a root.
  bool inner_add(ValueId v) const {
    if (uses_[v] != 1 || consumer_[v] < 0) return false;
    const Node& n = g_.nodes[consumer_[v]];
    return is_add(n) && g_.types[n.outputs[0]] == g_.types[v];
  }

  // The terms of the add tree rooted at `n`: adds used only inside the tree are opened.
  void terms(const Node& n, std::vector<ValueId>& out) const {
    for (ValueId v : n.inputs) {
      const Node* p = producer(v);
      if (p && is_add(*p) && uses_[v] == 1 && g_.types[v] == g_.types[n.outputs[0]])
        terms(*p, out);
      else
        out.push_back(v);
    }
  }

  // The product computing term v, if it may be merged: used once, output no smaller than its
  // operands.
  const prim::DotGeneral* mergeable(ValueId v, const Node** node) const {
    *node = producer(v);
    const auto* dot = *node ? dynamic_cast<const prim::DotGeneral*>((*node)->prim.get()) : nullptr;
    if (!dot || uses_[v] != 1) return nullptr;
    const int64_t operands = shape_numel(g_.types[(*node)->inputs[0]].shape) +
                             shape_numel(g_.types[(*node)->inputs[1]].shape);
    return shape_numel(g_.types[v].shape) >= operands ? dot : nullptr;
  }

  // Replaces the add tree rooted at n by merged products plus the other terms, appended to
  // out.nodes; false (nothing appended) when no two terms merge.
  bool merge(const Node& root, Graph& out) const {
    std::vector<ValueId> leaves;
    terms(root, leaves);
    // Mergeable terms grouped by dimension numbers and operand types.
    std::map<std::string, std::vector<const Node*>> groups;
    std::vector<ValueId> rest;
    for (ValueId v : leaves) {
      const Node* n;
      if (const auto* dot = mergeable(v, &n)) {
        const TensorType &a = g_.types[n->inputs[0]], &b = g_.types[n->inputs[1]];
        groups[dot->params() + dtype_name(a.dtype) + shape_str(a.shape) + shape_str(b.shape)]
            .push_back(n);
      } else {
        rest.push_back(v);
      }
    }
    std::vector<ValueId> sum;
    bool merged = false;
    for (const auto& [key, dots] : groups) {
      if (dots.size() == 1) {
        rest.push_back(dots[0]->outputs[0]);
        continue;
      }
      sum.push_back(merged_product(dots, out));
      merged = true;
    }
    if (!merged) return false;
    sum.insert(sum.end(), rest.begin(), rest.end());
    // The sum, its last add writing the root's own value.
    const PrimitivePtr add = root.prim;
    ValueId acc = sum[0];
    for (size_t i = 1; i < sum.size(); ++i) {
      const ValueId to = i + 1 == sum.size() ? root.outputs[0] : out.add_value(out.types[acc]);
      out.nodes.push_back({add, {acc, sum[i]}, {to}});
      acc = to;
    }
    if (sum.size() == 1) rename(out, acc, root.outputs[0]);
    return true;
  }

  // dot(stack(lhs_t), stack(rhs_t)) with the new axes contracted. Each new axis goes just before
  // the operand's first contracting axis (after its batch axes when there is none), so that the
  // contracting axes stay adjacent and in the same order on both sides: the GEMM reads the
  // stacked operands in place, and stacking copies whole blocks.
  ValueId merged_product(const std::vector<const Node*>& dots, Graph& out) const {
    const DotDims& old = static_cast<const prim::DotGeneral&>(*dots[0]->prim).dims();
    DotDims dims;
    std::vector<ValueId> stacked;
    for (int side = 0; side < 2; ++side) {
      const std::vector<int64_t>& contracting = side ? old.rhs_contracting : old.lhs_contracting;
      const std::vector<int64_t>& batch = side ? old.rhs_batch : old.lhs_batch;
      const int64_t axis = new_axis(contracting, batch);
      auto shifted = [&](const std::vector<int64_t>& axes) {
        std::vector<int64_t> out;
        for (int64_t a : axes) out.push_back(a >= axis ? a + 1 : a);
        return out;
      };
      std::vector<int64_t> c{axis};
      for (int64_t a : shifted(contracting)) c.push_back(a);
      (side ? dims.rhs_contracting : dims.lhs_contracting) = c;
      (side ? dims.rhs_batch : dims.lhs_batch) = shifted(batch);
      stacked.push_back(stack(dots, side, axis, out));
    }
    const ValueId result = out.add_value(g_.types[dots[0]->outputs[0]]);
    out.nodes.push_back({std::make_shared<const prim::DotGeneral>(dims), stacked, {result}});
    return result;
  }

  static int64_t new_axis(const std::vector<int64_t>& contracting,
                          const std::vector<int64_t>& batch) {
    if (!contracting.empty()) return *std::min_element(contracting.begin(), contracting.end());
    return batch.empty() ? 0 : *std::max_element(batch.begin(), batch.end()) + 1;
  }

  // Operand `side` of every product, stacked along a new axis `axis`.
  ValueId stack(const std::vector<const Node*>& dots, int side, int64_t axis, Graph& out) const {
    const TensorType& t = g_.types[dots[0]->inputs[side]];
    Shape one = t.shape;
    one.insert(one.begin() + axis, 1);
    const auto reshape = std::make_shared<const prim::Reshape>(one);
    std::vector<ValueId> parts;
    for (const Node* n : dots) {
      parts.push_back(out.add_value({one, t.dtype}));
      out.nodes.push_back({reshape, {n->inputs[side]}, {parts.back()}});
    }
    Shape all = one;
    all[axis] = int64_t(dots.size());
    const ValueId v = out.add_value({all, t.dtype});
    out.nodes.push_back({std::make_shared<const prim::Concatenate>(axis), parts, {v}});
    return v;
  }

  // Makes the last node, which writes `from`, write `to` instead.
  static void rename(Graph& out, ValueId from, ValueId to) {
    for (ValueId& v : out.nodes.back().outputs)
      if (v == from) v = to;
  }

  const Graph& g_;
  std::vector<int64_t> producer_, consumer_;  // per value: a node writing / reading it, or -1
  std::vector<int64_t> uses_;                 // per value: reads by nodes and graph outputs
};

}  // namespace

Graph merge_dot_sums(const Graph& g) { return DotSums(g).run(); }

}  // namespace lanes::detail
