// vmap on concrete inputs: the batched graph of a traced example, optimized and fused like
// compile's, cached by what the example graph is.
//
// vmap must trace f on every call: f may capture different tensors each time (jax.vmap does not
// cache either). But two traces that record the same nodes over the same constants describe the
// same function, since primitives are pure and tensors immutable. So the key is the example
// graph itself - its nodes, types and the identity of its constants (storage, view) or, for
// small ones that eager code recreates on every trace, their bytes - plus the batch plan. The
// entry pins the constants it was keyed on, so a storage address in a key is never reused by
// another tensor while the entry lives. A hit skips batching, the passes and fusion: the call
// costs the trace plus the optimized execution.
#include <cstring>
#include <deque>
#include <mutex>
#include <unordered_map>

#include "lanes/compile.h"
#include "lanes/vmap.h"

namespace lanes::detail {

namespace {

constexpr size_t kEntries = 8;        // batched graphs kept per vmap
constexpr int64_t kValueBytes = 256;  // constants up to this size are keyed by value
constexpr int kMissesBeforeGivingUp = 4;

void append_constant(std::string& key, const Tensor& t) {
  key += dtype_name(t.dtype());
  key += shape_str(t.shape());
  const int64_t bytes = t.numel() * int64_t(dtype_size(t.dtype()));
  if (bytes <= kValueBytes) {
    const Tensor c = t.contiguous();
    key.append(static_cast<const char*>(c.raw_data()), size_t(bytes));
  } else {
    key += std::to_string(reinterpret_cast<uintptr_t>(t.storage().get()));
    key += '@' + std::to_string(t.offset()) + shape_str(t.strides());
  }
  key += ';';
}

std::string graph_key(const Graph& g, const std::vector<Tensor>& leaves, const VmapPlan& plan,
                      const std::vector<AxisLeaf>& out_axes, const VmapOptions& options) {
  std::string key;
  for (size_t i = 0; i < leaves.size(); ++i)
    key += dtype_name(leaves[i].dtype()) + shape_str(leaves[i].shape()) + '@' +
           std::to_string(plan.dims[i]) + ';';
  for (const AxisLeaf& a : out_axes) key += a.axis ? std::to_string(*a.axis) + ',' : "n,";
  key += options.fallback == Fallback::Error ? "E|" : "W|";
  for (const TensorType& t : g.types) key += dtype_name(t.dtype) + shape_str(t.shape);
  key += '|';
  for (const auto& [v, t] : g.constants) {
    key += std::to_string(v) + '=';
    append_constant(key, t);
  }
  for (const Node& n : g.nodes) {
    key += describe(*n.prim);
    for (ValueId v : n.inputs) key += ' ' + std::to_string(v);
    key += " ->";
    for (ValueId v : n.outputs) key += ' ' + std::to_string(v);
    key += '\n';
  }
  for (ValueId v : g.inputs) key += std::to_string(v) + ',';
  key += '|';
  for (ValueId v : g.outputs) key += std::to_string(v) + ',';
  return key;
}

struct Entry {
  Graph batched;               // optimized and fused
  std::vector<Tensor> pinned;  // the example's constants the key names by address
};

}  // namespace

struct VmapCache::State {
  std::mutex mutex;
  std::unordered_map<std::string, std::shared_ptr<const Entry>> entries;
  std::deque<std::string> order;  // oldest first
  int misses_in_a_row = 0;
  bool gave_up = false;
};

VmapCache::VmapCache() : state_(std::make_shared<State>()) {}

size_t VmapCache::size() const {
  std::lock_guard<std::mutex> lock(state_->mutex);
  return state_->entries.size();
}

std::vector<Tensor> VmapCache::run(const Graph& g, const std::vector<Tensor>& leaves,
                                   const VmapPlan& plan, const std::vector<AxisLeaf>& out_axes,
                                   const VmapOptions& options) const {
  State& s = *state_;
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    if (s.gave_up) return run_vmap(g, leaves, plan, out_axes, options);
  }
  const std::string key = graph_key(g, leaves, plan, out_axes, options);
  std::shared_ptr<const Entry> entry;
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    if (auto it = s.entries.find(key); it != s.entries.end()) {
      entry = it->second;
      s.misses_in_a_row = 0;
    }
  }
  if (!entry) {
    // Batch the example symbolically (the leaves become inputs of a new trace), then optimize.
    TraceScope scope;
    std::vector<Tensor> traced;
    for (const Tensor& leaf : leaves) traced.push_back(scope.input({leaf.shape(), leaf.dtype()}));
    const Graph batched = scope.finish(run_vmap(g, traced, plan, out_axes, options));
    auto fresh = std::make_shared<Entry>();
    fresh->batched = fuse_elementwise(optimize(batched));
    for (const auto& [v, t] : g.constants) fresh->pinned.push_back(t);
    std::lock_guard<std::mutex> lock(s.mutex);
    // A function that captures freshly computed large tensors misses every time: after a few
    // misses in a row this vmap stops paying for the passes and runs its batching rules eagerly.
    s.gave_up = ++s.misses_in_a_row >= kMissesBeforeGivingUp;
    if (s.entries.emplace(key, fresh).second) s.order.push_back(key);
    while (s.order.size() > kEntries) {
      s.entries.erase(s.order.front());
      s.order.pop_front();
    }
    entry = std::move(fresh);
  }
  return execute(entry->batched, leaves);
}

}  // namespace lanes::detail
