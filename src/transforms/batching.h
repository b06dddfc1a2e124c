// Helpers for writing batching rules (Primitive::batch) and the state vmap keeps while it runs.
#pragma once

#include <vector>

#include "lanes/graph.h"
#include "lanes/primitive.h"
#include "lanes/vmap.h"

namespace lanes::batching {

/// The options of the innermost running vmap (the defaults outside any vmap).
const VmapOptions& current_options();
/// Makes `o` the current options while it lives (a control-flow node batching its sub-graphs at
/// run time uses the options of the vmap that made it).
struct OptionsScope {
  explicit OptionsScope(const VmapOptions& o);
  ~OptionsScope();
  OptionsScope(const OptionsScope&) = delete;
  OptionsScope& operator=(const OptionsScope&) = delete;
};

/// Marks the batching of a control-flow sub-graph (a cond's branches, a loop's body) while it
/// lives: collectives over the vmap's own axis cannot sit there (lanes/collectives.h).
struct SubgraphScope {
  SubgraphScope();
  ~SubgraphScope();
  SubgraphScope(const SubgraphScope&) = delete;
  SubgraphScope& operator=(const SubgraphScope&) = delete;
};
bool batching_subgraph();

/// x's value with its batch dim moved to `to` (a view; x must be mapped).
Tensor move_batch_dim(const Batched& x, int64_t to);
/// x's value with the batch at dim 0; an unmapped x is broadcast to `size` examples (a
/// stride-0 view, not a copy).
Tensor batch_at_front(const Batched& x, int64_t size);
/// The batch dim shared by the mapped inputs if they all agree, else kNotMapped.
int64_t common_batch_dim(const std::vector<Batched>& xs);
/// Every input with the batch at dim `dim` (unmapped ones broadcast as views): what an
/// elementwise rule feeds to its primitive.
std::vector<Tensor> align_batch(const std::vector<Batched>& xs, int64_t size, int64_t dim);

/// Reports to lanes::explain a broadcast of an unmapped value to the batch: a stride-0 view, or
/// a real copy (`materialized`) when a rule truly needs one.
void note_broadcast(const std::string& prim, const Shape& shape, DType dtype, bool materialized);
/// Reports to lanes::explain a primitive run by the per-example loop.
void note_fallback(const std::string& prim);
/// Reports to lanes::explain how a batched cond or while ran: "cond: partition (...)".
void note_control_flow(const std::string& what);
/// Reports to lanes::explain that a vmap ran its batch in chunks, and why.
void note_chunking(const std::string& what);
/// Reports to lanes::explain a custom rule vmap used: "custom_vmap rule 'name' ran ...".
void note_custom_rule(const std::string& what);

}  // namespace lanes::batching

namespace lanes::detail {
class VmapRecord;
/// The core of vmap: runs g's batching rules on inputs holding `size` examples (each with its
/// batch dim, or unmapped) and returns the outputs with theirs. Ops on traced inputs record,
/// which is how a control-flow primitive batches its sub-graphs.
/// Per node of g, whether some output of g depends on it (batching skips the others).
std::vector<bool> live_nodes(const Graph& g);
std::vector<Batched> batch_graph(const Graph& g, std::vector<Batched> inputs, int64_t size,
                                 VmapRecord* record = nullptr);
}  // namespace lanes::detail
