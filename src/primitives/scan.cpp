// scan (and static fori_loop, map): every rule in one place.
#include <algorithm>
#include <cstring>
#include <map>
#include <optional>

#include "lanes/cost.h"
#include "lanes/ops.h"
#include "lanes/parallel.h"
#include "primitives/control_flow.h"
#include "primitives/dot_general.h"
#include "runtime/thread_pool.h"
#include "transforms/batching.h"
#include "transforms/masking.h"

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
  return x.view(std::move(shape), std::move(strides), x.offset() + t * x.strides()[0]);
}

// Step t's y into row t of the ys whose data starts at `ys`.
void write_step(void* ys, const Tensor& y_step, int64_t t) {
  const Tensor y = y_step.contiguous();
  const size_t bytes = size_t(y.numel()) * dtype_size(y.dtype());
  std::memcpy(static_cast<char*>(ys) + size_t(t) * bytes, y.raw_data(), bytes);
}

// The consts are the same on every step: what depends on them alone is computed once.
std::vector<bool> invariant(size_t n, size_t n_carry, size_t n_consts) {
  std::vector<bool> inv(n, false);
  for (size_t i = n_carry; i < n_carry + n_consts; ++i) inv[i] = true;
  return inv;
}

}  // namespace

Scan::Scan(GraphPtr body, size_t n_carry, size_t n_consts, int64_t length, bool reverse,
           bool parallel)
    : body_(std::move(body)),
      n_carry_(n_carry),
      n_consts_(n_consts),
      length_(length),
      reverse_(reverse),
      parallel_(parallel && n_carry == 0),
      loop_(std::make_shared<detail::LoopBody>(
          body_, invariant(body_->inputs.size(), n_carry, n_consts))) {}

std::string Scan::params() const {
  return "body=" + detail::ref(*body_) + ", carry=" + std::to_string(n_carry_) +
         ", consts=" + std::to_string(n_consts_) + ", length=" + std::to_string(length_) +
         (reverse_ ? ", reverse" : "") + (parallel_ ? ", parallel" : "");
}

std::shared_ptr<const Scan> Scan::keeping_ys(const std::vector<bool>& keep) const {
  check(keep.size() + n_carry_ == body_->outputs.size(), "scan: ", keep.size(),
        " ys flags for a body of ", body_->outputs.size() - n_carry_, " ys");
  auto body = std::make_shared<Graph>(*body_);
  body->outputs.resize(n_carry_);
  for (size_t k = 0; k < keep.size(); ++k)
    if (keep[k]) body->outputs.push_back(body_->outputs[n_carry_ + k]);
  return std::make_shared<const Scan>(std::move(body), n_carry_, n_consts_, length_, reverse_,
                                      parallel_);
}

// Autodiff leaves both behind: the reverse scan of a gradient carries the cotangents of the
// weights that its body no longer adds to (their per-step terms leave as ys and are summed by one
// product after the loop), and returns one value as two ys. A carry passed through costs nothing
// in the loop, but what reads its final value (a zero, added to the product's sum) does not know
// it is the initial one. A ys that is a step of an xs is that xs (the reverse pass returns the
// forward's saved activations so): no copy.
Scan::Simplified Scan::simplified() const {
  const Graph& g = *body_;
  Simplified s;
  std::vector<size_t> kept, passed;
  for (size_t k = 0; k < n_carry_; ++k) (g.outputs[k] == g.inputs[k] ? passed : kept).push_back(k);
  s.outputs.assign(g.outputs.size(), 0);
  for (size_t k : passed) s.outputs[k] = -1 - int64_t(k);
  for (size_t i = 0; i < kept.size(); ++i) s.outputs[kept[i]] = int64_t(i);
  auto body = std::make_shared<Graph>(g);
  body->inputs.clear();
  body->outputs.clear();
  for (const std::vector<size_t>* group : {&kept, &passed})
    for (size_t k : *group) s.inputs.push_back(k);
  for (size_t i = n_carry_; i < g.inputs.size(); ++i) s.inputs.push_back(i);
  for (size_t i : s.inputs) body->inputs.push_back(g.inputs[i]);
  for (size_t k : kept) body->outputs.push_back(g.outputs[k]);
  std::map<ValueId, int64_t> first_as;  // a ys value -> the new output that holds it
  for (size_t i = n_carry_ + n_consts_; i < g.inputs.size(); ++i)
    first_as.emplace(g.inputs[i], -1 - int64_t(i));  // a step of xs, stacked again: the xs
  bool fewer = !passed.empty();
  for (size_t k = n_carry_; k < g.outputs.size(); ++k) {
    auto [at, fresh] = first_as.try_emplace(g.outputs[k], int64_t(body->outputs.size()));
    if (fresh) body->outputs.push_back(g.outputs[k]);
    fewer = fewer || !fresh;
    s.outputs[k] = at->second;
  }
  if (!fewer) return {};
  s.scan = std::make_shared<const Scan>(std::move(body), kept.size(), n_consts_ + passed.size(),
                                        length_, reverse_, parallel_);
  return s;
}

