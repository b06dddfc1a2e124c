// simplify_scans: each scan node without the carries its body passes through, without repeated
// ys and without ys that are a step of an xs (prim::Scan::simplified); whatever read them reads
// the values they equal. hoist_scan_products: each scan without the products of an xs step with a
// const (prim::Scan::hoisted_products), which run once over all steps before it.
#include <algorithm>
#include <numeric>

#include "lanes/compile.h"
#include "primitives/control_flow.h"
#include "primitives/dot_general.h"
#include "primitives/shape.h"

namespace lanes::detail {

Graph simplify_scans(Graph g) {
  // Each value, or the earlier value that now stands for it (nodes come in execution order, so a
  // value's stand-in is final before anything reads it).
  std::vector<ValueId> same(g.types.size());
  std::iota(same.begin(), same.end(), ValueId{0});
  for (Node& node : g.nodes) {
    for (ValueId& v : node.inputs) v = same[v];
    const auto* scan = dynamic_cast<const prim::Scan*>(node.prim.get());
    if (!scan) continue;
    prim::Scan::Simplified s = scan->simplified();
    if (!s.scan) continue;
    int64_t count = 0;  // the new scan's outputs
    for (int64_t from : s.outputs) count = std::max(count, from + 1);
    std::vector<ValueId> inputs, outputs(size_t(count), -1);
    for (size_t i : s.inputs) inputs.push_back(node.inputs[i]);
    for (size_t k = 0; k < node.outputs.size(); ++k) {
      const int64_t from = s.outputs[k];
      if (from < 0) {
        same[node.outputs[k]] = node.inputs[size_t(-1 - from)];
      } else if (outputs[size_t(from)] < 0) {
        outputs[size_t(from)] = node.outputs[k];
      } else {
        same[node.outputs[k]] = outputs[size_t(from)];
      }
    }
    node.prim = std::move(s.scan);
    node.inputs = std::move(inputs);
    node.outputs = std::move(outputs);
  }
  for (ValueId& v : g.outputs) v = same[v];
  return g;
}

Graph hoist_scan_products(Graph g) {
  std::vector<Node> nodes;
  for (Node& node : g.nodes) {
    const auto* scan = dynamic_cast<const prim::Scan*>(node.prim.get());
    prim::Scan::Hoisted h = scan ? scan->hoisted_products() : prim::Scan::Hoisted{};
    for (const prim::Scan::HoistedProduct& p : h.products) {
      auto value = [&](PrimitivePtr prim, std::vector<ValueId> inputs) {
        std::vector<TensorType> in;
        for (ValueId v : inputs) in.push_back(g.types[v]);
        g.types.push_back(prim->infer(in).at(0));
        const ValueId out = ValueId(g.types.size() - 1);
        nodes.push_back({std::move(prim), std::move(inputs), {out}});
        return out;
      };
      ValueId stacked = value(p.dot, {node.inputs[p.lhs], node.inputs[p.rhs]});
      if (p.steps_at != 0) {  // the steps first, as a scan's xs has them
        std::vector<int64_t> perm{p.steps_at};
        for (int64_t d = 0; d < int64_t(g.types[stacked].shape.size()); ++d)
          if (d != p.steps_at) perm.push_back(d);
        stacked = value(std::make_shared<const prim::Transpose>(perm), {stacked});
      }
      node.inputs.push_back(stacked);
    }
    if (h.scan) node.prim = std::move(h.scan);
    nodes.push_back(std::move(node));
  }
  g.nodes = std::move(nodes);
  return g;
}

}  // namespace lanes::detail
