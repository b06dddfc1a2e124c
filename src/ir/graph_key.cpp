#include "ir/graph_key.h"

namespace lanes::detail {

namespace {

// Constants whose storage is at most this large are keyed by value: eager code inside f (a
// Jacobian's forward pass over a captured x, scalars, identity rows) recreates them on every
// trace. Larger ones are keyed by address.
constexpr size_t kValueBytes = size_t{64} << 10;

bool by_value(const Tensor& t) { return t.storage()->bytes() <= kValueBytes; }

std::string_view storage_bytes(const Tensor& t) {
  return {static_cast<const char*>(t.storage()->data()), t.storage()->bytes()};
}

// The view (dtype, shape, strides, offset) and either a hash of the storage's bytes or the
// storage's address.
void add_constant(GraphKey& k, const Tensor& t) {
  k.add({t.shape(), t.dtype()});
  k.add(t.strides());
  k.add(t.offset());
  k.add(by_value(t));
  k.add(by_value(t) ? static_cast<int64_t>(std::hash<std::string_view>{}(storage_bytes(t)))
                    : static_cast<int64_t>(reinterpret_cast<uintptr_t>(t.storage().get())));
}

}  // namespace

void GraphKey::add(const Graph& g) {
  key.reserve(key.size() + 64 * (g.types.size() + g.nodes.size()));
  add(static_cast<int64_t>(g.types.size()));
  for (const TensorType& t : g.types) add(t);
  add(static_cast<int64_t>(g.constants.size()));
  for (const auto& [v, t] : g.constants) {
    add(v);
    add_constant(*this, t);
  }
  add(static_cast<int64_t>(g.nodes.size()));
  for (const Node& n : g.nodes) {
    add(n.prim->name());
    add(n.prim->params());
    add(n.inputs);
    add(n.outputs);
  }
  add(g.inputs);
  add(g.outputs);
}

bool same_constants(const Graph& g, const std::vector<Tensor>& pinned) {
  if (pinned.size() != g.constants.size()) return false;
  for (size_t i = 0; i < pinned.size(); ++i) {
    const Tensor& t = g.constants[i].second;
    if (by_value(t) && storage_bytes(t) != storage_bytes(pinned[i])) return false;
  }
  return true;
}

std::vector<Tensor> constants_of(const Graph& g) {
  std::vector<Tensor> out;
  out.reserve(g.constants.size());
  for (const auto& [v, t] : g.constants) out.push_back(t);
  return out;
}

}  // namespace lanes::detail
