// Reverse mode through scan. The forward pass saves, per step, the values of the body that its
// reverse sweep reads (the carry a step starts from, its gates and activations: what manual
// backprop through time keeps), so the reverse pass never runs the body's forward again; the
// reverse pass is a scan the other way over those records. Weight cotangents that are sums of
// per-step products are contracted over the steps after the loop in one dot_general.
#include "lanes/autodiff.h"
#include "lanes/ops.h"
#include "primitives/control_flow.h"
#include "primitives/dot_general.h"

namespace lanes::prim {

namespace {

// The reverse pass sums, over the steps, each const's cotangent: for a weight, usually a product
// of two per-step values (an outer product of a layer's input and its output's cotangent), or a
// sum of such products. Adding them into a carried accumulator step by step costs a pass over
// the weight-sized sum per step (per example under vmap: 5.8x the unrolled loop on an LSTM). So
// the products' operands are stacked as ys instead and contracted over the steps after the loop,
// one dot_general (as merge_dot_sums does for unrolled loops). What is not such a product stays
// in the accumulator.
struct DotTerm {
  size_t node;                      // the dot_general
  std::vector<PrimitivePtr> after;  // layout prims applied to its result (transpose, reshape)
};
struct ConstSum {
  std::vector<DotTerm> terms;
  std::vector<ValueId> rest;  // summed in the accumulator
};

class SumSplitter {
 public:
  explicit SumSplitter(const Graph& g) : g_(g), producer_(g.types.size(), -1) {
    for (size_t i = 0; i < g.nodes.size(); ++i)
      for (ValueId v : g.nodes[i].outputs) producer_[v] = int64_t(i);
  }
  ConstSum split(ValueId v) const {
    ConstSum s;
    collect(v, s);
    return s;
  }

