// scan (and static fori_loop, map): every rule in one place.
#include <cstring>

#include "lanes/ops.h"
#include "primitives/control_flow.h"
#include "primitives/dot_general.h"
#include "transforms/batching.h"

namespace lanes::prim {

namespace {

Shape with_length(Shape s, int64_t n) {
  s.insert(s.begin(), n);
  return s;
}

// Slice t of axis 0 of a concrete tensor: a view.
Tensor step_of(const Tensor& x, int64_t t) {
  Shape shape(x.shape().begin() + 1, x.shape().end());
  Strides strides(x.strides().begin() + 1, x.strides().end());
  return x.view(shape, strides, x.offset() + t * x.strides()[0]);
}

// g with its inputs and outputs listed in a new order (positions into the old lists).
GraphPtr reordered(const Graph& g, const std::vector<size_t>& inputs,
                   const std::vector<size_t>& outputs) {
  Graph out = g;
  out.inputs.clear();
  out.outputs.clear();
  for (size_t i : inputs) out.inputs.push_back(g.inputs[i]);
  for (size_t k : outputs) out.outputs.push_back(g.outputs[k]);
  return std::make_shared<const Graph>(std::move(out));
}

std::vector<size_t> range(size_t lo, size_t hi) {
  std::vector<size_t> r;
  for (size_t i = lo; i < hi; ++i) r.push_back(i);
  return r;
}

// A closed body whose inputs are (carry, consts, xs, lifted): lifted moved in after the consts,
// so the scan takes them as more consts.
GraphPtr lifted_as_consts(const detail::Closed& c, size_t n_carry, size_t n_consts, size_t n_xs) {
  const size_t n = n_carry + n_consts + n_xs, lifted = c.lifted.size();
  std::vector<size_t> order = range(0, n_carry + n_consts);
  for (size_t i : range(n, n + lifted)) order.push_back(i);
  for (size_t i : range(n_carry + n_consts, n)) order.push_back(i);
  return reordered(*c.graph, order, range(0, c.graph->outputs.size()));
}

// The reverse pass sums, over the steps, each const's cotangent: for a weight, usually a product
// of two per-step values (an outer product of a layer's input and its output's cotangent), or a
// sum of such products. Adding them into a carried accumulator step by step costs a pass over
// the weight-sized sum per step (per example under vmap: 5.8x the unrolled loop on an LSTM). So
// the products' operands are stacked as ys instead and contracted over the steps after the loop,
// one dot_general (as merge_dot_sums does for unrolled loops). What is not such a product stays
// in the accumulator.
struct DotTerm {
  size_t node;                      // the dot_general
  std::vector<PrimitivePtr> after;  // layout prims applied to its result (transpose, ...)
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
    if (as_term(v, t)) {
      s.terms.push_back(std::move(t));
    } else {
      s.rest.push_back(v);
    }
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

// The consts are the same on every step: what depends on them alone is computed once.
std::vector<bool> invariant(size_t n, size_t n_carry, size_t n_consts) {
  std::vector<bool> inv(n, false);
  for (size_t i = n_carry; i < n_carry + n_consts; ++i) inv[i] = true;
  return inv;
}

}  // namespace

Scan::Scan(GraphPtr body, size_t n_carry, size_t n_consts, int64_t length, bool reverse)
    : body_(std::move(body)),
      n_carry_(n_carry),
      n_consts_(n_consts),
      length_(length),
      reverse_(reverse),
      loop_(std::make_shared<detail::LoopBody>(
          body_, invariant(body_->inputs.size(), n_carry, n_consts))) {}

std::string Scan::params() const {
  return "body=" + detail::ref(*body_) + ", carry=" + std::to_string(n_carry_) +
         ", consts=" + std::to_string(n_consts_) + ", length=" + std::to_string(length_) +
         (reverse_ ? ", reverse" : "");
}

std::vector<std::pair<std::string, const Graph*>> Scan::subgraphs() const {
  return {{"body", body_.get()}};
}

std::vector<TensorType> Scan::infer(const std::vector<TensorType>& in) const {
  const Graph& g = *body_;
  check(in.size() == g.inputs.size(), "scan: ", in.size(), " inputs for a body of ",
        g.inputs.size());
  for (size_t i = 0; i < in.size(); ++i) {
    TensorType want = g.types[g.inputs[i]];
    if (i >= n_carry_ + n_consts_) want.shape = with_length(want.shape, length_);
    check(in[i] == want, "scan: input ", i, " is ", fmt(in[i].shape), " ", dtype_name(in[i].dtype),
          ", the body takes ", fmt(want.shape), " ", dtype_name(want.dtype));
  }
  std::vector<TensorType> out = detail::output_types(g);
  for (size_t k = n_carry_; k < out.size(); ++k) out[k].shape = with_length(out[k].shape, length_);
  return out;
}

std::vector<Tensor> Scan::eval(const std::vector<Tensor>& in) const {
  const Graph& g = *body_;
  std::vector<Tensor> args(in.begin(), in.begin() + int64_t(n_carry_ + n_consts_));
  const std::vector<Tensor> xs(in.begin() + int64_t(n_carry_ + n_consts_), in.end());
  args.resize(in.size());
  std::vector<Tensor> out(g.outputs.size());
  for (size_t k = n_carry_; k < out.size(); ++k) {
    const TensorType& t = g.types[g.outputs[k]];
    out[k] = Tensor::empty(with_length(t.shape, length_), t.dtype);
  }
  for (size_t k = 0; k < n_carry_; ++k) out[k] = in[k];
  const std::vector<Tensor> hoisted = loop_->start(in);
  for (int64_t s = 0; s < length_; ++s) {
    const int64_t t = reverse_ ? length_ - 1 - s : s;
    for (size_t k = 0; k < n_carry_; ++k) args[k] = out[k];
    for (size_t j = 0; j < xs.size(); ++j) args[n_carry_ + n_consts_ + j] = step_of(xs[j], t);
    std::vector<Tensor> res = loop_->step(args, hoisted);
    for (size_t k = 0; k < n_carry_; ++k) out[k] = std::move(res[k]);
    for (size_t k = n_carry_; k < out.size(); ++k) {
      const Tensor y = res[k].contiguous();
      const size_t bytes = size_t(y.numel()) * dtype_size(y.dtype());
      std::memcpy(static_cast<char*>(out[k].raw_mutable_data()) + size_t(t) * bytes, y.raw_data(),
                  bytes);
    }
  }
  return out;
}

// ---- vmap: which carries are mapped is a fixpoint over the body -----------------------------

std::vector<Batched> Scan::batch(const std::vector<Batched>& in, int64_t size) const {
  const Graph& g = *body_;
  const size_t nc = n_carry_, nk = n_consts_, nx = in.size() - nc - nk;
  std::vector<bool> in_m;
  for (const Batched& b : in) in_m.push_back(b.mapped());
  std::vector<bool> out_m;
  for (;;) {
    out_m = detail::mapped_outputs(g, in_m, size);
    bool changed = false;
    for (size_t k = 0; k < nc; ++k)
      if (out_m[k] && !in_m[k]) in_m[k] = changed = true;
    if (!changed) break;
  }
  for (size_t k = 0; k < nc; ++k) out_m[k] = in_m[k];
  detail::BatchedGraph bg = detail::batch_subgraph(g, in_m, size, out_m);
  std::vector<Tensor> args;
  for (size_t i = 0; i < in.size(); ++i) {
    const Batched& b = in[i];
    if (i < nc) {
      args.push_back(in_m[i] ? batching::batch_at_front(b, size) : b.value);
    } else if (i < nc + nk) {
      args.push_back(b.mapped() ? batching::move_batch_dim(b, 0) : b.value);
    } else {  // the body sees x_t with its lanes first: xs hold them at dim 1
      args.push_back(b.mapped() ? batching::move_batch_dim(b, 1) : b.value);
    }
  }
  const size_t lifted = bg.closed.lifted.size();
  args.insert(args.begin() + int64_t(nc + nk), bg.closed.lifted.begin(), bg.closed.lifted.end());
  const auto node = std::make_shared<const Scan>(lifted_as_consts(bg.closed, nc, nk, nx), nc,
                                                 nk + lifted, length_, reverse_);
  std::vector<Batched> out;
  const std::vector<Tensor> ys = lanes::bind(node, args);
  for (size_t k = 0; k < ys.size(); ++k)
    out.push_back({ys[k], !bg.out_mapped[k] ? kNotMapped : k < nc ? 0 : 1});
  return out;
}

// ---- jvp: a scan carrying the tangents beside the carries ------------------------------------

std::vector<Tensor> Scan::jvp(const std::vector<Tensor>& primals,
                              const std::vector<Tensor>& tangents,
                              const std::vector<Tensor>& outputs) const {
  const Graph& g = *body_;
  const size_t nc = n_carry_, nk = n_consts_, n = g.inputs.size(), ny = g.outputs.size() - nc;
  bool any = false;
  for (const Tensor& t : tangents) any = any || t.defined();
  if (!any) return std::vector<Tensor>(outputs.size());
  // Every float carry gets a tangent (it may become nonzero after a step); consts and xs only
  // where one was given.
  std::vector<bool> with(n);
  for (size_t i = 0; i < n; ++i) {
    const bool floating = detail::has_tangent(g.types[g.inputs[i]]);
    with[i] = floating && (i < nc || tangents[i].defined());
  }
  const detail::Closed j = detail::jvp_subgraph(g, with);
  // j: inputs (carry, consts, xs, tangents of `with`, lifted), outputs (carry, ys, t_carry,
  // t_ys). The new scan: carry (carry, t_carry), consts (consts, t_consts, lifted), xs (xs, t_xs).
  std::vector<size_t> t_pos(n, 0);
  size_t next = n;
  for (size_t i = 0; i < n; ++i)
    if (with[i]) t_pos[i] = next++;
  std::vector<size_t> order = range(0, nc), outs = range(0, nc);
  std::vector<Tensor> args(primals.begin(), primals.begin() + int64_t(nc));
  size_t n_tc = 0, n_consts = nk, n_xs = n - nc - nk;
  for (size_t i = 0; i < nc; ++i)
    if (with[i]) {
      order.push_back(t_pos[i]);
      outs.push_back(nc + ny + i);
      args.push_back(or_zeros(tangents[i], {primals[i].shape(), primals[i].dtype()}));
      ++n_tc;
    }
  for (size_t i = nc; i < nc + nk; ++i) {
    order.push_back(i);
    args.push_back(primals[i]);
  }
  for (size_t i = nc; i < nc + nk; ++i)
    if (with[i]) {
      order.push_back(t_pos[i]);
      args.push_back(tangents[i]);
      ++n_consts;
    }
  for (size_t i = 0; i < j.lifted.size(); ++i) {
    order.push_back(next + i);
    args.push_back(j.lifted[i]);
    ++n_consts;
  }
  for (size_t i = nc + nk; i < n; ++i) {
    order.push_back(i);
    args.push_back(primals[i]);
  }
  for (size_t i = nc + nk; i < n; ++i)
    if (with[i]) {
      order.push_back(t_pos[i]);
      args.push_back(tangents[i]);
      ++n_xs;
    }
  for (size_t k = 0; k < ny; ++k) outs.push_back(nc + k);
  for (size_t k = 0; k < ny; ++k) outs.push_back(nc + ny + nc + k);
  const auto node = std::make_shared<const Scan>(reordered(*j.graph, order, outs), nc + n_tc,
                                                 n_consts, length_, reverse_);
  const std::vector<Tensor> ys = lanes::bind(node, args);
  std::vector<Tensor> result(outputs.size());
  size_t tc = nc;
  for (size_t k = 0; k < nc; ++k)
    if (with[k]) result[k] = ys[tc++];
  for (size_t k = 0; k < ny; ++k)
    if (detail::has_tangent(g.types[g.outputs[nc + k]])) result[nc + k] = ys[nc + n_tc + ny + k];
  return result;
}

// ---- vjp: a forward scan that also stacks the carries, then a scan the other way -------------

// The scan with its ys extended by the carry each step starts from: the reverse pass's record.
std::shared_ptr<const Scan> Scan::recording() const {
  Graph res = *body_;
  for (size_t k = 0; k < n_carry_; ++k) res.outputs.push_back(body_->inputs[k]);
  return std::make_shared<const Scan>(std::make_shared<const Graph>(std::move(res)), n_carry_,
                                      n_consts_, length_, reverse_);
}

// Under reverse mode the forward pass itself records the carries, so the vjp does not run the
// loop again (it did: 2x the forward GEMMs of an LSTM).
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

// The reverse pass given the carries each step started from (hist, stacked over the steps).
std::vector<Tensor> Scan::vjp_given(const std::vector<Tensor>& primals,
                                    const std::vector<Tensor>& cts,
                                    const std::vector<Tensor>& outputs,
                                    const std::vector<Tensor>& hist) const {
  const Graph& g = *body_;
  const size_t nc = n_carry_, nk = n_consts_, n = g.inputs.size(), ny = g.outputs.size() - nc;
  std::vector<bool> wrt(n), float_out;
  for (size_t i = 0; i < n; ++i) wrt[i] = detail::has_tangent(g.types[g.inputs[i]]);
  for (ValueId v : g.outputs) float_out.push_back(detail::has_tangent(g.types[v]));
  const detail::Closed v = detail::vjp_subgraph(g, wrt);
  std::vector<size_t> fc, fk, fx, fy;  // the float carries, consts, xs and ys
  for (size_t i = 0; i < nc; ++i)
    if (wrt[i]) fc.push_back(i);
  for (size_t i = nc; i < nc + nk; ++i)
    if (wrt[i]) fk.push_back(i);
  for (size_t i = nc + nk; i < n; ++i)
    if (wrt[i]) fx.push_back(i);
  for (size_t k = nc; k < nc + ny; ++k)
    if (float_out[k]) fy.push_back(k);

  // The consts' cotangents: products summed after the loop, the rest accumulated in the carry.
  const Graph& vg = *v.graph;
  const SumSplitter splitter(vg);
  std::vector<ConstSum> sums;
  Graph vjp_split = vg;  // outputs: fc's cts, each const's rest, fx's cts, the terms' operands
  vjp_split.outputs.assign(vg.outputs.begin(), vg.outputs.begin() + int64_t(fc.size()));
  for (size_t j = 0; j < fk.size(); ++j) {
    sums.push_back(splitter.split(vg.outputs[fc.size() + j]));
    for (ValueId r : sums.back().rest) vjp_split.outputs.push_back(r);
  }
  vjp_split.outputs.insert(vjp_split.outputs.end(),
                           vg.outputs.begin() + int64_t(fc.size() + fk.size()), vg.outputs.end());
  for (const ConstSum& c : sums)
    for (const DotTerm& t : c.terms)
      for (ValueId x : vg.nodes[t.node].inputs) vjp_split.outputs.push_back(x);

  // The backward body: carry (ct of float carries, sums of the float consts' rest), consts
  // (all), xs (the carries, xs, cts of the float ys); ys (cts of the float xs, the operands).
  std::vector<TensorType> types;
  for (size_t i : fc) types.push_back(g.types[g.inputs[i]]);
  for (size_t i : fk) types.push_back(g.types[g.inputs[i]]);
  for (size_t i = nc; i < nc + nk; ++i) types.push_back(g.types[g.inputs[i]]);
  for (size_t i = 0; i < nc; ++i) types.push_back(g.types[g.inputs[i]]);
  for (size_t i = nc + nk; i < n; ++i) types.push_back(g.types[g.inputs[i]]);
  for (size_t k : fy) types.push_back(g.types[g.outputs[k]]);
  const size_t n_acc = fc.size() + fk.size();
  const detail::Closed back = detail::trace_closed(types, [&](const std::vector<Tensor>& a) {
    const Tensor* ct_c = a.data();
    const Tensor* acc = ct_c + fc.size();
    const Tensor* consts = acc + fk.size();
    const Tensor* carry = consts + nk;
    const Tensor* x = carry + nc;
    const Tensor* ct_y = x + (n - nc - nk);
    std::vector<Tensor> in(carry, carry + nc);
    in.insert(in.end(), consts, consts + nk);
    in.insert(in.end(), x, x + (n - nc - nk));
    in.insert(in.end(), ct_c, ct_c + fc.size());  // cts of the float carries out, then the ys'
    in.insert(in.end(), ct_y, ct_y + fy.size());
    in.insert(in.end(), v.lifted.begin(), v.lifted.end());
    const std::vector<Tensor> r = eval_graph(vjp_split, in);
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
  args.insert(args.end(), hist.begin(), hist.end());
  for (size_t i = nc + nk; i < n; ++i) args.push_back(primals[i]);
  for (size_t k : fy) args.push_back(or_zeros(cts[k], {outputs[k].shape(), outputs[k].dtype()}));
  const auto bwd = std::make_shared<const Scan>(
      lifted_as_consts(back, n_acc, nk, nc + (n - nc - nk) + fy.size()), n_acc,
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
