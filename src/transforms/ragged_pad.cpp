// vmap over Ragged arguments by padding (RaggedStrategy::Pad, lanes/ragged.h), and Auto's choice
// between Pad and Group. The probing and the masked evaluation are in masking.cpp; here: the
// ragged symbols of a call, the per-signature cache, the cost estimates, and the run itself (one
// ordinary vmap of the masked graph over the padded leaves and the lanes' lengths).
#include <algorithm>
#include <limits>
#include <map>
#include <mutex>
#include <sstream>

#include "ir/graph_key.h"
#include "lanes/ops.h"
#include "lanes/vmap.h"
#include "primitives/dot_general.h"
#include "transforms/explain_recorder.h"
#include "transforms/masking.h"

namespace lanes::detail {

namespace {

using MaskedFn = std::function<std::vector<Tensor>(const std::vector<Tensor>&)>;

// The padded axes of a call: one symbol per distinct vector of per-example lengths.
struct Symbols {
  std::vector<std::vector<int64_t>> lengths;  // per symbol: each example's length
  std::vector<int64_t> extents;               // per symbol: the padded extent (the longest)
  std::vector<int64_t> shortest;              // per symbol
  std::vector<std::vector<int>> of;           // per Ragged, per axis: its symbol or -1
};

Symbols symbols_of(const std::vector<const Ragged*>& raggeds) {
  Symbols s;
  std::map<std::vector<int64_t>, int> index;
  for (const Ragged* r : raggeds) {
    const int64_t rank = r->size() ? (*r)[0].ndim() : 0;
    std::vector<int> axes(size_t(rank), -1);
    for (int64_t a = 0; a < rank; ++a) {
      std::vector<int64_t> n;
      for (const Tensor& e : r->examples()) n.push_back(e.shape(a));
      if (std::all_of(n.begin(), n.end(), [&](int64_t x) { return x == n[0]; })) continue;
      auto [it, fresh] = index.emplace(n, int(s.lengths.size()));
      if (fresh) {
        s.extents.push_back(*std::max_element(n.begin(), n.end()));
        s.shortest.push_back(*std::min_element(n.begin(), n.end()));
        s.lengths.push_back(std::move(n));
      }
      axes[size_t(a)] = it->second;
    }
    s.of.push_back(std::move(axes));
  }
  return s;
}

// The example types f is traced at: Ragged slots padded, symbol `bump` (if >= 0) one longer; or
// with `at`, every symbol at the extent `at` gives.
std::vector<TensorType> example_types(const std::vector<Tensor>& leaves,
                                      const std::vector<const Ragged*>& raggeds,
                                      const std::vector<std::optional<int64_t>>& in_axes,
                                      const Symbols& s, int bump,
                                      const std::vector<int64_t>* at = nullptr) {
  std::vector<TensorType> types;
  size_t r = 0;
  for (size_t i = 0; i < leaves.size(); ++i) {
    if (!leaves[i].defined()) {
      const Ragged& rg = *raggeds[r];
      Shape shape = rg[0].shape();
      for (size_t a = 0; a < shape.size(); ++a) {
        const int sym = s.of[r][a];
        if (sym >= 0)
          shape[a] = at ? (*at)[size_t(sym)] : s.extents[size_t(sym)] + (sym == bump ? 1 : 0);
      }
      types.push_back({shape, rg[0].dtype()});
      ++r;
    } else if (in_axes[i]) {
      Shape shape = leaves[i].shape();
      shape.erase(shape.begin() + *in_axes[i]);
      types.push_back({shape, leaves[i].dtype()});
    } else {
      types.push_back({leaves[i].shape(), leaves[i].dtype()});
    }
  }
  return types;
}

// What Pad made of one padded signature (f's graph A and the smallest lengths).
struct Entry {
  Graph graph;
  std::vector<Tensor> pinned;  // the constants the key names (graph_key.h)
  std::vector<Graph> probes;
  std::shared_ptr<const MaskedGraph> masked;
  std::string cannot;  // why Pad cannot run f; empty when it can
  std::shared_ptr<const Vmapped<MaskedFn>> inner;
};

}  // namespace

struct PadCache {
  std::mutex mutex;
  BoundedMap<std::shared_ptr<const Entry>> entries;
};

struct PadPlan {
  std::shared_ptr<const Entry> entry;
  Symbols symbols;
  std::vector<const Ragged*> raggeds;
  std::vector<VmapFrame::Hidden> hidden;  // this call's Generator keys (trace A's hidden inputs)
  int64_t size = 0;
  // Non-empty: pad within each of these buckets of examples (one padded call per bucket).
  std::vector<std::vector<int64_t>> buckets;
};

std::shared_ptr<PadCache> make_pad_cache() { return std::make_shared<PadCache>(); }

namespace {

std::shared_ptr<const Entry> build_entry(Graph a, const std::vector<VmapFrame::Hidden>& hidden,
                                         const TraceAt& trace_at, const std::vector<int64_t>& lanes,
                                         const std::vector<TensorType>& types_a,
                                         const std::vector<Tensor>& leaves,
                                         const std::vector<const Ragged*>& raggeds,
                                         const std::vector<std::optional<int64_t>>& in_axes,
                                         const Symbols& s, const VmapOptions& options) {
  auto e = std::make_shared<Entry>();
  e->pinned = constants_of(a);
  e->graph = inline_calls(std::move(a));
  try {
    // Probes: a trace that fails at a shape no example has means f cannot be padded.
    auto probe = [&](const std::vector<TensorType>& types) {
      try {
        return inline_calls(trace_at(types, lanes).graph);
      } catch (const CannotMask&) {
        throw;
      } catch (const Error& err) {
        throw CannotMask(std::string("f fails at another extent: ") + err.what());
      }
    };
    for (size_t k = 0; k < s.extents.size(); ++k)
      e->probes.push_back(probe(example_types(leaves, raggeds, in_axes, s, int(k))));
    std::vector<const Graph*> probes;
    for (const Graph& p : e->probes) probes.push_back(&p);
    e->masked = analyze_padding(e->graph, probes, s.extents);
    // Extents of 1 broadcast and squeeze: f traced at the shortest lengths must record the same
    // graph, each padded axis at its shortest extent.
    if (std::any_of(s.shortest.begin(), s.shortest.end(), [](int64_t n) { return n <= 1; })) {
      const Graph shortest = probe(example_types(leaves, raggeds, in_axes, s, -1, &s.shortest));
      check_at_shortest(*e->masked, shortest, s.shortest);
    }
    // Probing saw the extents n and n + 1 only: f traced at the shortest lengths (at least 2,
    // where ops take no shortcuts for extents of 0 and 1) must agree with what it found.
    std::vector<int64_t> at;
    for (size_t k = 0; k < s.extents.size(); ++k)
      at.push_back(std::min(s.extents[k], std::max<int64_t>(s.shortest[k], 2)));
    if (at != s.extents)
      verify_at(*e->masked, probe(example_types(leaves, raggeds, in_axes, s, -1, &at)), at);
    // The masking rules run while the masked function is traced: trace it once here, so that a
    // primitive without a rule is found now (and Auto can still group).
    const size_t n_in = e->graph.num_explicit_inputs(), n_sym = s.extents.size();
    const std::shared_ptr<const MaskedGraph> masked = e->masked;
    const std::vector<Tensor> captured = e->graph.captured;
    const std::vector<int64_t> shortest = s.shortest;
    MaskedFn fn = [masked, captured, shortest, n_in, n_sym](const std::vector<Tensor>& xs) {
      std::vector<Tensor> inputs(xs.begin(), xs.begin() + int64_t(n_in));
      inputs.insert(inputs.end(), captured.begin(), captured.end());
      const std::vector<Tensor> lengths(xs.begin() + int64_t(n_in),
                                        xs.begin() + int64_t(n_in + n_sym));
      return eval_masked(*masked, inputs, lengths, shortest);
    };
    std::vector<Tensor> example;
    for (const TensorType& t : types_a) example.push_back(Tensor::empty(t.shape, t.dtype));
    for (const VmapFrame::Hidden& h : hidden) {  // a Generator's key: each lane's, or one
      Shape shape = h.value.shape();
      if (h.mapped) shape.erase(shape.begin());
      example.push_back(Tensor::empty(shape, h.value.dtype()));
    }
    for (size_t k = 0; k < n_sym; ++k) example.push_back(scalar(1, DType::Int64));
    (void)make_graph(fn)(example);
    std::vector<AxisSpec> axes;
    for (size_t i = 0; i < leaves.size(); ++i)
      axes.push_back(!leaves[i].defined() ? AxisSpec(0)
                     : in_axes[i]         ? AxisSpec(*in_axes[i])
                                          : AxisSpec(none));
    for (const VmapFrame::Hidden& h : hidden)
      axes.push_back(h.mapped ? AxisSpec(0) : AxisSpec(none));
    for (size_t k = 0; k < n_sym; ++k) axes.push_back(AxisSpec(0));
    VmapOptions inner = options;
    inner.ragged = RaggedStrategy::Group;
    e->inner = std::make_shared<const Vmapped<MaskedFn>>(
        std::move(fn), AxisSpec(std::vector<AxisSpec>{AxisSpec(std::move(axes))}), AxisSpec(0),
        inner);
  } catch (const CannotMask& err) {
    e->cannot = err.what();
  }
  return e;
}

// Estimated cost of running g on `lanes` lanes whose symbols have extents `ext`, in units of one
// element of elementwise work: per node run a fixed overhead plus its work (a product's
// multiply-adds count an eighth: GEMM kernels do them that much faster), a scan's body once per
// step.
// Fitted on this machine's ragged_lstm and ragged_attention rows (bench/README.md): a unit is
// about 45 ps of a padded run, a node run's dispatch about 1.3 us on small batches, tracing and
// keying a node about 1 us.
constexpr double kMultiplyAdd = 0.125;   // a GEMM's multiply-add against an elementwise op
constexpr double kNodeOverhead = 30000;  // per node run
constexpr double kTraceCost = 20000;     // per node traced, once per call

struct Cost {
  double overhead = 0, work = 0;
  double total() const { return overhead + work; }
};

Cost run_cost(const MaskedGraph& mg, const std::vector<double>& ext, double lanes) {
  const Graph& g = *mg.graph;
  auto extent = [&](ValueId v, size_t ax) {
    const AxisTag& t = mg.tags[size_t(v)][ax];
    return t.ragged() ? std::max(0.0, ext[size_t(t.symbol)] + double(t.offset))
                      : double(g.types[size_t(v)].shape[ax]);
  };
  auto numel = [&](ValueId v) {
    double n = 1;
    for (size_t ax = 0; ax < g.types[size_t(v)].shape.size(); ++ax) n *= extent(v, ax);
    return n;
  };
  Cost total;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& n = g.nodes[i];
    double work = 0;
    for (ValueId v : n.outputs) work += numel(v);
    for (ValueId v : n.inputs) work = std::max(work, numel(v));
    if (const auto* dot = dynamic_cast<const prim::DotGeneral*>(n.prim.get())) {
      double contracted = 1;  // multiply-adds per output element
      for (int64_t ax : dot->lhs_contracting()) contracted *= extent(n.inputs[0], size_t(ax));
      work = numel(n.outputs[0]) * (1 + contracted * kMultiplyAdd);
    }
    // A scan runs its body once per step: the length its xs lead with (a while: once).
    double steps = 1;
    if (n.prim->name() == "scan")
      for (ValueId v : n.inputs)
        if (!g.types[size_t(v)].shape.empty() && mg.tags[size_t(v)][0].ragged())
          steps = extent(v, 0);
    total.overhead += kNodeOverhead;
    total.work += lanes * work;
    for (const auto& sub : mg.subgraphs[i]) {
      const Cost c = run_cost(*sub, ext, lanes);
      total.overhead += steps * c.overhead;
      total.work += steps * c.work;
    }
  }
  return total;
}

size_t node_count(const MaskedGraph& mg) {
  size_t n = mg.graph->nodes.size();
  for (const auto& subs : mg.subgraphs)
    for (const auto& s : subs) n += node_count(*s);
  return n;
}

}  // namespace