// A product of an xs step and a const is the same product on every step: over the stacked xs it
// is one product, which the kernel runs as one GEMM with the steps folded into M (rnn_scan's
// x_t W_x: a 4096 x 64 x 512 GEMM at ~325 GFLOP/s, against 64 GEMMs of 64 rows at ~155). Its
// result, `length` times a step's, is kept under this size.
constexpr double kHoistedBytes = 64 << 20;

Scan::Hoisted Scan::hoisted_products() const {
  const Graph& g = *body_;
  const size_t first_xs = n_carry_ + n_consts_;
  std::map<ValueId, size_t> input_at;  // a const's or xs's value -> its input position
  for (size_t i = n_carry_; i < g.inputs.size(); ++i) input_at.emplace(g.inputs[i], i);
  Hoisted h;
  auto body = std::make_shared<Graph>(g);
  body->nodes.clear();
  for (const Node& node : g.nodes) {
    const auto* dot = dynamic_cast<const DotGeneral*>(node.prim.get());
    const auto a = dot ? input_at.find(node.inputs[0]) : input_at.end();
    const auto b = dot ? input_at.find(node.inputs[1]) : input_at.end();
    const TensorType& out = g.types[node.outputs[0]];
    const double bytes = double(shape_numel(out.shape)) * double(dtype_size(out.dtype));
    if (a == input_at.end() || b == input_at.end() ||
        (a->second >= first_xs) == (b->second >= first_xs) || !dot->lhs_batch().empty() ||
        bytes * double(length_) > kHoistedBytes) {
      body->nodes.push_back(node);
      continue;
    }
    const bool xs_lhs = a->second >= first_xs;
    DotDims dims = dot->dims();
    for (int64_t& d : xs_lhs ? dims.lhs_contracting : dims.rhs_contracting) ++d;
    const int64_t lhs_free =
        int64_t(g.types[node.inputs[0]].shape.size() - dims.lhs_contracting.size());
    h.products.push_back({std::make_shared<const DotGeneral>(dims, dot->known_finite()), a->second,
                          b->second, xs_lhs ? 0 : lhs_free});
    body->inputs.push_back(node.outputs[0]);  // the product's value, now a step of the new xs
  }
  if (h.products.empty()) return {};
  h.scan = std::make_shared<const Scan>(std::move(body), n_carry_, n_consts_, length_, reverse_,
                                        parallel_);
  return h;
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
  return eval_consuming(std::vector<Tensor>(in));
}

