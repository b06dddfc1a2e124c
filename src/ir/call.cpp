// Call nodes: a transform's result under an enclosing trace, recorded as one node whose body is
// a graph built once and cached (jax's closed_call; see call_cached in lanes/graph.h).
#include <atomic>
#include <mutex>

#include "ir/graph_key.h"
#include "ir/trace.h"
#include "transforms/explain_recorder.h"

namespace lanes::detail {

namespace {

constexpr size_t kBodies = 16;  // bodies kept
constexpr size_t kSeen = 64;    // keys seen once, whose bodies were not built
std::atomic<uint64_t> next_body_id{1};

// Only evaluation: transforms and passes inline a call before they look at its nodes
// (inline_calls), so no rule of theirs ever meets one.
class Call : public Primitive {
 public:
  Call(Graph body, uint64_t id, std::vector<Tensor> pinned)
      : body_(std::move(body)), id_(id), pinned_(std::move(pinned)) {}
  const Graph& body() const { return body_; }
  // The constants of the graph the body was built from, in order: the storage addresses in its
  // key stay theirs while the body lives.
  const std::vector<Tensor>& pinned() const { return pinned_; }

  std::string name() const override { return "call"; }
  // The id names the body for CSE and cache keys: ids are never reused and a body never changes.
  std::string params() const override { return "body=#" + std::to_string(id_); }
  std::vector<TensorType> infer(const std::vector<TensorType>& in) const override {
    check(in.size() == body_.inputs.size(), "call: ", in.size(), " inputs for a body of ",
          body_.inputs.size());
    for (size_t i = 0; i < in.size(); ++i) {
      const TensorType& want = body_.types[body_.inputs[i]];
      check(in[i] == want, "call: input ", i, " is ", fmt(in[i].shape), " ",
            dtype_name(in[i].dtype), ", the body takes ", fmt(want.shape), " ",
            dtype_name(want.dtype));
    }
    return output_types();
  }
  std::vector<Tensor> eval(const std::vector<Tensor>& in) const override {
    return eval_graph(body_, in);
  }
  std::vector<Batched> batch(const std::vector<Batched>&, int64_t) const override { inlined(); }
  std::vector<Tensor> jvp(const std::vector<Tensor>&, const std::vector<Tensor>&,
                          const std::vector<Tensor>&) const override {
    inlined();
  }
  std::vector<Tensor> vjp(const std::vector<Tensor>&, const std::vector<Tensor>&,
                          const std::vector<Tensor>&) const override {
    inlined();
  }

  std::vector<TensorType> output_types() const {
    std::vector<TensorType> out;
    for (ValueId v : body_.outputs) out.push_back(body_.types[v]);
    return out;
  }

 private:
  [[noreturn]] static void inlined() {
    fail("call: a transform met a call node that was not inlined (a bug in lanes)");
  }
  Graph body_;
  uint64_t id_;
  std::vector<Tensor> pinned_;
};

const Call* as_call(const Node& n) { return dynamic_cast<const Call*>(n.prim.get()); }

// Appends g's constants and nodes to `out`, call nodes expanded in place. `ids` maps g's values
// to out's; the caller has filled in g's inputs.
void append_inlined(Graph& out, const Graph& g, std::vector<ValueId>& ids) {
  for (const auto& [v, t] : g.constants) {
    ids[v] = out.add_value(g.types[v]);
    out.constants.emplace_back(ids[v], t);
  }
  for (const Node& n : g.nodes) {
    if (const Call* call = as_call(n)) {
      const Graph& body = call->body();
      std::vector<ValueId> inner(body.types.size(), -1);
      for (size_t i = 0; i < body.inputs.size(); ++i) inner[body.inputs[i]] = ids[n.inputs[i]];
      append_inlined(out, body, inner);
      for (size_t k = 0; k < n.outputs.size(); ++k) ids[n.outputs[k]] = inner[body.outputs[k]];
      continue;
    }
    Node m{n.prim, {}, {}};
    m.inputs.reserve(n.inputs.size());
    for (ValueId v : n.inputs) m.inputs.push_back(ids[v]);
    for (ValueId v : n.outputs) m.outputs.push_back(ids[v] = out.add_value(g.types[v]));
    out.nodes.push_back(std::move(m));
  }
}

struct Seen {};

struct Registry {
  std::mutex mutex;
  BoundedMap<std::shared_ptr<const Call>> bodies;
  BoundedMap<Seen> seen;
};

Registry& registry() {
  static Registry r;
  return r;
}

}  // namespace

size_t call_cache_entries() {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  return r.bodies.map.size() + r.seen.map.size();
}

bool has_calls(const Graph& g) {
  for (const Node& n : g.nodes)
    if (as_call(n)) return true;
  return false;
}

Graph inline_calls(Graph g) {
  if (!has_calls(g)) return g;
  Graph out;
  std::vector<ValueId> ids(g.types.size(), -1);
  for (ValueId v : g.inputs) ids[v] = out.add_value(g.types[v]);
  append_inlined(out, g, ids);
  for (ValueId v : g.inputs) out.inputs.push_back(ids[v]);
  for (ValueId v : g.outputs) out.outputs.push_back(ids[v]);
  out.captured = std::move(g.captured);
  return out;
}

std::vector<Tensor> call_cached(const Graph& g, const std::vector<Tensor>& inputs,
                                std::string_view tag, const CallBody& body) {
  TraceState* trace = owning_trace(inputs);
  check(trace != nullptr, "call: no input is traced");
  // explain reports what the batching rules do, so it sees them run, not a cached body.
  if (explaining()) return body(g, inputs);
  GraphKey k;
  k.add(tag);
  k.add(static_cast<int64_t>(inputs.size()));
  for (const Tensor& x : inputs) k.add({x.shape(), x.dtype()});
  k.add(g);
  Registry& r = registry();
  std::shared_ptr<const Call> call;
  bool first_sighting = false;
  {
    std::lock_guard<std::mutex> lock(r.mutex);
    if (auto it = r.bodies.map.find(k.key); it != r.bodies.map.end()) {
      call = it->second;
    } else if (!r.seen.map.count(k.key)) {
      r.seen.add(k.key, Seen{}, kSeen);
      first_sighting = true;
    }
  }
  // A first sighting records the transform in place, as does a hash collision on the
  // constants' bytes (which keeps the body it collided with).
  if (first_sighting || (call && !same_constants(g, call->pinned()))) return body(g, inputs);
  if (!call) {
    Graph traced;
    {
      TraceScope scope;
      std::vector<Tensor> args;
      for (const Tensor& x : inputs) args.push_back(scope.input({x.shape(), x.dtype()}));
      traced = scope.finish(body(g, args));
    }
    // Bodies only transform g, so nothing else can reach them; a body that did reach a tracer
    // of an enclosing trace would depend on more than its key, so it is recorded in place.
    if (!traced.captured.empty()) return body(g, inputs);
    call = std::make_shared<const Call>(std::move(traced), next_body_id++, constants_of(g));
    std::lock_guard<std::mutex> lock(r.mutex);
    r.bodies.add(k.key, call, kBodies);
  }
  return trace->record(call, inputs, call->output_types());
}

}  // namespace lanes::detail
