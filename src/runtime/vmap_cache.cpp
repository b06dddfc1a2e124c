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
// costs the trace plus the optimized execution. The first call with a key runs eagerly; the
// second builds the entry.
#include <deque>
#include <mutex>
#include <string_view>
#include <unordered_map>

#include "lanes/compile.h"
#include "lanes/vmap.h"

namespace lanes::detail {

namespace {

constexpr size_t kEntries = 8;  // batched graphs kept per vmap
// Constants whose storage is at most this large are keyed by value: eager code inside f (a
// Jacobian's forward pass over a captured x, scalars, identity rows) recreates them on every
// trace. Larger ones are keyed by address.
constexpr size_t kValueBytes = size_t{64} << 10;
constexpr size_t kSeen = 16;  // keys remembered from calls that ran unoptimized

bool by_value(const Tensor& t) { return t.storage()->bytes() <= kValueBytes; }

std::string_view storage_bytes(const Tensor& t) {
  return {static_cast<const char*>(t.storage()->data()), t.storage()->bytes()};
}

// The key is binary: integers as their bytes, each list after its length, so that no two graphs
// share a key and building one costs no number formatting (it runs on every call).
struct KeyWriter {
  std::string key;
  void add(int64_t v) { key.append(reinterpret_cast<const char*>(&v), sizeof v); }
  void add(const std::vector<int64_t>& xs) {
    add(static_cast<int64_t>(xs.size()));
    key.append(reinterpret_cast<const char*>(xs.data()), xs.size() * sizeof(int64_t));
  }
  void add(const std::string& s) {
    add(static_cast<int64_t>(s.size()));
    key += s;
  }
  void add(const TensorType& t) {
    add(static_cast<int64_t>(t.dtype));
    add(t.shape);
  }
  // The view (dtype, shape, strides, offset) and either a hash of the storage's bytes - a hit
  // then compares the bytes themselves (same_values) - or the storage's address.
  void add_constant(const Tensor& t) {
    add({t.shape(), t.dtype()});
    add(t.strides());
    add(t.offset());
    add(by_value(t));
    add(by_value(t) ? static_cast<int64_t>(std::hash<std::string_view>{}(storage_bytes(t)))
                    : static_cast<int64_t>(reinterpret_cast<uintptr_t>(t.storage().get())));
  }
};

// Whether the constants keyed by value hold the same bytes (a hash match is not proof).
bool same_values(const Graph& g, const std::vector<Tensor>& pinned) {
  for (size_t i = 0; i < pinned.size(); ++i) {
    const Tensor& t = g.constants[i].second;
    if (by_value(t) && storage_bytes(t) != storage_bytes(pinned[i])) return false;
  }
  return true;
}

std::string graph_key(const Graph& g, const std::vector<Tensor>& leaves, const VmapPlan& plan,
                      const std::vector<AxisLeaf>& out_axes, const VmapOptions& options) {
  KeyWriter w;
  w.key.reserve(64 * (g.types.size() + g.nodes.size()));
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
  w.add(static_cast<int64_t>(g.types.size()));
  for (const TensorType& t : g.types) w.add(t);
  w.add(static_cast<int64_t>(g.constants.size()));
  for (const auto& [v, t] : g.constants) {
    w.add(v);
    w.add_constant(t);
  }
  w.add(static_cast<int64_t>(g.nodes.size()));
  for (const Node& n : g.nodes) {
    w.add(n.prim->name());
    w.add(n.prim->params());
    w.add(n.inputs);
    w.add(n.outputs);
  }
  w.add(g.inputs);
  w.add(g.outputs);
  return std::move(w.key);
}

struct Entry {
  Graph batched;               // optimized and fused
  std::vector<Tensor> pinned;  // the example's constants, in order: their addresses stay ours
};

}  // namespace

// Keys in a bounded FIFO: the oldest goes first when it is full.
template <class Value>
struct BoundedMap {
  std::unordered_map<std::string, Value> map;
  std::deque<std::string> order;  // oldest first
  void add(const std::string& key, Value value, size_t limit) {
    if (map.emplace(key, std::move(value)).second) order.push_back(key);
    while (order.size() > limit) {
      map.erase(order.front());
      order.pop_front();
    }
  }
};

struct Seen {};  // a key met once, run without building its entry

struct VmapCache::State {
  std::mutex mutex;
  BoundedMap<std::shared_ptr<const Entry>> entries;
  BoundedMap<Seen> seen;
};

VmapCache::VmapCache() : state_(std::make_shared<State>()) {}

size_t VmapCache::size() const {
  std::lock_guard<std::mutex> lock(state_->mutex);
  return state_->entries.map.size();
}

std::vector<Tensor> VmapCache::run(const Graph& g, const std::vector<Tensor>& leaves,
                                   const VmapPlan& plan, const std::vector<AxisLeaf>& out_axes,
                                   const VmapOptions& options) const {
  State& s = *state_;
  const std::string key = graph_key(g, leaves, plan, out_axes, options);
  std::shared_ptr<const Entry> entry;
  bool first_sighting = false;
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    if (auto it = s.entries.map.find(key); it != s.entries.map.end()) {
      entry = it->second;
    } else if (!s.seen.map.count(key)) {
      s.seen.add(key, Seen{}, kSeen);
      first_sighting = true;
    }
  }
  // A first sighting runs the batching rules eagerly, so a vmap called once (a Jacobian in a
  // loop, a function capturing fresh tensors every call) never pays for the passes; a hash
  // collision does too, rather than evict the entry.
  if (first_sighting || (entry && !same_values(g, entry->pinned)))
    return run_vmap(g, leaves, plan, out_axes, options);
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
    s.entries.add(key, fresh, kEntries);
    entry = std::move(fresh);
  }
  return execute(entry->batched, leaves);
}

}  // namespace lanes::detail