// Consumes its inputs (clears `in`) so the initial carry is released after the first step.
std::vector<Tensor> Scan::eval_consuming(std::vector<Tensor>&& in) const {
  const Graph& g = *body_;
  std::vector<Tensor> args(in.begin(), in.begin() + int64_t(n_carry_ + n_consts_));
  const std::vector<Tensor> xs(in.begin() + int64_t(n_carry_ + n_consts_), in.end());
  args.resize(in.size());
  std::vector<Tensor> out(g.outputs.size());
  for (size_t k = n_carry_; k < out.size(); ++k) {
    const TensorType& t = g.types[g.outputs[k]];
    out[k] = Tensor::empty(with_length(t.shape, length_), t.dtype);
  }
  const std::vector<Tensor> hoisted = loop_->start(in);
  for (size_t k = 0; k < n_carry_; ++k) {
    out[k] = std::move(in[k]);
    args[k] = Tensor();
  }
  in.clear();
  if (parallel_ && length_ > 1 && !runtime::in_parallel_region()) {
    // Independent steps, one per pool thread at a time: each step's kernels run on its thread
    // (nested parallel_for runs inline), so a body of many small kernels pays no per-kernel
    // hand-off between threads.
    std::vector<void*> ys;
    for (Tensor& y : out) ys.push_back(y.raw_mutable_data());
    FlopCounter* const counting = detail::current_flop_counter();
    parallel_for(length_, 1, [&](int64_t t0, int64_t t1) {
      const detail::FlopsOnBehalf on_behalf(counting);
      std::vector<Tensor> step_args = args;
      for (int64_t t = t0; t < t1; ++t) {
        for (size_t j = 0; j < xs.size(); ++j) step_args[n_consts_ + j] = step_of(xs[j], t);
        const std::vector<Tensor> res = loop_->step(step_args, hoisted);
        for (size_t k = 0; k < ys.size(); ++k) write_step(ys[k], res[k], t);
      }
    });
    return out;
  }
  for (int64_t s = 0; s < length_; ++s) {
    const int64_t t = reverse_ ? length_ - 1 - s : s;
    for (size_t k = 0; k < n_carry_; ++k) args[k] = out[k];
    for (size_t j = 0; j < xs.size(); ++j) args[n_carry_ + n_consts_ + j] = step_of(xs[j], t);
    std::vector<Tensor> res = loop_->step(args, hoisted);
    for (size_t k = 0; k < n_carry_; ++k) out[k] = std::move(res[k]);
    for (size_t k = n_carry_; k < out.size(); ++k) write_step(out[k].raw_mutable_data(), res[k], t);
  }
  return out;
}

// ---- vmap: which carries are mapped is a fixpoint over the body -----------------------------

std::vector<Batched> Scan::batch(const std::vector<Batched>& in, int64_t size) const {
  const Graph& g = *body_;
  const size_t nc = n_carry_, nk = n_consts_, nx = in.size() - nc - nk;
  std::vector<bool> in_m;
  for (const Batched& b : in) in_m.push_back(b.mapped());
  carry_fixpoint(g, nc, size, in_m);
  std::vector<bool> out_m = detail::mapped_outputs(g, in_m, size);
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
                                                 nk + lifted, length_, reverse_, parallel_);
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

namespace {

// For each carry k the body updates as carry + dot_general(a, b) (a gradient accumulated over
// the steps), that product's node; -1 for other carries.
std::vector<int64_t> accumulating_products(const Graph& g, size_t n_carry) {
  std::map<ValueId, size_t> producer;
  for (size_t i = 0; i < g.nodes.size(); ++i)
    for (ValueId v : g.nodes[i].outputs) producer[v] = i;
  std::vector<int64_t> out(n_carry, -1);
  for (size_t k = 0; k < n_carry; ++k) {
    auto it = producer.find(g.outputs[k]);
    if (it == producer.end()) continue;
    const Node& add = g.nodes[it->second];
    if (add.prim->name() != "add" || add.inputs.size() != 2) continue;
    for (size_t side = 0; side < 2; ++side) {
      if (add.inputs[side] != g.inputs[k]) continue;
      auto d = producer.find(add.inputs[1 - side]);
      if (d != producer.end() && g.nodes[d->second].prim->name() == "dot_general" &&
          g.types[g.outputs[k]] == g.types[g.inputs[k]])
        out[k] = int64_t(d->second);
    }
  }
  return out;
}

}  // namespace

