// Keys for caches of what a transform made of a traced graph (the vmap cache, call nodes).
//
// Two traces that record the same nodes over the same constants describe the same function,
// since primitives are pure and tensors immutable. So a key is the graph itself: its nodes,
// types and the identity of its constants (storage, view) or, for small ones that eager code
// recreates on every trace, a hash of their bytes. A cache entry pins the constants it was keyed
// on (so a storage address in a key is never reused by another tensor while the entry lives) and
// compares the hashed bytes on a hit (same_constants).
#pragma once

#include <deque>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "lanes/graph.h"

namespace lanes::detail {

// Binary: integers as their bytes, each list after its length, so that no two graphs share a key
// and building one costs no number formatting (it runs on every call).
struct GraphKey {
  std::string key;
  void add(int64_t v) { key.append(reinterpret_cast<const char*>(&v), sizeof v); }
  void add(const std::vector<int64_t>& xs) {
    add(static_cast<int64_t>(xs.size()));
    key.append(reinterpret_cast<const char*>(xs.data()), xs.size() * sizeof(int64_t));
  }
  void add(std::string_view s) {
    add(static_cast<int64_t>(s.size()));
    key += s;
  }
  void add(const TensorType& t) {
    add(static_cast<int64_t>(t.dtype));
    add(t.shape);
  }
  /// Everything g computes: types, constants, nodes, inputs and outputs.
  void add(const Graph& g);
};

/// Whether the constants of g keyed by value hold the bytes of `pinned` (the constants of the
/// graph an entry was built from, in order): a hash match is not proof.
bool same_constants(const Graph& g, const std::vector<Tensor>& pinned);

/// g's constants, for an entry to pin.
std::vector<Tensor> constants_of(const Graph& g);

/// Keys in a bounded FIFO: the oldest goes first when it is full.
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

/// Keys held by the process-wide caches, for the tests that check they stay bounded: call bodies
/// and keys seen once (src/ir/call.cpp), sub-graph ids (src/transforms/subgraphs.cpp).
size_t call_cache_entries();
size_t subgraph_id_entries();

}  // namespace lanes::detail
