// vmap on concrete inputs: the batched graph of a traced example, optimized and fused like
// compile's, cached by what the example graph is.
//
// vmap must trace f on every call: f may capture different tensors each time (jax.vmap does not
// cache either). But the example graph identifies the function (src/ir/graph_key.h), so with the
// batch plan it keys the batched graph. A hit skips batching, the passes and fusion: the call
// costs the trace plus the optimized execution. The first call with a key runs eagerly; the
// second builds the entry. When f applies a transform (grad, jacrev), its body is built on the
// second call (src/ir/call.cpp), which changes the key once: the entry comes on the third.
#include <mutex>

#include "ir/graph_key.h"
#include "lanes/compile.h"
#include "lanes/vmap.h"
#include "primitives/collectives.h"

namespace lanes::detail {

namespace {

constexpr size_t kEntries = 8;  // batched graphs kept per vmap
constexpr size_t kSeen = 16;    // keys remembered from calls that ran unoptimized

std::string graph_key(const Graph& g, const std::vector<Tensor>& leaves, const VmapPlan& plan,
                      const std::vector<AxisLeaf>& out_axes, const VmapOptions& options,
                      bool bake) {
  GraphKey w;
  w.add(bake);  // the last leaf is then a constant of the entry: the identity of its type
  w.add(static_cast<int64_t>(leaves.size()));
  for (size_t i = 0; i < leaves.size(); ++i) {
    w.add({leaves[i].shape(), leaves[i].dtype()});
    w.add(plan.dims[i]);
  }
  w.add(static_cast<int64_t>(out_axes.size()));
  for (const AxisLeaf& a : out_axes) {
    w.add(a.axis.has_value());  // out_axes may be negative: -1 is an axis, not "none"
    w.add(a.axis.value_or(0));
  }
  w.add(options.fallback == Fallback::Error);
  w.add(static_cast<int64_t>(options.cond));  // control-flow nodes carry their strategy
  w.add(static_cast<int64_t>(options.loop));
  if (const ShardContext* shard = current_shard()) {  // a sharded vmap's offset and counts
    w.add(shard->offset);
    for (int64_t n : shard->counts) w.add(n);
  }
  w.add(g);
  return std::move(w.key);
}

struct Entry {
  Graph batched;               // optimized and fused
  std::vector<Tensor> pinned;  // the example's constants, in order: their addresses stay ours
};

// Bases up to this size are baked: an entry holds its basis, and a vmap holds up to kEntries.
constexpr size_t kMaxBakedBasisBytes = size_t{4} << 20;

// The batched graph with its last input made the constant c: the passes then fold what c makes
// known (a captured W times the identity is W), within their usual limits on what they keep.
Graph with_last_input_constant(Graph g, const Tensor& c) {
  g.constants.emplace_back(g.inputs.back(), c);
  g.inputs.pop_back();
  return g;
}

}  // namespace

struct Seen {};  // a key met once, run without building its entry

struct VmapCache::State {
  bool identity_last = false;  // the last leaf is always the identity basis of its type
  std::mutex mutex;
  BoundedMap<std::shared_ptr<const Entry>> entries;
  BoundedMap<Seen> seen;
};

VmapCache::VmapCache() : state_(std::make_shared<State>()) {}

VmapCache VmapCache::for_jacobian() {
  VmapCache cache;
  cache.state_->identity_last = true;
  return cache;
}

size_t VmapCache::size() const {
  std::lock_guard<std::mutex> lock(state_->mutex);
  return state_->entries.map.size();
}

std::vector<Tensor> VmapCache::run(const Graph& g, const std::vector<Tensor>& leaves,
                                   const VmapPlan& plan, const std::vector<AxisLeaf>& out_axes,
                                   const VmapOptions& options, Use use) const {
  State& s = *state_;
  const bool bake =
      use.bake_basis && s.identity_last && !leaves.empty() &&
      size_t(leaves.back().numel()) * dtype_size(leaves.back().dtype()) <= kMaxBakedBasisBytes;
  const std::string key = graph_key(g, leaves, plan, out_axes, options, bake);
  std::shared_ptr<const Entry> entry;
  bool first_sighting = false;
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    if (auto it = s.entries.map.find(key); it != s.entries.map.end()) {
      entry = it->second;
    } else if (!use.build_now && !s.seen.map.count(key)) {
      s.seen.add(key, Seen{}, kSeen);
      first_sighting = true;
    }
  }
  // A first sighting runs the batching rules eagerly, so a vmap called once (a Jacobian in a
  // loop, a function capturing fresh tensors every call) never pays for the passes; a hash
  // collision does too, rather than evict the entry.
  if (first_sighting || (entry && !same_constants(g, entry->pinned)))
    return run_vmap(g, leaves, plan, out_axes, options);
  if (!entry) {
    // Batch the example symbolically (the leaves become inputs of a new trace), then optimize.
    TraceScope scope;
    std::vector<Tensor> traced;
    for (const Tensor& leaf : leaves) traced.push_back(scope.input({leaf.shape(), leaf.dtype()}));
    Graph batched = scope.finish(run_vmap(g, traced, plan, out_axes, options));
    if (bake) batched = with_last_input_constant(std::move(batched), leaves.back());
    auto fresh = std::make_shared<Entry>();
    fresh->batched = fuse_elementwise(optimize(batched));
    fresh->pinned = constants_of(g);
    std::lock_guard<std::mutex> lock(s.mutex);
    s.entries.add(key, fresh, kEntries);
    entry = std::move(fresh);
  }
  if (!bake) return execute(entry->batched, leaves);
  return execute(entry->batched, std::vector<Tensor>(leaves.begin(), leaves.end() - 1));
}

}  // namespace lanes::detail
