// RaggedStrategy::Pad's probing and masked evaluation (see masking.h); the masking rules
// themselves live with their primitives (Primitive::mask).
#include "transforms/masking.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <sstream>

#include "lanes/ops.h"
#include "transforms/subgraphs.h"

namespace lanes {

std::vector<Tensor> Primitive::mask(const std::vector<Tensor>& inputs,
                                    const detail::MaskContext& ctx) const {
  if (ctx.any_ragged()) ctx.no_rule("it combines values along a padded axis");
  return ctx.rebind(inputs);
}

namespace detail {
namespace {

[[noreturn]] void changes(const std::string& what) {
  throw CannotMask("f " + what +
                   " when a ragged extent changes: it reads the extent as a number, which "
                   "padding cannot mask");
}

// Which value and node of a probe trace stands for each of trace A's, found by walking both
// graphs from their outputs (a trace may number its values in another order: the backward pass
// of a gradient visits nodes by address). Values no output depends on stay unmatched (-1).
struct Match {
  std::vector<ValueId> value;     // per value of A
  std::vector<int64_t> node;      // per node of A
  std::vector<int64_t> constant;  // per constant of A: the probe's constant index
};

Match match_graphs(const Graph& a, const Graph& p) {
  auto where = [](const Graph& g) {  // per value: (kind, index, output position)
    std::vector<std::array<int64_t, 3>> at(g.types.size(), {-1, -1, -1});
    for (size_t i = 0; i < g.inputs.size(); ++i) at[size_t(g.inputs[i])] = {0, int64_t(i), 0};
    for (size_t i = 0; i < g.constants.size(); ++i)
      at[size_t(g.constants[i].first)] = {1, int64_t(i), 0};
    for (size_t i = 0; i < g.nodes.size(); ++i)
      for (size_t o = 0; o < g.nodes[i].outputs.size(); ++o)
        at[size_t(g.nodes[i].outputs[o])] = {2, int64_t(i), int64_t(o)};
    return at;
  };
  const auto wa = where(a), wp = where(p);
  Match m{std::vector<ValueId>(a.types.size(), -1), std::vector<int64_t>(a.nodes.size(), -1),
          std::vector<int64_t>(a.constants.size(), -1)};
  if (a.outputs.size() != p.outputs.size() || a.inputs.size() != p.inputs.size())
    changes("records another graph");
  std::vector<std::pair<ValueId, ValueId>> todo;
  for (size_t i = 0; i < a.outputs.size(); ++i) todo.emplace_back(a.outputs[i], p.outputs[i]);
  while (!todo.empty()) {
    const auto [va, vp] = todo.back();
    todo.pop_back();
    if (m.value[size_t(va)] >= 0) {
      if (m.value[size_t(va)] != vp) changes("records another graph");
      continue;
    }
    m.value[size_t(va)] = vp;
    const auto& x = wa[size_t(va)];
    const auto& y = wp[size_t(vp)];
    if (x[0] != y[0] || x[2] != y[2] || (x[0] == 0 && x[1] != y[1]))
      changes("records another graph");
    if (x[0] == 1) m.constant[size_t(x[1])] = y[1];
    if (x[0] != 2) continue;
    const Node& na = a.nodes[size_t(x[1])];
    const Node& np = p.nodes[size_t(y[1])];
    if (m.node[size_t(x[1])] >= 0) {
      if (m.node[size_t(x[1])] != y[1]) changes("records another graph");
      continue;
    }
    if (na.prim->name() != np.prim->name() || na.inputs.size() != np.inputs.size() ||
        na.outputs.size() != np.outputs.size())
      changes("records another graph (" + na.prim->name() + " and " + np.prim->name() + ")");
    m.node[size_t(x[1])] = y[1];
    for (size_t o = 0; o < na.outputs.size(); ++o)
      if (m.value[size_t(na.outputs[o])] < 0) m.value[size_t(na.outputs[o])] = np.outputs[o];
    for (size_t i = 0; i < na.inputs.size(); ++i) todo.emplace_back(na.inputs[i], np.inputs[i]);
  }
  return m;
}

Tags tags_of(ValueId v, const Graph& a, const std::vector<const Graph*>& probes,
             const std::vector<Match>& matches, const std::vector<int64_t>& extents) {
  const TensorType& ta = a.types[size_t(v)];
  Tags tags(ta.shape.size());
  std::vector<const TensorType*> tp;
  for (size_t k = 0; k < probes.size(); ++k) {
    const ValueId pv = matches[k].value[size_t(v)];
    if (pv < 0) return tags;  // nothing reads it
    tp.push_back(&probes[k]->types[size_t(pv)]);
    if (tp.back()->shape.size() != ta.shape.size() || tp.back()->dtype != ta.dtype)
      changes("makes a value of another rank or dtype");
  }
  for (size_t ax = 0; ax < ta.shape.size(); ++ax) {
    int symbol = -1;
    for (size_t k = 0; k < probes.size(); ++k) {
      const int64_t d = tp[k]->shape[ax] - ta.shape[ax];
      if (d == 0) continue;
      if (d != 1 || symbol >= 0)
        throw CannotMask("f makes a value of shape " + shape_str(ta.shape) + " whose axis " +
                         std::to_string(ax) +
                         " is not one ragged extent plus a constant (a concatenation or "
                         "reshape of ragged axes), which padding cannot mask");
      symbol = int(k);
    }
    if (symbol >= 0) tags[ax] = {symbol, ta.shape[ax] - extents[size_t(symbol)]};
  }
  return tags;
}

std::vector<double> values(const Tensor& t) { return t.to_vector<double>(); }

// The leading `shape` block of a constant.
Tensor leading(Tensor t, const Shape& shape) {
  for (size_t ax = 0; ax < shape.size(); ++ax) t = slice_axis(t, int64_t(ax), 0, shape[ax]);
  return t;
}

bool close(double x, double y) { return std::abs(x - y) <= 1e-6 * std::abs(y) + 1e-300; }

// Whether k is an integer or the inverse of one (up to float32 rounding): a count's factor.
bool whole(double k) {
  auto integral = [](double v) { return std::abs(v - std::round(v)) <= 1e-6 * std::abs(v); };
  return k != 0 && (integral(k) || integral(1 / k));
}

double nice(double k) {
  if (std::abs(k - std::round(k)) <= 1e-6 * std::abs(k)) return std::round(k);
  if (std::abs(1 / k - std::round(1 / k)) <= 1e-6 * std::abs(1 / k)) return 1 / std::round(1 / k);
  return k;
}

// A scalar constant that differs between the traces: k * n or k / n, n the product of the
// extents whose probes changed it (a mean's count, 1 / count); anything else cannot be masked.
ExtentConstant extent_constant(double a, const std::vector<double>& probed,
                               const std::vector<int64_t>& extents) {
  ExtentConstant c;
  double n = 1;
  for (size_t k = 0; k < probed.size(); ++k)
    if (probed[k] != a) {
      c.symbols.push_back(int(k));
      n *= double(extents[k]);
    }
  // The extents' product with symbol s one larger.
  auto bumped = [&](size_t s) {
    for (int sym : c.symbols)
      if (size_t(sym) == s) return n / double(extents[s]) * double(extents[s] + 1);
    return n;
  };
  auto fits = [&](int e, double k, double b) {
    if (!whole(k)) return false;
    for (size_t s = 0; s < probed.size(); ++s)
      if (!close(probed[s], e == 1 ? k * bumped(s) + b : k / bumped(s))) return false;
    return true;
  };
  // k * n (a count), k / n (a mean's scale), then n + b for one extent (the last index n - 1).
  if (fits(1, a / n, 0)) {
    c.k = nice(a / n);
  } else if (fits(-1, a * n, 0)) {
    c.k = nice(a * n);
    c.exponent = -1;
  } else if (c.symbols.size() == 1 && probed[size_t(c.symbols[0])] - a == 1 &&
             a - n == std::round(a - n)) {
    c.b = a - n;
  } else {
    changes("computes a constant (" + std::to_string(a) + ") that is not a count");
  }
  return c;
}

// Whether every element is v[0].
bool uniform(const std::vector<double>& v) {
  return std::all_of(v.begin(), v.end(), [&](double x) { return x == v[0]; });
}

// Each constant must be the same in every trace, or (with a ragged axis) the larger must extend
// the smaller, so that every lane's prefix of it is what its example would have made
// (zeros(x.shape()), arange(n)). One filled with a single value that changes may be a count or
// 1 / count (a mean and its gradient, broadcast while tracing): it becomes the lane's own.
void compare_constants(MaskedGraph& mg, const Graph& a, const std::vector<const Graph*>& probes,
                       const std::vector<Match>& matches, const std::vector<int64_t>& extents) {
  for (size_t i = 0; i < a.constants.size(); ++i) {
    const auto& [v, t] = a.constants[i];
    if (!matches.empty() && matches[0].constant[i] < 0) continue;  // nothing reads it
    const std::vector<double> x = values(t);
    bool same = true, filled = !x.empty() && uniform(x);
    std::vector<double> firsts;
    for (size_t k = 0; k < probes.size(); ++k) {
      const Tensor& pt = probes[k]->constants[size_t(matches[k].constant[i])].second;
      if (pt.ndim() != t.ndim()) changes("makes a constant of another rank");
      if (pt.storage() == t.storage() && pt.offset() == t.offset() && pt.shape() == t.shape()) {
        firsts.push_back(x.empty() ? 0 : x[0]);
        continue;
      }
      const std::vector<double> y = values(pt);
      same = same && values(leading(pt, t.shape())) == x;
      filled = filled && !y.empty() && uniform(y);
      firsts.push_back(y.empty() ? 0 : y[0]);
    }
    if (same) continue;
    if (!filled) {
      std::ostringstream os;
      os << "makes a constant of shape " << shape_str(t.shape()) << " whose values change";
      changes(os.str());
    }
    mg.extent_constants[v] = extent_constant(x[0], firsts, extents);
  }
}

// params() with the references to the node's sub-graphs left out (each trace numbers its own).
std::string params_without_graphs(const Primitive& p) {
  std::string s = p.params();
  for (const auto& [name, g] : p.subgraphs()) {
    const std::string r = ref(*g);
    for (size_t at = s.find(r); at != std::string::npos; at = s.find(r)) s.erase(at, r.size());
  }
  return s;
}

}  // namespace

bool MaskedGraph::any_ragged() const {
  for (bool r : ragged_node)
    if (r) return true;
  for (const Tags& t : tags)
    for (const AxisTag& a : t)
      if (a.ragged()) return true;
  return !extent_constants.empty();
}

std::shared_ptr<const MaskedGraph> analyze_padding(const Graph& a,
                                                   const std::vector<const Graph*>& probes,
                                                   const std::vector<int64_t>& extents) {
  std::vector<Match> matches;
  for (const Graph* p : probes) matches.push_back(match_graphs(a, *p));
  auto mg = std::make_shared<MaskedGraph>();
  mg->graph = &a;
  for (ValueId v = 0; v < ValueId(a.types.size()); ++v)
    mg->tags.push_back(tags_of(v, a, probes, matches, extents));
  compare_constants(*mg, a, probes, matches, extents);
  auto ragged = [&](const std::vector<ValueId>& ids) {
    for (ValueId v : ids)
      for (const AxisTag& t : mg->tags[size_t(v)])
        if (t.ragged()) return true;
    return false;
  };
  for (size_t i = 0; i < a.nodes.size(); ++i) {
    const Node& n = a.nodes[i];
    std::vector<const Primitive*> at;
    std::vector<std::shared_ptr<const MaskedGraph>> subs;
    const auto a_subs = n.prim->subgraphs();
    for (size_t k = 0; k < probes.size(); ++k) {
      const int64_t pn = matches[k].node[i];
      if (pn < 0) break;  // nothing reads it: replayed as it is
      at.push_back(probes[k]->nodes[size_t(pn)].prim.get());
      if (at.back()->subgraphs().size() != a_subs.size()) changes("records another graph");
    }
    const bool live = at.size() == probes.size();
    for (size_t s = 0; live && s < a_subs.size(); ++s) {
      std::vector<const Graph*> sub_probes;
      for (const Primitive* p : at) sub_probes.push_back(p->subgraphs()[s].second);
      subs.push_back(analyze_padding(*a_subs[s].second, sub_probes, extents));
    }
    bool is_ragged = live && (ragged(n.inputs) || ragged(n.outputs));
    for (const auto& sub : subs) is_ragged = is_ragged || sub->any_ragged();
    if (live && !is_ragged)
      for (const Primitive* p : at)
        if (params_without_graphs(*p) != params_without_graphs(*n.prim))
          changes("gives " + n.prim->name() + " other parameters (" + n.prim->params() + " and " +
                  p->params() + ")");
    mg->ragged_node.push_back(is_ragged);
    mg->probes.push_back(std::move(at));
    mg->subgraphs.push_back(std::move(subs));
  }
  return mg;
}

namespace {

// Whether `other` is value v of g's graph with each padded axis at its length in `at`.
bool cut_to(const MaskedGraph& mg, ValueId v, const TensorType& other,
            const std::vector<int64_t>& at) {
  const TensorType& ta = mg.graph->types[size_t(v)];
  if (ta.dtype != other.dtype || ta.shape.size() != other.shape.size()) return false;
  for (size_t ax = 0; ax < ta.shape.size(); ++ax) {
    const AxisTag& t = mg.tags[size_t(v)][ax];
    const int64_t want =
        t.ragged() ? std::max<int64_t>(0, at[size_t(t.symbol)] + t.offset) : ta.shape[ax];
    if (other.shape[ax] != want) return false;
  }
  return true;
}

}  // namespace

void check_at_shortest(const MaskedGraph& mg, const Graph& shortest,
                       const std::vector<int64_t>& lengths) {
  // Outputs only: at extents of 0 and 1 the ops legitimately record other nodes (a sum over one
  // element is a reshape), but what f returns must be the padded output cut to the lengths.
  const Graph& a = *mg.graph;
  for (size_t i = 0; i < a.outputs.size() && i < shortest.outputs.size(); ++i) {
    const TensorType& ta = a.types[size_t(a.outputs[i])];
    const TensorType& ts = shortest.types[size_t(shortest.outputs[i])];
    if (!cut_to(mg, a.outputs[i], ts, lengths))
      changes("returns a value of shape " + shape_str(ts.shape) + " at the shortest lengths, not " +
              shape_str(ta.shape) + " cut to them (a squeeze or broadcast of an extent of 1)");
  }
}

namespace {

double extent_value(const ExtentConstant& c, const std::vector<int64_t>& at) {
  double n = 1;
  for (int s : c.symbols) n *= double(at[size_t(s)]);
  return c.exponent == 1 ? c.k * n + c.b : c.k / n;
}

}  // namespace

void verify_at(const MaskedGraph& mg, const Graph& other, const std::vector<int64_t>& at) {
  const Graph& a = *mg.graph;
  const Match m = match_graphs(a, other);
  for (ValueId v = 0; v < ValueId(a.types.size()); ++v) {
    const ValueId ov = m.value[size_t(v)];
    if (ov < 0) continue;
    const TensorType& ta = a.types[size_t(v)];
    const TensorType& to = other.types[size_t(ov)];
    if (!cut_to(mg, v, to, at))
      changes("makes a value of shape " + shape_str(to.shape) + " at shorter lengths where " +
              shape_str(ta.shape) + " padded does not shrink to it");
  }
  for (size_t i = 0; i < a.constants.size(); ++i) {
    if (m.constant[i] < 0) continue;
    const auto& [v, t] = a.constants[i];
    const std::vector<double> y = values(other.constants[size_t(m.constant[i])].second);
    auto c = mg.extent_constants.find(v);
    if (c != mg.extent_constants.end()) {
      const double want = extent_value(c->second, at);
      if (!std::all_of(y.begin(), y.end(), [&](double x) { return close(x, want); }))
        changes("computes a constant that is not the count it seemed");
    } else if (values(leading(t, other.constants[size_t(m.constant[i])].second.shape())) != y) {
      changes("makes a constant whose values change");
    }
  }
  for (size_t i = 0; i < a.nodes.size(); ++i) {
    if (m.node[i] < 0) continue;
    const Primitive& pa = *a.nodes[i].prim;
    const Primitive& po = *other.nodes[size_t(m.node[i])].prim;
    if (!mg.ragged_node[i] && params_without_graphs(pa) != params_without_graphs(po))
      changes("gives " + pa.name() + " other parameters (" + pa.params() + " and " + po.params() +
              ")");
    const auto subs = po.subgraphs();
    for (size_t s = 0; s < mg.subgraphs[i].size() && s < subs.size(); ++s)
      verify_at(*mg.subgraphs[i][s], *subs[s].second, at);
  }
}

MaskContext::MaskContext(const MaskedGraph& g, size_t node, const std::vector<Tensor>& lengths,
                         const std::vector<int64_t>& min_lengths)
    : g_(g), node_(node), lengths_(lengths), min_lengths_(min_lengths) {}

const Primitive& MaskContext::prim() const { return *g_.graph->nodes[node_].prim; }
const Tags& MaskContext::in(size_t i) const {
  return g_.tags[size_t(g_.graph->nodes[node_].inputs[i])];
}
const Tags& MaskContext::out(size_t i) const {
  return g_.tags[size_t(g_.graph->nodes[node_].outputs[i])];
}
const Primitive& MaskContext::probe(int symbol) const { return *g_.probes[node_][size_t(symbol)]; }
const MaskedGraph& MaskContext::subgraph(size_t i) const { return *g_.subgraphs[node_][i]; }

bool MaskContext::any_ragged() const { return g_.ragged_node[node_]; }

Tensor MaskContext::valid(const AxisTag& tag) const {
  const Tensor& n = lengths_[size_t(tag.symbol)];
  return tag.offset == 0 ? n : n + tag.offset;
}

int64_t MaskContext::min_valid(const AxisTag& tag) const {
  return min_lengths_[size_t(tag.symbol)] + tag.offset;
}

Tensor MaskContext::fill_padding(const Tensor& x, const Tags& tags,
                                 const std::vector<int64_t>& axes, double fill) const {
  return fill_padding(x, tags, axes, scalar(fill, x.dtype()));
}

Tensor MaskContext::fill_padding(const Tensor& x, const Tags& tags,
                                 const std::vector<int64_t>& axes, const Tensor& fill) const {
  Tensor keep;
  for (int64_t ax : axes) {
    if (!tags[size_t(ax)].ragged()) continue;
    Shape s(size_t(x.ndim()), 1);
    s[size_t(ax)] = x.shape(ax);
    const Tensor inside = less(iota(s, ax, DType::Int64), valid(tags[size_t(ax)]));
    keep = keep.defined() ? logical_and(keep, inside) : inside;
  }
  return keep.defined() ? where(keep, x, fill) : x;
}

std::vector<Tensor> MaskContext::rebind(const std::vector<Tensor>& inputs) const {
  return replay(*g_.graph, g_.graph->nodes[node_], inputs);
}

void MaskContext::no_rule(const std::string& why) const {
  throw CannotMask(prim().name() + " has no masking rule over a padded axis (" + why + ")");
}

Tensor extreme_of(DType d, bool lowest) {
  switch (d) {
    case DType::Bool:
      return scalar(lowest ? 0 : 1, d);
    case DType::UInt8:
      return scalar(lowest ? 0 : 255, d);
    case DType::Int32:
      return tensor(std::vector<int32_t>{lowest ? std::numeric_limits<int32_t>::min()
                                                : std::numeric_limits<int32_t>::max()},
                    Shape{});
    case DType::Int64:
      return tensor(std::vector<int64_t>{lowest ? std::numeric_limits<int64_t>::min()
                                                : std::numeric_limits<int64_t>::max()},
                    Shape{});
    default:
      return scalar(lowest ? -std::numeric_limits<double>::infinity()
                           : std::numeric_limits<double>::infinity(),
                    d);
  }
}

std::vector<Tensor> eval_masked(const MaskedGraph& mg, const std::vector<Tensor>& inputs,
                                const std::vector<Tensor>& lengths,
                                const std::vector<int64_t>& min_lengths, const AdjustArgs& adjust) {
  const Graph& g = *mg.graph;
  check(inputs.size() == g.inputs.size(), "Pad: ", inputs.size(), " inputs for a graph of ",
        g.inputs.size());
  std::vector<Tensor> env(g.types.size());
  for (size_t i = 0; i < inputs.size(); ++i) env[size_t(g.inputs[i])] = inputs[i];
  for (const auto& [v, t] : g.constants) {
    auto c = mg.extent_constants.find(v);
    if (c == mg.extent_constants.end()) {
      env[size_t(v)] = t;
      continue;
    }
    Tensor n = scalar(1.0, DType::Float64);
    for (int s : c->second.symbols) n = n * cast(lengths[size_t(s)], DType::Float64);
    const Tensor value = c->second.exponent == 1 ? n * c->second.k + c->second.b : c->second.k / n;
    env[size_t(v)] = broadcast_to(cast(value, t.dtype()), t.shape());
  }
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& n = g.nodes[i];
    std::vector<Tensor> args;
    args.reserve(n.inputs.size());
    for (ValueId v : n.inputs) args.push_back(env[size_t(v)]);
    if (adjust) adjust(i, args);
    std::vector<Tensor> outs;
    if (mg.ragged_node[i]) {
      outs = n.prim->mask(args, MaskContext(mg, i, lengths, min_lengths));
    } else {
      outs = replay(g, n, args);
    }
    for (size_t k = 0; k < n.outputs.size(); ++k) env[size_t(n.outputs[k])] = std::move(outs[k]);
  }
  std::vector<Tensor> out;
  for (ValueId v : g.outputs) out.push_back(env[size_t(v)]);
  return out;
}

}  // namespace detail
}  // namespace lanes
