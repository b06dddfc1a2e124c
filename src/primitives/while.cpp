// while (and dynamic fori_loop): every rule in one place, and while_vjp, the reverse pass that
// records the trip count and the carries (jax has no reverse mode through a while loop).
#include <algorithm>
#include <cstring>

#include "lanes/ops.h"
#include "primitives/control_flow.h"
#include "primitives/while_lanes.h"
#include "transforms/batching.h"
#include "transforms/explain_recorder.h"

namespace lanes::prim {

namespace {

Shape with_lanes(Shape s, int64_t size) {
  s.insert(s.begin(), size);
  return s;
}

std::vector<Tensor> concat_args(std::vector<Tensor> a, const std::vector<Tensor>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

std::vector<bool> lane_flags(size_t n_carry, const Lanes& lanes) {
  std::vector<bool> m(n_carry, true);
  m.insert(m.end(), lanes.mapped.begin() + int64_t(n_carry), lanes.mapped.end());
  return m;
}

Tensor lane_mask(const std::vector<bool>& active, int64_t rank) {
  Shape s(rank, 1);
  s[0] = int64_t(active.size());
  return reshape(tensor(active, {int64_t(active.size())}), s);
}

// The reverse pass through a while loop: inputs (carry, consts, cts of the float carries, the
// lifted tensors of the body's vjp), outputs the cts of the float carries' initial values and of
// the float consts. It runs the loop forward recording each step's carry (and, with lanes, which
// lanes were active), then the body's vjp backwards over the record.
class WhileVjp : public Primitive {
 public:
  WhileVjp(GraphPtr cond, GraphPtr body, detail::Closed vjp, size_t n_carry, Lanes lanes)
      : cond_(std::move(cond)),
        body_(std::move(body)),
        vjp_(std::move(vjp.graph)),
        n_lifted_(vjp.lifted.size()),
        nc_(n_carry),
        lanes_(std::move(lanes)) {
    const size_t nk = cond_->inputs.size() - nc_;
    for (size_t i = 0; i < nc_; ++i)
      if (detail::has_tangent(body_->types[body_->inputs[i]])) fc_.push_back(i);
    for (size_t i = nc_; i < nc_ + nk; ++i)
      if (detail::has_tangent(body_->types[body_->inputs[i]])) fk_.push_back(i);
    if (!lanes_.on()) {
      cond_run_ = std::make_shared<detail::GraphRunner>(cond_);
      body_run_ = std::make_shared<detail::GraphRunner>(body_);
      vjp_run_ = std::make_shared<detail::GraphRunner>(vjp_);
      return;
    }
    const std::vector<bool> m = lane_flags(nc_, lanes_);
    lane_cond_ = std::make_shared<detail::LaneRunners>(cond_, m, lanes_.options);
    lane_body_ = std::make_shared<detail::LaneRunners>(body_, m, lanes_.options);
    std::vector<bool> vm = m;
    vm.insert(vm.end(), fc_.size(), true);
    vm.insert(vm.end(), n_lifted_, false);
    lane_vjp_ = std::make_shared<detail::LaneRunners>(vjp_, vm, lanes_.options);
  }
  std::string name() const override { return "while_vjp"; }
  std::string params() const override {
    return "cond=" + detail::ref(*cond_) + ", body=" + detail::ref(*body_) +
           ", carry=" + std::to_string(nc_) +
           (lanes_.on() ? ", lanes=" + std::to_string(lanes_.size) : "");
  }
  std::vector<std::pair<std::string, const Graph*>> subgraphs() const override {
    return {{"cond", cond_.get()}, {"body", body_.get()}, {"body vjp", vjp_.get()}};
  }
  std::vector<TensorType> infer(const std::vector<TensorType>& in) const override {
    check(in.size() == cond_->inputs.size() + fc_.size() + n_lifted_, "while_vjp: ", in.size(),
          " inputs");
    std::vector<TensorType> out;
    for (size_t i : fc_) out.push_back(in[i]);
    for (size_t i : fk_)
      out.push_back(lanes_.on()
                        ? TensorType{with_lanes(body_->types[body_->inputs[i]].shape, lanes_.size),
                                     in[i].dtype}
                        : in[i]);
    return out;
  }
  std::vector<Tensor> eval(const std::vector<Tensor>& in) const override;
  std::vector<Batched> batch(const std::vector<Batched>& in, int64_t size) const override;
  std::vector<Tensor> jvp(const std::vector<Tensor>&, const std::vector<Tensor>&,
                          const std::vector<Tensor>&) const override {
    unsupported();
  }
  std::vector<Tensor> vjp(const std::vector<Tensor>&, const std::vector<Tensor>&,
                          const std::vector<Tensor>&) const override {
    unsupported();
  }

 private:
  [[noreturn]] static void unsupported() {
    fail(
        "while_loop: derivatives of the reverse pass through a while_loop (second order) are not "
        "supported; a fori_loop with int64_t bounds (a scan) supports every order");
  }
  GraphPtr cond_, body_, vjp_;
  size_t n_lifted_, nc_;
  Lanes lanes_;
  std::vector<size_t> fc_, fk_;
  std::shared_ptr<detail::LaneRunners> lane_cond_, lane_body_, lane_vjp_;
  std::shared_ptr<detail::GraphRunner> cond_run_, body_run_, vjp_run_;
};

std::vector<Tensor> WhileVjp::eval(const std::vector<Tensor>& in) const {
  const size_t nk = cond_->inputs.size() - nc_;
  std::vector<Tensor> carry(in.begin(), in.begin() + int64_t(nc_));
  const std::vector<Tensor> consts(in.begin() + int64_t(nc_), in.begin() + int64_t(nc_ + nk));
  std::vector<Tensor> ct(in.begin() + int64_t(nc_ + nk),
                         in.begin() + int64_t(nc_ + nk + fc_.size()));
  const std::vector<Tensor> lifted(in.begin() + int64_t(nc_ + nk + fc_.size()), in.end());
  const int64_t B = lanes_.size;
  std::vector<std::vector<Tensor>> record;
  std::vector<std::vector<bool>> active;
  for (;;) {  // forward, recording
    if (!lanes_.on()) {
      if (!(*cond_run_)(concat_args(carry, consts))[0].item<bool>()) break;
      record.push_back(carry);
      carry = (*body_run_)(concat_args(carry, consts));
      continue;
    }
    const std::vector<uint8_t> p =
        lane_cond_->run(B, concat_args(carry, consts))[0].to_vector<uint8_t>();
    std::vector<bool> on(p.begin(), p.end());
    bool any = false;
    for (bool b : on) any = any || b;
    if (!any) break;
    record.push_back(carry);
    const std::vector<Tensor> next = lane_body_->run(B, concat_args(carry, consts));
    for (size_t k = 0; k < nc_; ++k)
      carry[k] = where(lane_mask(on, carry[k].ndim()), next[k], carry[k]);
    active.push_back(std::move(on));
  }
  std::vector<Tensor> acc;
  for (size_t i : fk_) {
    const TensorType& t = body_->types[body_->inputs[i]];
    acc.push_back(zeros(lanes_.on() ? with_lanes(t.shape, B) : t.shape, t.dtype));
  }
  for (size_t t = record.size(); t-- > 0;) {  // backward over the record
    std::vector<Tensor> args = concat_args(concat_args(record[t], consts), ct);
    args = concat_args(args, lifted);
    const std::vector<Tensor> r = lanes_.on() ? lane_vjp_->run(B, args) : (*vjp_run_)(args);
    for (size_t j = 0; j < fc_.size(); ++j)
      ct[j] = lanes_.on() ? where(lane_mask(active[t], r[j].ndim()), r[j], ct[j]) : r[j];
    for (size_t j = 0; j < fk_.size(); ++j) {
      const Tensor& d = r[fc_.size() + j];
      acc[j] = acc[j] + (lanes_.on() ? where(lane_mask(active[t], d.ndim()), d, zeros_like(d)) : d);
    }
  }
  return concat_args(ct, acc);
}

std::vector<Batched> WhileVjp::batch(const std::vector<Batched>& in, int64_t size) const {
  const size_t nk = cond_->inputs.size() - nc_, nf = fc_.size(), n = nc_ + nk + nf;
  for (size_t i = n; i < in.size(); ++i)
    check(!in[i].mapped(), "while_vjp: a lifted constant is mapped (a bug in lanes)");
  // Every carry and cotangent gets lanes: each lane runs its own trip count.
  auto carries_lanes = [&](size_t i) { return i < nc_ || i >= nc_ + nk; };
  std::vector<Tensor> args;
  std::vector<bool> mapped;
  Lanes l;
  if (!lanes_.on()) {
    for (size_t i = 0; i < n; ++i) {
      const bool m = carries_lanes(i) || in[i].mapped();
      args.push_back(m ? batching::batch_at_front(in[i], size) : in[i].value);
      if (i < nc_ + nk) mapped.push_back(m);
    }
    l = Lanes{size, mapped, batching::current_options()};
  } else {
    std::vector<bool> inner;
    for (size_t i = 0; i < n; ++i) inner.push_back(carries_lanes(i) || lanes_.mapped[i]);
    args = merge_lanes(std::vector<Batched>(in.begin(), in.begin() + int64_t(n)), inner,
                       lanes_.size, size);
    for (size_t i = 0; i < nc_ + nk; ++i) mapped.push_back(inner[i] || in[i].mapped());
    l = Lanes{size * lanes_.size, mapped, lanes_.options};
  }
  std::vector<Tensor> lifted;
  for (size_t i = n; i < in.size(); ++i) lifted.push_back(in[i].value);
  args.insert(args.end(), lifted.begin(), lifted.end());
  const auto node =
      std::make_shared<const WhileVjp>(cond_, body_, detail::Closed{vjp_, lifted}, nc_, l);
  const std::vector<Tensor> ys = lanes::bind(node, args);
  if (lanes_.on()) return split_lanes(ys, size, lanes_.size);
  std::vector<Batched> out;
  for (const Tensor& y : ys) out.push_back({y, 0});
  return out;
}

}  // namespace

While::While(GraphPtr cond, GraphPtr body, size_t n_carry, Lanes lanes)
    : cond_(std::move(cond)), body_(std::move(body)), n_carry_(n_carry), lanes_(std::move(lanes)) {
  if (lanes_.on()) {
    cond_lanes_ = std::make_shared<detail::LaneRunners>(cond_, lanes_.mapped, lanes_.options);
    std::vector<bool> m = lanes_.mapped;
    m.push_back(true);  // the predicate
    step_lanes_ = std::make_shared<detail::LaneRunners>(lane_step(*cond_, *body_, n_carry_), m,
                                                        lanes_.options);
  } else {
    std::vector<bool> consts(body_->inputs.size(), true);
    std::fill(consts.begin(), consts.begin() + int64_t(n_carry_), false);
    cond_runner_ = std::make_shared<detail::LoopBody>(cond_, consts);
    body_runner_ = std::make_shared<detail::LoopBody>(body_, consts);
  }
}

std::string While::params() const {
  std::string s = "cond=" + detail::ref(*cond_) + ", body=" + detail::ref(*body_) +
                  ", carry=" + std::to_string(n_carry_);
  if (!lanes_.on()) return s;
  static const char* names[] = {"auto", "mask", "compact"};
  s += ", lanes=" + std::to_string(lanes_.size) + ", mapped=";
  for (bool m : lanes_.mapped) s += m ? '1' : '0';
  return s + ", strategy=" + names[int(lanes_.options.loop)];
}

std::vector<std::pair<std::string, const Graph*>> While::subgraphs() const {
  return {{"cond", cond_.get()}, {"body", body_.get()}};
}

std::vector<TensorType> While::infer(const std::vector<TensorType>& in) const {
  const Graph& b = *body_;
  check(in.size() == b.inputs.size(), "while: ", in.size(), " inputs for a body of ",
        b.inputs.size());
  for (size_t i = 0; i < in.size(); ++i) {
    TensorType want = b.types[b.inputs[i]];
    if (lanes_.on() && lanes_.mapped[i]) want.shape = with_lanes(want.shape, lanes_.size);
    check(in[i] == want, "while: input ", i, " is ", fmt(in[i].shape), " ", dtype_name(in[i].dtype),
          ", the body takes ", fmt(want.shape), " ", dtype_name(want.dtype));
  }
  return std::vector<TensorType>(in.begin(), in.begin() + int64_t(n_carry_));
}

std::vector<Tensor> While::eval(const std::vector<Tensor>& in) const {
  return eval_consuming(std::vector<Tensor>(in));
}

// Consumes its inputs (moves from and clears `in`) so the initial carry is released once the first
// iteration has replaced it.
std::vector<Tensor> While::eval_consuming(std::vector<Tensor>&& in) const {
  if (lanes_.on())
    return run_lane_loop(*cond_lanes_, *step_lanes_, n_carry_, lanes_, std::move(in));
  // The invariant parts of cond and body (on the consts alone) are computed once.
  const std::vector<Tensor> hc = cond_runner_->start(in), hb = body_runner_->start(in);
  std::vector<Tensor> carry(std::make_move_iterator(in.begin()),
                            std::make_move_iterator(in.begin() + int64_t(n_carry_)));
  const std::vector<Tensor> consts(in.begin() + int64_t(n_carry_), in.end());
  in.clear();
  while (cond_runner_->step(concat_args(carry, consts), hc)[0].template item<bool>())
    carry = body_runner_->step(concat_args(carry, consts), hb);
  return carry;
}

// ---- vmap --------------------------------------------------------------------------------------

namespace {

// Lanes that stop on their own run the body on a changing set of lanes, so a collective over this
// vmap's axis there has no well-defined set of values to combine (the lanes still running?). Say
// so, naming the collective, instead of failing later in a replay of the body with "unknown axis
// name". One over an outer axis is fine: the outer vmap batches this node in step
// (batch_outer_in_lanes).
void check_no_collective(const Graph& cond, const Graph& body) {
  const std::string& axis = batching::current_options().axis_name;
  if (axis.empty()) return;
  for (const Graph* g : {&cond, &body})
    if (const Node* c = detail::find_collective(*g, axis))
      fail(c->prim->name(), " over axis '", axis, "' sits inside a cond, while_loop or scan that ",
           "the vmap of that axis batches, where its lanes may be partitioned or masked: compute "
           "it outside the control flow");
}

}  // namespace

// A lane node under an outer vmap whose cond or body holds a collective over that vmap's axis:
// the node keeps its own lanes, and cond and body are batched over the outer axis now, while its
// frame is open (each lane's carries hold every outer example). A lane then runs while any of its
// outer examples does, the finished ones kept as they are, so the collective combines every
// outer example's carry at each step, as jax's masked loop would.
std::vector<Batched> While::batch_outer_in_lanes(const std::vector<Batched>& in,
                                                 int64_t size) const {
  const size_t nc = n_carry_;
  std::vector<bool> outer;
  for (const Batched& b : in) outer.push_back(b.mapped());
  carry_fixpoint(*body_, nc, size, outer);
  const bool per_example = detail::mapped_outputs(*cond_, outer, size)[0];
  if (per_example) std::fill(outer.begin(), outer.begin() + int64_t(nc), true);
  const std::vector<bool> carry_outer(outer.begin(), outer.begin() + int64_t(nc));
  std::vector<detail::Closed> closed{
      detail::batch_subgraph(*cond_, outer, size, {false}, /*lockstep=*/true).closed,
      detail::batch_subgraph(*body_, outer, size, carry_outer, /*lockstep=*/true).closed};
  const Widened w = widen_all(std::move(closed), outer_inside(in, lanes_.mapped, outer, size));
  const GraphPtr pred = w.graphs[0], step = w.graphs[1];
  const std::vector<TensorType> types = detail::input_types(*pred);
  // With a predicate per outer example: run while any runs; keep the finished ones' carries.
  auto cond = detail::trace_closed(types, [&](const std::vector<Tensor>& x) {
    const Tensor p = eval_graph(*pred, x)[0];
    return std::vector<Tensor>{per_example ? lanes::max(p, 0) : p};
  });
  auto body = detail::trace_closed(types, [&](const std::vector<Tensor>& x) {
    std::vector<Tensor> next = eval_graph(*step, x);
    if (!per_example) return next;
    const Tensor p = eval_graph(*pred, x)[0];
    for (size_t k = 0; k < nc; ++k) {
      Shape s(size_t(next[k].ndim()), 1);
      s[0] = size;
      next[k] = where(reshape(p, s), next[k], x[k]);
    }
    return next;
  });
  const Widened v = widen_all({std::move(cond), std::move(body)}, w.operands);
  std::vector<bool> lanes = lanes_.mapped;
  lanes.resize(v.operands.size(), false);
  const auto node = std::make_shared<const While>(v.graphs[0], v.graphs[1], nc,
                                                  Lanes{lanes_.size, lanes, lanes_.options});
  std::vector<Batched> out;
  const std::vector<Tensor> ys = lanes::bind(node, v.operands);
  for (size_t k = 0; k < nc; ++k) out.push_back({ys[k], carry_outer[k] ? 1 : kNotMapped});
  return out;
}

std::vector<Batched> While::batch(const std::vector<Batched>& in, int64_t size) const {
  const size_t nc = n_carry_;
  const std::string& axis = batching::current_options().axis_name;
  if (lanes_.on() && !axis.empty() &&
      (detail::find_collective(*cond_, axis) || detail::find_collective(*body_, axis)))
    return batch_outer_in_lanes(in, size);
  if (lanes_.on()) {
    std::vector<bool> mapped;
    const std::vector<Tensor> args = merge_lanes(in, lanes_.mapped, lanes_.size, size);
    for (size_t i = 0; i < in.size(); ++i) mapped.push_back(lanes_.mapped[i] || in[i].mapped());
    const auto node = std::make_shared<const While>(
        cond_, body_, nc, Lanes{size * lanes_.size, mapped, lanes_.options});
    return split_lanes(lanes::bind(node, args), size, lanes_.size);
  }
  std::vector<bool> m;
  for (const Batched& b : in) m.push_back(b.mapped());
  carry_fixpoint(*body_, nc, size, m);
  const bool per_lane = detail::mapped_outputs(*cond_, m, size)[0];
  if (per_lane)
    for (size_t k = 0; k < nc; ++k) m[k] = true;  // each lane stops on its own
  std::vector<Tensor> args;
  for (size_t i = 0; i < in.size(); ++i)
    args.push_back(!m[i] ? in[i].value : batching::batch_at_front(in[i], size));
  std::vector<Batched> out;
  if (detail::explaining()) {
    static const char* how[] = {
        "auto (compacts once the time spent on finished lanes would pay for gathering the "
        "running ones)",
        "mask (every lane runs until the last is done)",
        "compact (gathers the running lanes whenever a quarter of them have finished)"};
    batching::note_control_flow(
        per_lane
            ? "while over " + std::to_string(size) +
                  " lanes, each stopping on its own: " + how[int(batching::current_options().loop)]
            : std::string("while: stays a while (the predicate is the same for every example)"));
  }
  if (per_lane) {
    check_no_collective(*cond_, *body_);
    const auto node = std::make_shared<const While>(cond_, body_, nc,
                                                    Lanes{size, m, batching::current_options()});
    for (Tensor& y : lanes::bind(node, args)) out.push_back({std::move(y), 0});
    return out;
  }
  const std::vector<bool> carry_m(m.begin(), m.begin() + int64_t(nc));
  std::vector<detail::Closed> closed{detail::batch_subgraph(*cond_, m, size, {false}).closed,
                                     detail::batch_subgraph(*body_, m, size, carry_m).closed};
  Widened w = widen_all(std::move(closed), args);
  const std::vector<Tensor> ys =
      lanes::bind(std::make_shared<const While>(w.graphs[0], w.graphs[1], nc), w.operands);
  for (size_t k = 0; k < nc; ++k) out.push_back({ys[k], m[k] ? 0 : kNotMapped});
  return out;
}

// ---- jvp: the tangents ride along as more carries ---------------------------------------------

std::vector<Tensor> While::jvp(const std::vector<Tensor>& primals,
                               const std::vector<Tensor>& tangents,
                               const std::vector<Tensor>& outputs) const {
  const Graph& b = *body_;
  const size_t nc = n_carry_, n = b.inputs.size();
  bool any = false;
  for (const Tensor& t : tangents) any = any || t.defined();
  if (!any) return std::vector<Tensor>(outputs.size());
  std::vector<bool> with(n);
  for (size_t i = 0; i < n; ++i)
    with[i] = detail::has_tangent(b.types[b.inputs[i]]) && (i < nc || tangents[i].defined());
  const detail::Closed j = detail::jvp_subgraph(b, with);
  // j: inputs (carry, consts, t of `with`, lifted) -> (carry, t_carry for every carry).
  // Reordered to (carry, t_carry, consts, t_consts, lifted) -> (carry, t_carry of `with`).
  std::vector<size_t> t_pos(n, 0), order, outs;
  size_t next = n;
  for (size_t i = 0; i < n; ++i)
    if (with[i]) t_pos[i] = next++;
  std::vector<Tensor> args;
  std::vector<TensorType> t_carry_types, t_const_types;
  for (size_t i = 0; i < nc; ++i) {
    order.push_back(i);
    outs.push_back(i);
    args.push_back(primals[i]);
  }
  for (size_t i = 0; i < nc; ++i)
    if (with[i]) {
      order.push_back(t_pos[i]);
      outs.push_back(nc + i);
      args.push_back(or_zeros(tangents[i], {primals[i].shape(), primals[i].dtype()}));
      t_carry_types.push_back(b.types[b.inputs[i]]);
    }
  const size_t n_carry = args.size();
  for (size_t i = nc; i < n; ++i) {
    order.push_back(i);
    args.push_back(primals[i]);
  }
  for (size_t i = nc; i < n; ++i)
    if (with[i]) {
      order.push_back(t_pos[i]);
      args.push_back(tangents[i]);
      t_const_types.push_back(b.types[b.inputs[i]]);
    }
  for (size_t i = 0; i < j.lifted.size(); ++i) order.push_back(next + i);
  Graph body = *j.graph;
  body.inputs.clear();
  body.outputs.clear();
  for (size_t i : order) body.inputs.push_back(j.graph->inputs[i]);
  for (size_t k : outs) body.outputs.push_back(j.graph->outputs[k]);
  const GraphPtr c1 = detail::with_unused_inputs(*cond_, nc, t_carry_types);
  const GraphPtr c2 = detail::with_unused_inputs(*c1, c1->inputs.size(), t_const_types);
  std::vector<detail::Closed> closed{{c2, {}},
                                     {std::make_shared<const Graph>(std::move(body)), j.lifted}};
  Widened w = widen_all(std::move(closed), args);
  Lanes l = lanes_;
  if (l.on()) {  // carries and their tangents have lanes; a const's tangent as its const
    l.mapped.assign(n_carry, true);
    for (size_t i = nc; i < n; ++i) l.mapped.push_back(lanes_.mapped[i]);
    for (size_t i = nc; i < n; ++i)
      if (with[i]) l.mapped.push_back(lanes_.mapped[i]);
    l.mapped.resize(w.operands.size(), false);
  }
  const std::vector<Tensor> ys =
      lanes::bind(std::make_shared<const While>(w.graphs[0], w.graphs[1], n_carry, l), w.operands);
  std::vector<Tensor> result(outputs.size());
  size_t t = nc;
  for (size_t k = 0; k < nc; ++k)
    if (with[k]) result[k] = ys[t++];
  return result;
}

// ---- vjp: while_vjp records the forward pass and replays the body's vjp backwards --------------

std::vector<Tensor> While::vjp(const std::vector<Tensor>& primals, const std::vector<Tensor>& cts,
                               const std::vector<Tensor>& outputs) const {
  const Graph& b = *body_;
  const size_t nc = n_carry_, n = b.inputs.size();
  std::vector<bool> wrt(n);
  for (size_t i = 0; i < n; ++i) wrt[i] = detail::has_tangent(b.types[b.inputs[i]]);
  detail::Closed v = detail::vjp_subgraph(b, wrt);
  std::vector<Tensor> args = primals;
  for (size_t k = 0; k < nc; ++k)
    if (wrt[k]) args.push_back(or_zeros(cts[k], {outputs[k].shape(), outputs[k].dtype()}));
  args.insert(args.end(), v.lifted.begin(), v.lifted.end());
  const auto node = std::make_shared<const WhileVjp>(cond_, body_, std::move(v), nc, lanes_);
  const std::vector<Tensor> r = lanes::bind(node, args);
  std::vector<Tensor> result(n);
  size_t next = 0;
  for (size_t i = 0; i < n; ++i) {
    if (!wrt[i]) continue;
    Tensor ct = r[next++];
    if (lanes_.on() && i >= nc && !lanes_.mapped[i]) ct = sum(ct, Axes{0});
    result[i] = ct;
  }
  return result;
}

}  // namespace lanes::prim