// Masking (Pad). A scan along a padded axis (its xs or ys) stops at each lane's length: a new
// body freezes the carry on the steps past it, so the final carry is the one after the lane's
// last step; reversed, the padded steps come first and leave the initial carry alone. A carry
// that accumulates a product (a gradient's sum over the steps) is not frozen by a select, which
// would copy it on every step: the product's factors are zeroed on the padded steps instead
// (both, so inf or NaN in either cannot reach it), and carry + 0 is the carry. The body is
// masked itself (with the lanes' lengths as more consts) when it handles padded values.
std::vector<Tensor> Scan::mask(const std::vector<Tensor>& in,
                               const detail::MaskContext& ctx) const {
  const size_t nc = n_carry_, nk = n_consts_;
  std::optional<detail::AxisTag> steps;
  auto note = [&](const detail::Tags& t) {
    if (t.empty() || !t[0].ragged()) return;
    if (steps && (steps->symbol != t[0].symbol || steps->offset != t[0].offset))
      ctx.no_rule("its steps run along two padded axes");
    steps = t[0];
  };
  for (size_t i = nc + nk; i < in.size(); ++i) note(ctx.in(i));
  for (size_t k = nc; k < body_->outputs.size(); ++k) note(ctx.out(k));
  if (!steps)  // no padded xs or ys: the length must not be an extent (scan(..., length = n))
    for (int k = 0; k < int(ctx.lengths().size()); ++k)
      if (static_cast<const Scan&>(ctx.probe(k)).length_ != length_)
        ctx.no_rule("its length is an extent but it scans no padded axis");
  const Graph& g = *body_;
  const std::vector<Tensor>& lengths = ctx.lengths();
  detail::TraceScope scope;
  std::vector<Tensor> args;
  for (size_t i = 0; i < nc + nk; ++i) args.push_back(scope.input(g.types[g.inputs[i]]));
  std::vector<Tensor> lens;
  for (size_t l = 0; l < lengths.size(); ++l) lens.push_back(scope.input({{}, DType::Int64}));
  for (size_t i = nc + nk; i < in.size(); ++i) args.push_back(scope.input(g.types[g.inputs[i]]));
  const Tensor t = steps ? scope.input({{}, DType::Int64}) : Tensor();
  const Tensor live = steps ? less(t, lens[size_t(steps->symbol)] + steps->offset) : Tensor();
  const std::vector<int64_t> products =
      steps ? accumulating_products(g, nc) : std::vector<int64_t>(nc, -1);
  const detail::AdjustArgs zero_factors = [&](size_t node, std::vector<Tensor>& xs) {
    if (std::find(products.begin(), products.end(), int64_t(node)) == products.end()) return;
    for (Tensor& x : xs) x = where(live, x, 0.0);
  };
  std::vector<Tensor> outs = detail::eval_masked(ctx.subgraph(0), args, lens, ctx.min_lengths(),
                                                 steps ? zero_factors : detail::AdjustArgs());
  // A carry the body passes through unchanged (the gradient's carries of loop-invariant values)
  // needs no freeze.
  if (steps)
    for (size_t k = 0; k < nc; ++k)
      if (products[k] < 0 && g.outputs[k] != g.inputs[k]) outs[k] = where(live, outs[k], args[k]);
  auto body = std::make_shared<const Graph>(scope.finish(outs));
  check(body->captured.empty(), "scan: a masked body reads a value of an enclosing trace");
  std::vector<Tensor> operands(in.begin(), in.begin() + int64_t(nc + nk));
  operands.insert(operands.end(), lengths.begin(), lengths.end());
  operands.insert(operands.end(), in.begin() + int64_t(nc + nk), in.end());
  if (steps) operands.push_back(iota({length_}, 0, DType::Int64));
  return lanes::bind(std::make_shared<const Scan>(body, nc, nk + lengths.size(), length_, reverse_),
                     operands);
}

}  // namespace lanes::prim
