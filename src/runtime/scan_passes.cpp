// simplify_scans: each scan node without the carries its body passes through, without repeated
// ys and without ys that are a step of an xs (prim::Scan::simplified); whatever read them reads
// the values they equal.
#include <algorithm>
#include <numeric>

#include "lanes/compile.h"
#include "primitives/control_flow.h"

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

}  // namespace lanes::detail
