// cond / switch_case: every rule in one place (shape, eval, batch, jvp, vjp).
#include <algorithm>
#include <cstring>
#include <numeric>

#include "lanes/ops.h"
#include "primitives/control_flow.h"
#include "transforms/batching.h"
#include "transforms/explain_recorder.h"

namespace lanes::prim {

namespace {

// Fixed cost of running one partitioned branch (gathers, a graph call), in element operations:
// a few microseconds.
constexpr double kBranchOverhead = 20000;

Shape with_lanes(Shape s, int64_t size) {
  s.insert(s.begin(), size);
  return s;
}

// Row src[j] of `from` into row dst[j] of `into` (contiguous, owned), for each j.
void copy_rows(const Tensor& from, const std::vector<int64_t>& src, const std::vector<int64_t>& dst,
               Tensor& into) {
  const Tensor c = from.contiguous();
  const int64_t rows = into.shape(0);
  const size_t row = rows == 0 ? 0 : size_t(into.numel() / rows) * dtype_size(into.dtype());
  const char* s = static_cast<const char*>(c.raw_data());
  char* d = static_cast<char*>(into.raw_mutable_data());
  for (size_t j = 0; j < dst.size(); ++j) std::memcpy(d + dst[j] * row, s + src[j] * row, row);
}

}  // namespace

Cond::Cond(std::vector<GraphPtr> branches, Lanes lanes)
    : branches_(std::move(branches)), lanes_(std::move(lanes)) {
  check(!branches_.empty(), "cond: no branches");
  for (const GraphPtr& b : branches_) {
    work_.push_back(detail::work_of(*b));  // the cost model reads them on every call
    loops_.push_back(detail::holds_loop(*b));
    if (lanes_.on())
      lane_runners_.push_back(
          std::make_shared<detail::LaneRunners>(b, lanes_.mapped, lanes_.options));
    else
      runners_.push_back(std::make_shared<detail::GraphRunner>(b));
  }
}

std::string Cond::params() const {
  std::string s = "branches=(";
  for (size_t k = 0; k < branches_.size(); ++k) s += (k ? ", " : "") + detail::ref(*branches_[k]);
  s += ")";
  if (!lanes_.on()) return s;
  static const char* names[] = {"auto", "select", "partition"};
  s += ", lanes=" + std::to_string(lanes_.size) + ", mapped=";
  for (bool m : lanes_.mapped) s += m ? '1' : '0';
  return s + ", strategy=" + names[int(lanes_.options.cond)];
}

std::vector<std::pair<std::string, const Graph*>> Cond::subgraphs() const {
  std::vector<std::pair<std::string, const Graph*>> out;
  for (size_t k = 0; k < branches_.size(); ++k)
    out.emplace_back("branch " + std::to_string(k), branches_[k].get());
  return out;
}

std::vector<TensorType> Cond::infer(const std::vector<TensorType>& in) const {
  const Graph& g0 = *branches_[0];
  check(in.size() == 1 + g0.inputs.size(), "cond: ", in.size() - 1, " operands for branches of ",
        g0.inputs.size());
  const Shape index_shape = lanes_.on() ? Shape{lanes_.size} : Shape{};
  check(is_integral(in[0].dtype) && in[0].shape == index_shape, "cond: the index must be ",
        lanes_.on() ? "a vector of one integer per lane" : "a 0-d integer", ", got shape ",
        fmt(in[0].shape), " ", dtype_name(in[0].dtype));
  for (size_t i = 0; i < g0.inputs.size(); ++i) {
    TensorType want = g0.types[g0.inputs[i]];
    if (lanes_.on() && lanes_.mapped[i]) want.shape = with_lanes(want.shape, lanes_.size);
    check(in[1 + i] == want, "cond: operand ", i, " is ", fmt(in[1 + i].shape), " ",
          dtype_name(in[1 + i].dtype), ", the branches take ", fmt(want.shape), " ",
          dtype_name(want.dtype));
  }
  std::vector<TensorType> out = detail::output_types(g0);
  if (lanes_.on())
    for (TensorType& t : out) t.shape = with_lanes(t.shape, lanes_.size);
  return out;
}

std::vector<Tensor> Cond::eval(const std::vector<Tensor>& in) const {
  if (lanes_.on()) return eval_lanes(in);
  const int64_t k = std::clamp<int64_t>(in[0].item<int64_t>(), 0, int64_t(branches_.size()) - 1);
  return (*runners_[k])(std::vector<Tensor>(in.begin() + 1, in.end()));
}

// Each lane takes its own branch. Select runs every branch that some lane takes on all lanes and
// picks per lane; partition gathers each branch's lanes (rounded up to a lane bucket with copies
// of one of them), runs the branch on those and scatters the rows back. Auto compares the two by
// the branches' work and this call's lane counts. Every strategy runs a branch that holds a loop
// on its own lanes only: a lane must never run a loop of a branch it did not take, which may not
// end there (jax#2947 hangs so under vmap).
std::vector<Tensor> Cond::eval_lanes(const std::vector<Tensor>& in) const {
  const int64_t B = lanes_.size, K = int64_t(branches_.size());
  const std::vector<Tensor> ops(in.begin() + 1, in.end());
  std::vector<int64_t> index = in[0].to_vector<int64_t>();
  std::vector<std::vector<int64_t>> lanes(K);
  for (int64_t b = 0; b < B; ++b) lanes[std::clamp<int64_t>(index[b], 0, K - 1)].push_back(b);
  std::vector<int64_t> counts, taken;
  for (int64_t k = 0; k < K; ++k) {
    counts.push_back(int64_t(lanes[k].size()));
    if (!lanes[k].empty()) taken.push_back(k);
  }
  const std::vector<TensorType> out_types = detail::output_types(*branches_[0]);
  if (taken.size() <= 1) {  // one branch for every lane (or no lanes): both strategies agree
    if (taken.empty()) {
      std::vector<Tensor> out;
      for (const TensorType& t : out_types) out.push_back(zeros(with_lanes(t.shape, 0), t.dtype));
      return out;
    }
    return lane_runners_[taken[0]]->run(B, ops);
  }
  double out_elems = 0, moved = 0;
  for (const TensorType& t : out_types) out_elems += double(shape_numel(t.shape));
  for (size_t i = 0; i < ops.size(); ++i)
    if (lanes_.mapped[i]) moved += double(ops[i].numel()) / double(B);
  const std::vector<double>& work = work_;
  // Partitioning runs one branch on every lane when that is cheaper than gathering its lanes and
  // scattering them back (a cheap branch most lanes take): its result is the base the others'
  // rows are written into.
  int64_t base = -1;
  for (int64_t k : taken) {
    const bool cheap = work[k] * double(B - counts[k]) < (moved + out_elems) * double(counts[k]);
    if (cheap && !loops_[k] && (base < 0 || counts[k] > counts[base])) base = k;
  }
  bool partition = lanes_.options.cond == CondStrategy::Partition;
  if (lanes_.options.cond == CondStrategy::Auto) {
    double select = double(B) * out_elems * double(taken.size() - 1), part = 0;
    for (int64_t k : taken) {
      partition = partition || loops_[k];
      select += double(B) * work[k];
      part += k == base ? double(B) * work[k]
                        : kBranchOverhead + double(counts[k]) * (work[k] + moved + out_elems);
    }
    partition = partition || part < select;
  }
  if (partition) return partition_lanes(ops, lanes, base);
  for (int64_t k : taken)
    if (loops_[k]) return select_around_loops(ops, lanes);
  return select_lanes(ops, lanes);
}

// Select for the branches without a loop, partition for those with one.
std::vector<Tensor> Cond::select_around_loops(
    const std::vector<Tensor>& ops, const std::vector<std::vector<int64_t>>& lanes) const {
  std::vector<std::vector<int64_t>> plain = lanes, looping(lanes.size());
  bool any_plain = false;
  for (size_t k = 0; k < lanes.size(); ++k) {
    if (loops_[k]) std::swap(plain[k], looping[k]);
    any_plain = any_plain || !plain[k].empty();
  }
  std::vector<Tensor> out;
  if (any_plain)
    for (const Tensor& y : select_lanes(ops, plain)) out.push_back(owned(y));
  return partition_lanes(ops, looping, -1, std::move(out));
}

std::vector<Tensor> Cond::select_lanes(const std::vector<Tensor>& ops,
                                       const std::vector<std::vector<int64_t>>& lanes) const {
  const int64_t B = lanes_.size;
  std::vector<Tensor> out;
  for (size_t k = 0; k < lanes.size(); ++k) {
    if (lanes[k].empty()) continue;
    const std::vector<Tensor> outs = lane_runners_[k]->run(B, ops);
    if (out.empty()) {
      out = outs;
      continue;
    }
    std::vector<bool> mine(B, false);
    for (int64_t b : lanes[k]) mine[b] = true;
    const Tensor pick = tensor(mine, {B});
    for (size_t j = 0; j < out.size(); ++j) {
      Shape s(out[j].ndim(), 1);
      s[0] = B;
      out[j] = where(reshape(pick, s), outs[j], out[j]);
    }
  }
  return out;
}

// `out`, when given, holds rows already computed (owned): the branches here write theirs into it.
std::vector<Tensor> Cond::partition_lanes(const std::vector<Tensor>& ops,
                                          const std::vector<std::vector<int64_t>>& lanes,
                                          int64_t base, std::vector<Tensor> out) const {
  const int64_t B = lanes_.size;
  if (out.empty() && base >= 0) {
    for (const Tensor& y : lane_runners_[base]->run(B, ops)) out.push_back(owned(y));
  } else if (out.empty()) {
    for (const TensorType& t : detail::output_types(*branches_[0]))
      out.push_back(Tensor::empty(with_lanes(t.shape, B), t.dtype));
  }
  for (int64_t k = 0; k < int64_t(lanes.size()); ++k) {
    if (k == base || lanes[k].empty()) continue;
    const int64_t n = int64_t(lanes[k].size());
    // A loop never runs on another branch's lanes, so its lanes are never rounded up to all.
    const int64_t nb = loops_[k] && detail::lane_bucket(n) >= B ? n : detail::lane_bucket(n);
    if (nb >= B && !loops_[k]) {  // about every lane: run them all, keep this branch's rows
      const std::vector<Tensor> outs = lane_runners_[k]->run(B, ops);
      for (size_t j = 0; j < out.size(); ++j) copy_rows(outs[j], lanes[k], lanes[k], out[j]);
      continue;
    }
    std::vector<int64_t> rows = lanes[k];
    rows.resize(nb, lanes[k][0]);  // padding lanes repeat a real one: same work, no surprises
    std::vector<Tensor> args = ops;
    for (size_t i = 0; i < args.size(); ++i)
      if (lanes_.mapped[i]) args[i] = gather_rows(args[i], rows);
    const std::vector<Tensor> outs = lane_runners_[k]->run(nb, args);
    std::vector<int64_t> first(n);
    std::iota(first.begin(), first.end(), 0);
    for (size_t j = 0; j < out.size(); ++j) copy_rows(outs[j], first, lanes[k], out[j]);
  }
  return out;
}

// ---- vmap -------------------------------------------------------------------------------------

std::string Cond::explain_lanes(int64_t size) const {
  const CondStrategy s = batching::current_options().cond;
  bool loop = false;
  for (bool l : loops_) loop = loop || l;
  const std::string what =
      "cond over " + std::to_string(size) + " lanes, each taking its own branch: ";
  if (s == CondStrategy::Select && loop)
    return what + "select (every branch on every lane), but a branch that holds a loop runs on " +
           "its own lanes only (partitioned: a loop may not end on a lane that did not take it)";
  if (s == CondStrategy::Select) return what + "select (every branch on every lane)";
  if (s == CondStrategy::Partition || loop)
    return what + "partition (each branch on its own lanes" +
           (s == CondStrategy::Auto ? ", since a branch holds a loop)" : ")");
  return what + "auto (select or partition, chosen on each call from the branches' work and " +
         "the lanes each takes)";
}

// A lane node under an outer vmap whose branches hold a collective over that vmap's axis: the
// node keeps its own lanes, and the branches are batched over the outer axis now, while its frame
// is open (each lane's values hold every outer example). Every outer example of a lane takes the
// lane's branch, so the collective combines values computed in step, as jax's would.
std::vector<Batched> Cond::batch_outer_in_lanes(const std::vector<Batched>& in, int64_t size,
                                                const Node& collective) const {
  const std::string& axis = batching::current_options().axis_name;
  check(!in[0].mapped(), collective.prim->name(), " over axis '", axis,
        "' sits in a branch of a cond, and which branch a lane takes differs along '", axis,
        "' too: compute it outside the cond");
  const std::vector<Batched> operands(in.begin() + 1, in.end());
  std::vector<bool> outer;
  for (const Batched& b : operands) outer.push_back(b.mapped());
  const std::vector<bool> all(branches_[0]->outputs.size(), true);
  std::vector<detail::Closed> closed;
  for (const GraphPtr& b : branches_)
    closed.push_back(detail::batch_subgraph(*b, outer, size, all, /*lockstep=*/true).closed);
  Widened w = widen_all(std::move(closed), outer_inside(operands, lanes_.mapped, outer, size));
  std::vector<bool> lanes = lanes_.mapped;
  lanes.resize(w.operands.size(), false);
  std::vector<Tensor> args{in[0].value};
  args.insert(args.end(), w.operands.begin(), w.operands.end());
  const auto node =
      std::make_shared<const Cond>(w.graphs, Lanes{lanes_.size, lanes, lanes_.options});
  std::vector<Batched> out;
  for (Tensor& y : lanes::bind(node, args)) out.push_back({std::move(y), 1});
  return out;
}

std::vector<Batched> Cond::batch(const std::vector<Batched>& in, int64_t size) const {
  const std::vector<Batched> operands(in.begin() + 1, in.end());
  const std::string& axis = batching::current_options().axis_name;
  if (lanes_.on() && !axis.empty())
    for (const GraphPtr& b : branches_)
      if (const Node* c = detail::find_collective(*b, axis))
        return batch_outer_in_lanes(in, size, *c);
  if (lanes_.on()) {  // a lane node under another vmap: one lane dim of size * lanes
    std::vector<bool> inner = lanes_.mapped, mapped;
    std::vector<Tensor> args = merge_lanes({in[0]}, {true}, lanes_.size, size);
    const std::vector<Tensor> ops = merge_lanes(operands, inner, lanes_.size, size);
    args.insert(args.end(), ops.begin(), ops.end());
    for (size_t i = 0; i < operands.size(); ++i) mapped.push_back(inner[i] || operands[i].mapped());
    const auto node =
        std::make_shared<const Cond>(branches_, Lanes{size * lanes_.size, mapped, lanes_.options});
    return split_lanes(lanes::bind(node, args), size, lanes_.size);
  }
  std::vector<bool> mapped;
  const std::vector<Tensor> ops = lanes_first(operands, mapped);
  if (in[0].mapped()) {  // each example takes its own branch: a lane node
    if (detail::explaining()) batching::note_control_flow(explain_lanes(size));
    std::vector<Tensor> args{batching::move_batch_dim(in[0], 0)};
    args.insert(args.end(), ops.begin(), ops.end());
    const auto node =
        std::make_shared<const Cond>(branches_, Lanes{size, mapped, batching::current_options()});
    std::vector<Batched> out;
    for (Tensor& y : lanes::bind(node, args)) out.push_back({std::move(y), 0});
    return out;
  }
  // One branch for the whole batch: control flow over batched branches, which agree on which
  // outputs are mapped.
  if (detail::explaining())
    batching::note_control_flow("cond: stays a cond (the index is the same for every example)");
  std::vector<bool> force(branches_[0]->outputs.size(), false);
  for (const GraphPtr& b : branches_) {
    const std::vector<bool> m = detail::mapped_outputs(*b, mapped, size);
    for (size_t k = 0; k < m.size(); ++k) force[k] = force[k] || m[k];
  }
  std::vector<detail::Closed> closed;
  for (const GraphPtr& b : branches_)
    closed.push_back(detail::batch_subgraph(*b, mapped, size, force).closed);
  Widened w = widen_all(std::move(closed), ops);
  std::vector<Tensor> args{in[0].value};
  args.insert(args.end(), w.operands.begin(), w.operands.end());
  std::vector<Batched> out;
  const std::vector<Tensor> ys = lanes::bind(std::make_shared<const Cond>(w.graphs), args);
  for (size_t k = 0; k < ys.size(); ++k) out.push_back({ys[k], force[k] ? 0 : kNotMapped});
  return out;
}

// ---- derivatives: a cond of the branches' derivatives, with the same index --------------------

namespace {
// Binds a cond of `closed` (one per branch) over index and args, whose lane flags (with lanes)
// are `mapped` followed by unmapped lifted tensors.
std::vector<Tensor> bind_like(const Tensor& index, std::vector<detail::Closed> closed,
                              std::vector<Tensor> args, const Lanes& lanes,
                              std::vector<bool> mapped) {
  Widened w = widen_all(std::move(closed), std::move(args));
  Lanes l = lanes;
  if (l.on()) {
    mapped.resize(w.operands.size(), false);
    l.mapped = std::move(mapped);
  }
  w.operands.insert(w.operands.begin(), index);
  return lanes::bind(std::make_shared<const Cond>(w.graphs, l), w.operands);
}
}  // namespace

std::vector<Tensor> Cond::jvp(const std::vector<Tensor>& primals,
                              const std::vector<Tensor>& tangents,
                              const std::vector<Tensor>& outputs) const {
  const Graph& g0 = *branches_[0];
  const size_t n = g0.inputs.size();
  std::vector<bool> with(n);
  std::vector<Tensor> args(primals.begin() + 1, primals.end());
  std::vector<bool> mapped = lanes_.mapped;
  bool any = false;
  for (size_t i = 0; i < n; ++i) {
    with[i] = tangents[1 + i].defined() && detail::has_tangent(g0.types[g0.inputs[i]]);
    any = any || with[i];
    if (!with[i]) continue;
    args.push_back(or_zeros(tangents[1 + i], {primals[1 + i].shape(), primals[1 + i].dtype()}));
    if (lanes_.on()) mapped.push_back(lanes_.mapped[i]);
  }
  if (!any) return std::vector<Tensor>(outputs.size());
  std::vector<detail::Closed> closed;
  for (const GraphPtr& b : branches_) closed.push_back(detail::jvp_subgraph(*b, with));
  const std::vector<Tensor> ys = bind_like(primals[0], std::move(closed), args, lanes_, mapped);
  std::vector<Tensor> out;
  for (size_t k = 0; k < outputs.size(); ++k)
    out.push_back(detail::has_tangent(g0.types[g0.outputs[k]]) ? ys[outputs.size() + k] : Tensor());
  return out;
}

std::vector<Tensor> Cond::vjp(const std::vector<Tensor>& primals, const std::vector<Tensor>& cts,
                              const std::vector<Tensor>& outputs) const {
  const Graph& g0 = *branches_[0];
  const size_t n = g0.inputs.size();
  std::vector<bool> wrt(n);
  for (size_t i = 0; i < n; ++i) wrt[i] = detail::has_tangent(g0.types[g0.inputs[i]]);
  std::vector<Tensor> args(primals.begin() + 1, primals.end());
  std::vector<bool> mapped = lanes_.mapped;
  for (size_t k = 0; k < outputs.size(); ++k) {
    if (!detail::has_tangent(g0.types[g0.outputs[k]])) continue;
    args.push_back(or_zeros(cts[k], {outputs[k].shape(), outputs[k].dtype()}));
    mapped.push_back(true);  // with lanes every output has them
  }
  std::vector<detail::Closed> closed;
  for (const GraphPtr& b : branches_) closed.push_back(detail::vjp_subgraph(*b, wrt));
  const std::vector<Tensor> ys = bind_like(primals[0], std::move(closed), args, lanes_, mapped);
  std::vector<Tensor> out(1 + n);
  size_t next = 0;
  for (size_t i = 0; i < n; ++i) {
    if (!wrt[i]) continue;
    Tensor ct = ys[next++];
    // A lane node gives each lane's cotangent; an operand shared by the lanes gets their sum.
    if (lanes_.on() && !lanes_.mapped[i]) ct = sum(ct, Axes{0});
    out[1 + i] = ct;
  }
  return out;
}

}  // namespace lanes::prim