 private:
  void collect(ValueId v, ConstSum& s) const {
    const Node* n = producer_[v] < 0 ? nullptr : &g_.nodes[producer_[v]];
    if (n && n->prim->name() == "add" && g_.types[n->inputs[0]] == g_.types[v] &&
        g_.types[n->inputs[1]] == g_.types[v]) {
      collect(n->inputs[0], s);
      collect(n->inputs[1], s);
      return;
    }
    DotTerm t;
    if (as_term(v, t))
      s.terms.push_back(std::move(t));
    else
      s.rest.push_back(v);
  }
  bool as_term(ValueId v, DotTerm& t) const {
    if (producer_[v] < 0) return false;
    const Node& n = g_.nodes[producer_[v]];
    const std::string name = n.prim->name();
    if (name == "dot_general") {
      t.node = size_t(producer_[v]);
      return true;
    }
    if ((name == "transpose" || name == "reshape") && n.inputs.size() == 1) {
      t.after.insert(t.after.begin(), n.prim);
      return as_term(n.inputs[0], t);
    }
    return false;
  }
  const Graph& g_;
  std::vector<int64_t> producer_;
};

// dot_general's dims for operands stacked on a new leading axis that is contracted too.
DotDims over_steps(const DotDims& d) {
  auto shift = [](std::vector<int64_t> v, bool with_step) {
    for (int64_t& x : v) ++x;
    if (with_step) v.insert(v.begin(), 0);
    return v;
  };
  return {shift(d.lhs_contracting, true), shift(d.rhs_contracting, true), shift(d.lhs_batch, false),
          shift(d.rhs_batch, false)};
}

}  // namespace

// The body's reverse sweep as a graph over the body values it reads: inputs (reads, the
// cotangents of the float outputs, lifted), outputs the cotangents of the float inputs.
struct Scan::BodyVjp {
  Graph graph;
  std::vector<ValueId> reads;  // body values, in the graph's input order
  std::vector<ValueId> saved;  // the reads the forward pass records: carries and intermediates
  std::vector<Tensor> lifted;
  std::vector<bool> wrt;  // the body's float inputs
};

const Scan::BodyVjp& Scan::body_vjp() const {
  std::call_once(vjp_once_, [&] {
    const Graph& g = *body_;
    auto out = std::make_shared<BodyVjp>();
    const size_t n = g.inputs.size(), V = g.types.size();
    for (size_t i = 0; i < n; ++i) out->wrt.push_back(detail::has_tangent(g.types[g.inputs[i]]));
    const std::vector<bool> active = detail::active_values(g, out->wrt);
    std::vector<TensorType> types = g.types;  // a tracer for every body value
    for (ValueId v : g.outputs)
      if (detail::has_tangent(g.types[v])) types.push_back(g.types[v]);
    const detail::Closed c = detail::trace_closed(types, [&](const std::vector<Tensor>& a) {
      const std::vector<Tensor> env(a.begin(), a.begin() + int64_t(V));
      std::vector<Tensor> cts;
      size_t next = V;
      for (ValueId v : g.outputs)
        cts.push_back(detail::has_tangent(g.types[v]) ? a[next++] : Tensor());
      const std::vector<Tensor> all =
          detail::backward_sweep(g, env, active, nullptr, out->wrt, cts);
      std::vector<Tensor> kept;
      for (size_t i = 0; i < n; ++i)
        if (out->wrt[i]) kept.push_back(all[i]);
      return kept;
    });
    // Keep only the body values the sweep reads.
    Graph b = *c.graph;
    std::vector<bool> used(b.types.size(), false);
    for (const Node& node : b.nodes)
      for (ValueId v : node.inputs) used[v] = true;
    for (ValueId v : b.outputs) used[v] = true;
    std::vector<bool> is_const_or_x(V, false);
    for (size_t i = n_carry_; i < n; ++i) is_const_or_x[g.inputs[i]] = true;
    std::vector<ValueId> inputs;
    for (size_t v = 0; v < V; ++v)
      if (used[b.inputs[v]]) {
        inputs.push_back(b.inputs[v]);
        out->reads.push_back(ValueId(v));
        if (!is_const_or_x[v]) out->saved.push_back(ValueId(v));
      }
    inputs.insert(inputs.end(), b.inputs.begin() + int64_t(V), b.inputs.end());
    b.inputs = std::move(inputs);
    out->graph = std::move(b);
    out->lifted = c.lifted;
    vjp_ = std::move(out);
  });
  return *vjp_;
}

// The scan with its ys extended by the values the reverse sweep reads that only a step knows.
std::shared_ptr<const Scan> Scan::recording() const {
  Graph res = *body_;
  for (ValueId v : body_vjp().saved) res.outputs.push_back(v);
  return std::make_shared<const Scan>(std::make_shared<const Graph>(std::move(res)), n_carry_,
                                      n_consts_, length_, reverse_);
}

std::vector<Tensor> Scan::forward_with_residuals(const std::vector<Tensor>& inputs) const {
  return lanes::bind(recording(), inputs);
}

std::vector<Tensor> Scan::vjp_residuals(const std::vector<Tensor>& primals,
                                        const std::vector<Tensor>& cts,
                                        const std::vector<Tensor>& outputs,
                                        const std::vector<Tensor>& residuals,
                                        const std::vector<bool>&) const {
  return vjp_given(primals, cts, outputs, residuals);
}

std::vector<Tensor> Scan::vjp(const std::vector<Tensor>& primals, const std::vector<Tensor>& cts,
                              const std::vector<Tensor>& outputs) const {
  const std::vector<Tensor> f = lanes::bind(recording(), primals);
  return vjp_given(primals, cts, outputs,
                   std::vector<Tensor>(f.begin() + int64_t(outputs.size()), f.end()));
}

// The reverse pass given the records of the forward pass (`saved`, stacked over the steps).
std::vector<Tensor> Scan::vjp_given(const std::vector<Tensor>& primals,
                                    const std::vector<Tensor>& cts,
                                    const std::vector<Tensor>& outputs,
                                    const std::vector<Tensor>& saved) const {
  const Graph& g = *body_;
  const BodyVjp& bv = body_vjp();
  const size_t nc = n_carry_, nk = n_consts_, n = g.inputs.size(), nx = n - nc - nk;
  std::vector<size_t> fc, fk, fx, fy;  // the float carries, consts, xs and ys
  for (size_t i = 0; i < n; ++i)
    if (bv.wrt[i]) (i < nc ? fc : i < nc + nk ? fk : fx).push_back(i);
  for (size_t k = nc; k < g.outputs.size(); ++k)
    if (detail::has_tangent(g.types[g.outputs[k]])) fy.push_back(k);
  // Where each read comes from in a backward step: a const, an x, or a record.
  std::vector<int64_t> input_of(g.types.size(), -1), record_of(g.types.size(), -1);
  for (size_t i = 0; i < n; ++i) input_of[g.inputs[i]] = int64_t(i);
  for (size_t j = 0; j < bv.saved.size(); ++j) record_of[bv.saved[j]] = int64_t(j);

  // The consts' cotangents: products summed after the loop, the rest accumulated in the carry.
  const Graph& vg = bv.graph;
  const SumSplitter splitter(vg);
  std::vector<ConstSum> sums;
  Graph split = vg;  // outputs: fc's cts, each const's rest, fx's cts, the terms' operands
  split.outputs.assign(vg.outputs.begin(), vg.outputs.begin() + int64_t(fc.size()));
  for (size_t j = 0; j < fk.size(); ++j) {
    sums.push_back(splitter.split(vg.outputs[fc.size() + j]));
    for (ValueId r : sums.back().rest) split.outputs.push_back(r);
  }
  split.outputs.insert(split.outputs.end(), vg.outputs.begin() + int64_t(fc.size() + fk.size()),
                       vg.outputs.end());
  for (const ConstSum& c : sums)
    for (const DotTerm& t : c.terms)
      for (ValueId x : vg.nodes[t.node].inputs) split.outputs.push_back(x);

  // The backward body: carry (ct of float carries, sums of the float consts' rest), consts
  // (all), xs (the records, xs, cts of the float ys); ys (cts of the float xs, the operands).
  std::vector<TensorType> types;
  for (size_t i : fc) types.push_back(g.types[g.inputs[i]]);
  for (size_t i : fk) types.push_back(g.types[g.inputs[i]]);
  for (size_t i = nc; i < nc + nk; ++i) types.push_back(g.types[g.inputs[i]]);
  for (ValueId v : bv.saved) types.push_back(g.types[v]);
  for (size_t i = nc + nk; i < n; ++i) types.push_back(g.types[g.inputs[i]]);
  for (size_t k : fy) types.push_back(g.types[g.outputs[k]]);
  const size_t n_acc = fc.size() + fk.size();
  const detail::Closed back = detail::trace_closed(types, [&](const std::vector<Tensor>& a) {
    const Tensor* ct_c = a.data();
    const Tensor* acc = ct_c + fc.size();
    const Tensor* consts = acc + fk.size();
    const Tensor* record = consts + nk;
    const Tensor* x = record + bv.saved.size();
    const Tensor* ct_y = x + nx;
    std::vector<Tensor> in;
    for (ValueId v : bv.reads) {
      const int64_t i = input_of[v];
      in.push_back(record_of[v] >= 0      ? record[record_of[v]]
                   : i < int64_t(nc + nk) ? consts[i - int64_t(nc)]
                                          : x[i - int64_t(nc + nk)]);
    }
    in.insert(in.end(), ct_c, ct_c + fc.size());  // cts of the float carries out, then the ys'
    in.insert(in.end(), ct_y, ct_y + fy.size());
    in.insert(in.end(), bv.lifted.begin(), bv.lifted.end());
    const std::vector<Tensor> r = eval_graph(split, in);
    std::vector<Tensor> out(r.begin(), r.begin() + int64_t(fc.size()));
    size_t next = fc.size();
    for (size_t j = 0; j < fk.size(); ++j) {
      Tensor sum = acc[j];
      for (size_t k = 0; k < sums[j].rest.size(); ++k) sum = sum + r[next++];
      out.push_back(sum);
    }
    out.insert(out.end(), r.begin() + int64_t(next), r.end());
    return out;
  });
  std::vector<Tensor> args;
  for (size_t i : fc) args.push_back(or_zeros(cts[i], {outputs[i].shape(), outputs[i].dtype()}));
  for (size_t i : fk) args.push_back(zeros(primals[i].shape(), primals[i].dtype()));
  for (size_t i = nc; i < nc + nk; ++i) args.push_back(primals[i]);
  args.insert(args.end(), back.lifted.begin(), back.lifted.end());
  args.insert(args.end(), saved.begin(), saved.end());
  for (size_t i = nc + nk; i < n; ++i) args.push_back(primals[i]);
  for (size_t k : fy) args.push_back(or_zeros(cts[k], {outputs[k].shape(), outputs[k].dtype()}));
  const auto bwd = std::make_shared<const Scan>(
      lifted_as_consts(back, n_acc, nk, bv.saved.size() + nx + fy.size()), n_acc,
      nk + back.lifted.size(), length_, !reverse_);
  const std::vector<Tensor> r = lanes::bind(bwd, args);
  std::vector<Tensor> result(n);
  size_t next = 0;
  for (size_t i : fc) result[i] = r[next++];
  for (size_t i : fk) result[i] = r[next++];
  for (size_t i : fx) result[i] = r[next++];
  for (size_t j = 0; j < fk.size(); ++j)
    for (const DotTerm& t : sums[j].terms) {
      const auto& dot = static_cast<const DotGeneral&>(*vg.nodes[t.node].prim);
      const Tensor& lhs = r[next++];
      const Tensor& rhs = r[next++];
      Tensor term =
          lanes::bind1(std::make_shared<const DotGeneral>(over_steps(dot.dims())), {lhs, rhs});
      for (const PrimitivePtr& p : t.after) term = lanes::bind1(p, {term});
      result[fk[j]] = result[fk[j]] + term;
    }
  return result;
}

}  // namespace lanes::prim
