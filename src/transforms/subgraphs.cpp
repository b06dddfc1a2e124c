#include "transforms/subgraphs.h"

#include <cmath>
#include <optional>

#include "ir/graph_key.h"
#include "ir/trace.h"
#include "lanes/autodiff.h"
#include "lanes/compile.h"
#include "transforms/batching.h"

namespace lanes::detail {

Closed close_graph(Graph g) {
  Closed c;
  std::vector<ValueId> inputs(g.inputs.begin(),
                              g.inputs.begin() + int64_t(g.num_explicit_inputs()));
  for (auto& [v, t] : g.constants) {
    inputs.push_back(v);
    c.lifted.push_back(std::move(t));
  }
  for (size_t i = g.num_explicit_inputs(); i < g.inputs.size(); ++i) inputs.push_back(g.inputs[i]);
  for (Tensor& t : g.captured) c.lifted.push_back(std::move(t));
  g.constants.clear();
  g.captured.clear();
  g.inputs = std::move(inputs);
  c.graph = std::make_shared<const Graph>(std::move(g));
  return c;
}

Closed trace_closed(const std::vector<TensorType>& types,
                    const std::function<std::vector<Tensor>(const std::vector<Tensor>&)>& body) {
  TraceScope scope;
  std::vector<Tensor> args;
  for (const TensorType& t : types) args.push_back(scope.input(t));
  return close_graph(scope.finish(body(args)));
}

GraphPtr with_unused_inputs(const Graph& g, size_t at, const std::vector<TensorType>& extra) {
  if (extra.empty()) return std::make_shared<const Graph>(g);
  Graph out = g;
  std::vector<ValueId> ids;
  for (const TensorType& t : extra) ids.push_back(out.add_value(t));
  out.inputs.insert(out.inputs.begin() + int64_t(at), ids.begin(), ids.end());
  return std::make_shared<const Graph>(std::move(out));
}

namespace {

struct RefIds {
  std::mutex mutex;
  BoundedMap<int64_t> ids;
  int64_t next = 1;
};

RefIds& ref_ids() {
  static RefIds r;
  return r;
}

}  // namespace

std::string ref(const Graph& g) {
  GraphKey k;
  k.add(g);
  RefIds& r = ref_ids();
  std::lock_guard<std::mutex> lock(r.mutex);
  auto it = r.ids.map.find(k.key);
  if (it == r.ids.map.end()) {
    r.ids.add(k.key, r.next++, 1024);  // an evicted graph gets a new id: a miss, never a clash
    it = r.ids.map.find(k.key);
  }
  return "#" + std::to_string(it->second);
}

size_t subgraph_id_entries() {
  RefIds& r = ref_ids();
  std::lock_guard<std::mutex> lock(r.mutex);
  return r.ids.map.size();
}

std::vector<TensorType> input_types(const Graph& g) {
  std::vector<TensorType> out;
  for (ValueId v : g.inputs) out.push_back(g.types[v]);
  return out;
}

std::vector<TensorType> output_types(const Graph& g) {
  std::vector<TensorType> out;
  for (ValueId v : g.outputs) out.push_back(g.types[v]);
  return out;
}

bool holds_loop(const Graph& g) {
  for (const Node& n : g.nodes) {
    const std::string name = n.prim->name();
    if (name == "while" || name == "while_vjp" || name == "scan") return true;
    for (const auto& [label, sub] : n.prim->subgraphs())
      if (holds_loop(*sub)) return true;
  }
  return false;
}

const Node* find_collective(const Graph& g, const std::string& axis) {
  for (const Node& n : g.nodes) {
    const std::string* name = n.prim->axis_name();
    if (name && *name == axis) return &n;
    for (const auto& [label, sub] : n.prim->subgraphs())
      if (const Node* c = find_collective(*sub, axis)) return c;
  }
  return nullptr;
}

double work_of(const Graph& g) {
  double work = 0;
  for (const Node& n : g.nodes) {
    double out = 0;
    for (ValueId v : n.outputs) out += double(shape_numel(g.types[v].shape));
    if (n.prim->name() == "dot_general" && out > 0) {
      // sqrt(lhs rhs out) is M N K for one product (and over-counts batched ones a little).
      const double lhs = double(shape_numel(g.types[n.inputs[0]].shape));
      const double rhs = double(shape_numel(g.types[n.inputs[1]].shape));
      out = std::sqrt(lhs * rhs * out);
    }
    work += out;
    for (const auto& [label, sub] : n.prim->subgraphs()) work += work_of(*sub);
  }
  return work;
}

std::vector<bool> mapped_outputs(const Graph& g, const std::vector<bool>& in_mapped, int64_t) {
  // A value is mapped when it depends on a mapped input, which is what batch_graph makes of it
  // (a rule may keep an output unmapped, never the reverse; forcing those is always correct).
  std::vector<bool> mapped(g.types.size(), false);
  for (size_t i = 0; i < g.inputs.size(); ++i) mapped[g.inputs[i]] = in_mapped[i];
  for (const Node& n : g.nodes) {
    bool any = false;
    for (ValueId v : n.inputs) any = any || mapped[v];
    for (ValueId v : n.outputs) mapped[v] = any;
  }
  std::vector<bool> out;
  for (ValueId v : g.outputs) out.push_back(mapped[v]);
  return out;
}

BatchedGraph batch_subgraph(const Graph& g, const std::vector<bool>& in_mapped, int64_t size,
                            const std::vector<bool>& force, bool lockstep) {
  std::vector<bool> out_mapped = mapped_outputs(g, in_mapped, size);
  for (size_t k = 0; k < out_mapped.size(); ++k) out_mapped[k] = out_mapped[k] || force[k];
  std::optional<batching::SubgraphScope> in_subgraph;
  if (!lockstep) in_subgraph.emplace();
  TraceScope scope;
  std::vector<Batched> inputs;
  for (size_t i = 0; i < g.inputs.size(); ++i) {
    TensorType t = g.types[g.inputs[i]];
    if (in_mapped[i]) t.shape.insert(t.shape.begin(), size);
    inputs.push_back({scope.input(t), in_mapped[i] ? 0 : kNotMapped});
  }
  const std::vector<Batched> outs = batch_graph(g, std::move(inputs), size);
  std::vector<Tensor> results;
  for (size_t k = 0; k < outs.size(); ++k) {
    check(outs[k].mapped() <= out_mapped[k], "vmap: a batching rule mapped output ", k,
          " of a sub-graph that depends on no mapped input (a bug in lanes)");
    results.push_back(out_mapped[k] ? batching::batch_at_front(outs[k], size) : outs[k].value);
  }
  return {close_graph(scope.finish(results)), out_mapped};
}

bool has_tangent(const TensorType& t) { return is_floating(t.dtype); }

Closed jvp_subgraph(const Graph& g, const std::vector<bool>& with) {
  std::vector<TensorType> types = input_types(g);
  for (size_t i = 0; i < g.inputs.size(); ++i)
    if (with[i]) types.push_back(g.types[g.inputs[i]]);
  const size_t n = g.inputs.size();
  return trace_closed(types, [&](const std::vector<Tensor>& args) {
    std::vector<Tensor> primals(args.begin(), args.begin() + int64_t(n)), tangents(n);
    size_t next = n;
    for (size_t i = 0; i < n; ++i)
      if (with[i]) tangents[i] = args[next++];
    auto [ys, ts] = jvp_graph(g, primals, tangents);
    ys.insert(ys.end(), ts.begin(), ts.end());
    return ys;
  });
}

Closed vjp_subgraph(const Graph& g, const std::vector<bool>& wrt) {
  std::vector<TensorType> types = input_types(g);
  for (ValueId v : g.outputs)
    if (has_tangent(g.types[v])) types.push_back(g.types[v]);
  const size_t n = g.inputs.size();
  return trace_closed(types, [&](const std::vector<Tensor>& args) {
    const std::vector<Tensor> primals(args.begin(), args.begin() + int64_t(n));
    std::vector<Tensor> cts;
    size_t next = n;
    for (ValueId v : g.outputs) cts.push_back(has_tangent(g.types[v]) ? args[next++] : Tensor());
    const std::vector<Tensor> all = vjp_graph(g, primals, wrt).backward(cts);
    std::vector<Tensor> kept;
    for (size_t i = 0; i < n; ++i)
      if (wrt[i]) kept.push_back(all[i]);
    return kept;
  });
}

// ---- running sub-graphs ----------------------------------------------------------------------

GraphRunner::GraphRunner(GraphPtr g) : g_(std::move(g)) {}

namespace {
// Optimized graphs by structure: a closed graph's structure is its function, so eager control
// flow, which traces and builds new nodes on every call, optimizes each body once.
std::shared_ptr<const Graph> optimized_by_structure(const Graph& g) {
  static std::mutex mutex;
  static BoundedMap<std::shared_ptr<const Graph>> cache;
  const std::string key = ref(g);
  {
    std::lock_guard<std::mutex> lock(mutex);
    if (auto it = cache.map.find(key); it != cache.map.end()) return it->second;
  }
  auto opt = std::make_shared<const Graph>(fuse_elementwise(optimize(g)));
  std::lock_guard<std::mutex> lock(mutex);
  cache.add(key, opt, 256);
  return opt;
}
}  // namespace

std::vector<Tensor> GraphRunner::operator()(const std::vector<Tensor>& inputs) const {
  std::call_once(once_, [&] { optimized_ = optimized_by_structure(*g_); });
  return execute(*optimized_, inputs);
}

LaneRunners::LaneRunners(GraphPtr g, std::vector<bool> in_mapped, VmapOptions options)
    : g_(std::move(g)), in_mapped_(std::move(in_mapped)), options_(options) {}

namespace {
// A batched graph's runner with the tensors its batching rules made, fed as its last inputs.
class BatchedRunner : public GraphRunner {
 public:
  explicit BatchedRunner(Closed c)
      : GraphRunner(std::move(c.graph)), lifted_(std::move(c.lifted)) {}
  std::vector<Tensor> run(std::vector<Tensor> inputs) const {
    inputs.insert(inputs.end(), lifted_.begin(), lifted_.end());
    return (*this)(inputs);
  }