namespace {

// The examples in buckets of lengths within `ratio` of each bucket's shortest (one symbol),
// shortest first; each bucket in example order.
std::vector<std::vector<int64_t>> buckets_of(const std::vector<int64_t>& lengths, double ratio) {
  std::vector<int64_t> order(lengths.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = int64_t(i);
  std::stable_sort(order.begin(), order.end(),
                   [&](int64_t a, int64_t b) { return lengths[size_t(a)] < lengths[size_t(b)]; });
  std::vector<std::vector<int64_t>> out;
  double limit = -1;
  for (int64_t i : order) {
    const int64_t n = lengths[size_t(i)];
    if (out.empty() || double(n) > limit) {
      out.emplace_back();
      limit = ratio * double(std::max<int64_t>(n, 1));
    }
    out.back().push_back(i);
  }
  for (std::vector<int64_t>& b : out) std::sort(b.begin(), b.end());
  return out;
}

// A padded call per bucket: each pays its traces, and pads to its own longest.
double buckets_cost(const MaskedGraph& mg, const std::vector<std::vector<int64_t>>& buckets,
                    const std::vector<int64_t>& lengths, double* work) {
  const double nodes = double(node_count(mg));
  double total = 0;
  for (const std::vector<int64_t>& b : buckets) {
    int64_t longest = 0;
    for (int64_t i : b) longest = std::max(longest, lengths[size_t(i)]);
    const Cost c = run_cost(mg, {double(longest)}, double(b.size()));
    total += c.total() + 2 * kTraceCost * nodes;
    *work += c.work;
  }
  return total;
}

}  // namespace

std::shared_ptr<const PadPlan> plan_padded(PadCache& cache, const TraceAt& trace_at,
                                           const std::vector<const Ragged*>& raggeds,
                                           const std::vector<Tensor>& leaves,
                                           const std::vector<std::optional<int64_t>>& in_axes,
                                           size_t num_groups, const VmapOptions& options,
                                           std::vector<int64_t> lanes) {
  const bool must = options.ragged == RaggedStrategy::Pad;
  auto plan = std::make_shared<PadPlan>();
  plan->symbols = symbols_of(raggeds);
  plan->raggeds = raggeds;
  plan->size = raggeds.front()->size();
  if (plan->size == 0) {
    check(!must, "vmap: RaggedStrategy::Pad over Ragged arguments with no examples");
    return nullptr;
  }
  const Symbols& s = plan->symbols;
  const std::vector<TensorType> types = example_types(leaves, raggeds, in_axes, s, -1);
  if (lanes.empty())
    for (int64_t i = 0; i < plan->size; ++i) lanes.push_back(i);
  // f may fail at the padded shapes where each example works (a collective over the vmap's axis,
  // a broadcast of an extent of 1): Auto then groups; Pad reports it.
  TracedExample traced;
  try {
    traced = trace_at(types, lanes);
  } catch (const Error& err) {
    check(!must, "vmap: RaggedStrategy::Pad cannot run this function: f fails at the padded ",
          "shapes: ", err.what(), "; use RaggedStrategy::Group");
    if (explaining())
      note_ragged(std::string("group: f fails at the padded shapes: ") + err.what());
    return nullptr;
  }
  plan->hidden = traced.hidden;
  // Traced values of an enclosing transform (f inside grad) are new on every call: no cache.
  const bool cacheable = traced.graph.captured.empty();
  GraphKey key;
  key.add(traced.graph);
  key.add(s.shortest);
  for (const std::vector<int>& axes : s.of)
    for (int sym : axes) key.add(int64_t(sym));
  if (cacheable) {
    std::lock_guard<std::mutex> lock(cache.mutex);
    auto it = cache.entries.map.find(key.key);
    if (it != cache.entries.map.end() && same_constants(traced.graph, it->second->pinned))
      plan->entry = it->second;
  }
  if (!plan->entry) {
    plan->entry = build_entry(std::move(traced.graph), plan->hidden, trace_at, lanes, types, leaves,
                              raggeds, in_axes, s, options);
    if (cacheable) {
      std::lock_guard<std::mutex> lock(cache.mutex);
      cache.entries.map.erase(key.key);  // a stale entry whose constants' bytes differed
      cache.entries.add(key.key, plan->entry, 64);
    }
  }
  const Entry& e = *plan->entry;
  if (!e.cannot.empty()) {
    check(!must, "vmap: RaggedStrategy::Pad cannot run this function: ", e.cannot,
          "; use RaggedStrategy::Group");
    if (explaining()) note_ragged("group: " + e.cannot);
    return nullptr;
  }
  if (must && !explaining()) return plan;
  if (s.extents
          .empty()) {  // one shape: the ordinary vmap over the stacked examples, nothing masked
    if (explaining()) note_ragged("pad: every example has one shape (nothing to mask)");
    return plan;
  }
  // Auto: the padded run against the groups' runs, in the same units.
  const double nodes = double(node_count(*e.masked));
  const Cost padded = run_cost(*e.masked, std::vector<double>(s.extents.begin(), s.extents.end()),
                               double(plan->size));
  const double pad_cost = padded.total() + 2 * kTraceCost * nodes;
  std::map<std::vector<int64_t>, int64_t> members;  // each example's lengths -> how many
  for (int64_t i = 0; i < plan->size; ++i) {
    std::vector<int64_t> n;
    for (const std::vector<int64_t>& l : s.lengths) n.push_back(l[size_t(i)]);
    ++members[n];
  }
  double group_cost = kTraceCost * nodes * double(num_groups), real = 0;
  for (const auto& [n, count] : members) {
    const Cost c = run_cost(*e.masked, std::vector<double>(n.begin(), n.end()), double(count));
    group_cost += c.total();
    real += c.work;
  }
  // Buckets of lengths within a ratio (one ragged length only): fewer calls than groups, less
  // padding than one call. The best ratio by estimate.
  double bucket_cost = std::numeric_limits<double>::infinity(), bucket_work = 0, ratio = 0;
  if (!must && s.lengths.size() == 1)
    for (double r : {1.15, 1.3, 1.5, 2.0, 3.0}) {
      std::vector<std::vector<int64_t>> b = buckets_of(s.lengths[0], r);
      if (b.size() < 2 || b.size() >= num_groups) continue;
      double w = 0;
      const double c = buckets_cost(*e.masked, b, s.lengths[0], &w);
      if (c < bucket_cost) {
        bucket_cost = c, bucket_work = w, ratio = r;
        plan->buckets = std::move(b);
      }
    }
  const bool bucketed = !plan->buckets.empty() && bucket_cost < std::min(pad_cost, group_cost);
  if (!bucketed) plan->buckets.clear();
  const bool pad = must || bucketed || pad_cost <= group_cost;
  if (explaining()) {
    auto share = [&](double w) { return int(100 * std::max(0.0, 1 - real / std::max(w, 1.0))); };
    std::ostringstream os;
    if (bucketed)
      os << "buckets: " << plan->buckets.size() << " padded calls over lengths within " << ratio
         << "x, padding " << share(bucket_work) << "% of their work; ";
    else
      os << (pad ? "pad" : "group") << ": ";
    os << num_groups << " distinct shapes, padding " << share(padded.work)
       << "% of the padded work; estimated cost pad " << pad_cost << ", group " << group_cost;
    if (ratio > 0) os << ", buckets " << bucket_cost;
    os << (must ? " (Pad asked for)" : "");
    note_ragged(os.str());
  }
  return pad ? plan : nullptr;
}

namespace {

// One padded call per bucket, the examples put back in order.
// The examples `members` of the plan's batch in one padded call: their outputs, in order.
std::vector<Ragged> run_part(PadCache& cache, const TraceAt& trace_at, const PadPlan& plan,
                             const std::vector<int64_t>& members, const std::vector<Tensor>& leaves,
                             const std::vector<std::optional<int64_t>>& in_axes,
                             const std::vector<std::optional<int64_t>>& out_axes,
                             const VmapOptions& pad) {
  std::vector<Ragged> parts;
  for (const Ragged* r : plan.raggeds) {
    std::vector<Tensor> picked;
    for (int64_t m : members) picked.push_back((*r)[m]);
    parts.emplace_back(std::move(picked));
  }
  std::vector<const Ragged*> part_ptrs;
  for (const Ragged& r : parts) part_ptrs.push_back(&r);
  std::vector<Tensor> part_leaves;
  for (size_t i = 0; i < leaves.size(); ++i)
    part_leaves.push_back(leaves[i].defined() && in_axes[i]
                              ? take(leaves[i], tensor(members), *in_axes[i])
                              : leaves[i]);
  const auto part = plan_padded(cache, trace_at, part_ptrs, part_leaves, in_axes, 0, pad, members);
  return run_padded(cache, trace_at, *part, part_leaves, in_axes, out_axes, pad);
}

// One padded call per bucket, the examples put back in order. A bucket Pad cannot mask on its
// own (probing the whole batch found no reason, a bucket's shorter lengths might) runs one call
// per length instead: examples of one shape need no mask.
std::vector<Ragged> run_buckets(PadCache& cache, const TraceAt& trace_at, const PadPlan& plan,
                                const std::vector<Tensor>& leaves,
                                const std::vector<std::optional<int64_t>>& in_axes,
                                const std::vector<std::optional<int64_t>>& out_axes,
                                const VmapOptions& options) {
  VmapOptions pad = options;
  pad.ragged = RaggedStrategy::Pad;
  std::vector<std::vector<Tensor>> examples;  // per output leaf, per example
  auto put_back = [&](const std::vector<int64_t>& members, const std::vector<Ragged>& outs) {
    examples.resize(outs.size(), std::vector<Tensor>(size_t(plan.size)));
    for (size_t j = 0; j < outs.size(); ++j)
      for (size_t k = 0; k < members.size(); ++k)
        examples[j][size_t(members[k])] = outs[j][int64_t(k)];
  };
  for (const std::vector<int64_t>& members : plan.buckets) {
    try {
      put_back(members, run_part(cache, trace_at, plan, members, leaves, in_axes, out_axes, pad));
    } catch (const Error&) {
      std::map<std::vector<int64_t>, std::vector<int64_t>> by_length;
      for (int64_t m : members) {
        std::vector<int64_t> n;
        for (const std::vector<int64_t>& l : plan.symbols.lengths) n.push_back(l[size_t(m)]);
        by_length[n].push_back(m);
      }
      if (by_length.size() < 2) throw;  // one shape: a real error of f
      for (const auto& [n, same] : by_length)
        put_back(same, run_part(cache, trace_at, plan, same, leaves, in_axes, out_axes, pad));
    }
  }
  std::vector<Ragged> result;
  for (std::vector<Tensor>& e : examples) result.emplace_back(std::move(e));
  return result;
}

}  // namespace

std::vector<Ragged> run_padded(PadCache& cache, const TraceAt& trace_at, const PadPlan& plan,
                               const std::vector<Tensor>& leaves,
                               const std::vector<std::optional<int64_t>>& in_axes,
                               const std::vector<std::optional<int64_t>>& out_axes,
                               const VmapOptions& options) {
  if (!plan.buckets.empty())
    return run_buckets(cache, trace_at, plan, leaves, in_axes, out_axes, options);
  const Symbols& s = plan.symbols;
  std::vector<Tensor> xs;
  size_t r = 0;
  for (const Tensor& leaf : leaves)
    xs.push_back(leaf.defined() ? leaf : plan.raggeds[r++]->padded(0));
  for (const VmapFrame::Hidden& h : plan.hidden) xs.push_back(h.value);
  for (const std::vector<int64_t>& n : s.lengths) xs.push_back(tensor(n));
  const std::vector<Tensor> outs = (*plan.entry->inner)(xs);
  const MaskedGraph& mg = *plan.entry->masked;
  std::vector<Ragged> result;
  for (size_t j = 0; j < outs.size(); ++j) {
    const Tensor& out = outs[j];
    const int64_t axis = *out_axes[j] < 0 ? *out_axes[j] + out.ndim() : *out_axes[j];
    const Tags& tags = mg.tags[size_t(mg.graph->outputs[j])];
    const bool ragged = std::any_of(tags.begin(), tags.end(), [](auto t) { return t.ragged(); });
    if (!ragged && axis == 0) {
      result.push_back(Ragged::from_stacked(out));
      continue;
    }
    std::vector<Tensor> examples;
    for (int64_t i = 0; i < plan.size; ++i) {
      Tensor e = squeeze(slice_axis(out, axis, i, i + 1), Axes{axis});
      for (size_t ax = 0; ax < tags.size(); ++ax)
        if (tags[ax].ragged())
          e = slice_axis(e, int64_t(ax), 0,
                         std::max<int64_t>(
                             0, s.lengths[size_t(tags[ax].symbol)][size_t(i)] + tags[ax].offset));
      examples.push_back(e);
    }
    result.emplace_back(std::move(examples));
  }
  return result;
}

}  // namespace lanes::detail