 private:
  std::vector<Tensor> lifted_;
};
}  // namespace

std::shared_ptr<const GraphRunner> LaneRunners::runner(int64_t size) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = runners_.find(size);
  if (it != runners_.end()) return it->second;
  batching::OptionsScope scope(options_);
  BatchedGraph b =
      batch_subgraph(*g_, in_mapped_, size, std::vector<bool>(g_->outputs.size(), true));
  auto r = std::make_shared<const BatchedRunner>(std::move(b.closed));
  runners_.emplace(size, r);
  return r;
}

std::vector<Tensor> LaneRunners::run(int64_t size, const std::vector<Tensor>& inputs) const {
  const auto r = runner(size);
  return static_cast<const BatchedRunner&>(*r).run(inputs);
}

SplitBody split_invariant(const Graph& g, const std::vector<bool>& invariant) {
  std::vector<bool> inv(g.types.size(), false);
  for (size_t i = 0; i < g.inputs.size(); ++i) inv[g.inputs[i]] = invariant[i];
  for (const auto& [v, t] : g.constants) inv[v] = true;
  Graph pre, main;
  pre.types = main.types = g.types;
  pre.constants = main.constants = g.constants;
  std::vector<bool> node_inv(g.nodes.size());
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    bool all = true;
    for (ValueId v : g.nodes[i].inputs) all = all && inv[v];
    node_inv[i] = all;
    for (ValueId v : g.nodes[i].outputs) inv[v] = all;
    (all ? pre : main).nodes.push_back(g.nodes[i]);
  }
  if (pre.nodes.empty()) return {nullptr, std::make_shared<const Graph>(g)};
  // The hoisted values main reads: outputs of pre's nodes used by main's nodes or returned.
  std::vector<bool> made(g.types.size(), false), wanted(g.types.size(), false);
  for (const Node& n : pre.nodes)
    for (ValueId v : n.outputs) made[v] = true;
  for (const Node& n : main.nodes)
    for (ValueId v : n.inputs) wanted[v] = wanted[v] || made[v];
  for (ValueId v : g.outputs) wanted[v] = wanted[v] || made[v];
  for (size_t i = 0; i < g.inputs.size(); ++i)
    if (invariant[i]) pre.inputs.push_back(g.inputs[i]);
  main.inputs = g.inputs;
  for (size_t v = 0; v < g.types.size(); ++v)
    if (wanted[v]) {
      pre.outputs.push_back(ValueId(v));
      main.inputs.push_back(ValueId(v));
    }
  main.outputs = g.outputs;
  return {std::make_shared<const Graph>(std::move(pre)),
          std::make_shared<const Graph>(std::move(main))};
}

LoopBody::LoopBody(GraphPtr g, std::vector<bool> invariant) : invariant_(std::move(invariant)) {
  SplitBody s = split_invariant(*g, invariant_);
  if (s.pre) pre_ = std::make_shared<GraphRunner>(std::move(s.pre));
  main_ = std::make_shared<GraphRunner>(std::move(s.main));
}

std::vector<Tensor> LoopBody::start(const std::vector<Tensor>& inputs) const {
  if (!pre_) return {};
  std::vector<Tensor> in;
  for (size_t i = 0; i < inputs.size(); ++i)
    if (invariant_[i]) in.push_back(inputs[i]);
  return (*pre_)(in);
}

std::vector<Tensor> LoopBody::step(std::vector<Tensor> inputs,
                                   const std::vector<Tensor>& hoisted) const {
  inputs.insert(inputs.end(), hoisted.begin(), hoisted.end());
  return (*main_)(inputs);
}

int64_t lane_bucket(int64_t n) {
  if (n <= 16) return n;
  int64_t step = 1;
  while ((n - 1) / step >= 32) step *= 2;  // n in (16 step, 32 step]: steps of `step`
  return (n + step - 1) / step * step;
}

}  // namespace lanes::detail
