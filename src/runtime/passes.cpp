// Graph passes for compile: constant folding, simplification of the view ops, casts and
// arithmetic that batching and autodiff leave behind, common subexpression elimination and dead
// code elimination.
//
// One forward sweep rebuilds the graph node by node. Each node, with its inputs already mapped to
// the new graph, is first looked up (CSE), then folded when all its inputs are constants, then
// offered to the algebraic rewrites, and only then emitted. A rewrite either names an existing
// value or a replacement node, which goes through the same steps, so chains collapse in one
// sweep. Dead code elimination runs before (nothing is folded for nothing) and after (the nodes
// the rewrites bypassed).
#include <algorithm>
#include <map>
#include <optional>
#include <set>

#include "kernels/matmul_xsmm.h"
#include "lanes/compile.h"
#include "primitives/control_flow.h"
#include "primitives/dot_general.h"
#include "primitives/elementwise.h"
#include "primitives/reduce.h"
#include "primitives/shape.h"
#include "primitives/structure.h"
#include "runtime/rewrites.h"

namespace lanes::detail {

namespace {

// Folded outputs larger than this stay nodes unless they are no larger than their inputs: a
// broadcast of a scalar to 100 MB is better computed (or fused) at run time than kept in memory.
constexpr size_t kMaxFoldedBytes = size_t{1} << 20;

size_t nbytes(const Tensor& t) { return static_cast<size_t>(t.numel()) * dtype_size(t.dtype()); }

// Whether keeping `out` as a constant costs little memory: it is a view of an input (reshape,
// transpose, broadcast, slice of a constant cost nothing), small, or no larger than the inputs.
bool cheap_to_keep(const Tensor& out, const std::vector<Tensor>& inputs) {
  size_t input_bytes = 0;
  std::set<const Storage*> seen;
  for (const Tensor& x : inputs) {
    if (x.storage() == out.storage()) return true;
    if (seen.insert(x.storage().get()).second) input_bytes += x.storage()->bytes();
  }
  const size_t bytes = nbytes(out);
  return bytes <= kMaxFoldedBytes || bytes <= input_bytes;
}

// Small constants are told apart by value, others by the memory they view: the key under which
// equal constants (the 1.0 of two `x * 1.0`, the same captured weight twice) become one value.
std::string constant_key(const Tensor& t) {
  std::string key = dtype_name(t.dtype()) + shape_str(t.shape());
  if (t.numel() <= 64) {
    const Tensor c = t.contiguous();
    return key + std::string(static_cast<const char*>(c.raw_data()), nbytes(c));
  }
  key += shape_str(t.strides()) + '@' + std::to_string(t.offset()) + '@';
  return key + std::to_string(reinterpret_cast<uintptr_t>(t.storage().get()));
}

// ---- rewrites of views and casts
// ----------------------------------------------------------------- (rewrites.h: what a rewrite is;
// arithmetic_rewrites.cpp: those of arithmetic.)

using namespace rewrites;

using Perm = std::vector<int64_t>;

bool is_identity(const Perm& perm) {
  for (size_t i = 0; i < perm.size(); ++i)
    if (perm[i] != static_cast<int64_t>(i)) return false;
  return true;
}

Perm inverse(const Perm& perm) {
  Perm inv(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) inv[perm[i]] = static_cast<int64_t>(i);
  return inv;
}

// reshape, broadcast_in_dim, convert_element_type and slice to their input's own type (a slice
// that keeps every element: a Jacobian's one block when there is one leaf), transpose by the
// identity and reductions over no axes return their input unchanged. (A broadcast_in_dim to its
// input's shape has dims 0..n-1: they are increasing and as many as the output's.)
std::optional<Rewrite> drop_identity(const GraphView& g, const Primitive& p, const Ins& ins,
                                     const TensorType& out) {
  if (ins.size() != 1 || g.type(ins[0]) != out) return {};
  const auto* t = as<prim::Transpose>(p);
  const auto* r = as<prim::Reduce>(p);
  const auto* pad = as<prim::Pad>(p);
  const bool same = as<prim::Reshape>(p) || as<prim::BroadcastInDim>(p) || as<prim::Cast>(p) ||
                    as<prim::Slice>(p) || (t && is_identity(t->perm())) ||
                    (r && r->axes().empty()) ||
                    (pad && std::ranges::all_of(pad->low(), [](int64_t x) { return x == 0; }) &&
                     std::ranges::all_of(pad->high(), [](int64_t x) { return x == 0; }));
  if (!same) return {};
  return same_as(ins[0]);
}

// transpose(transpose(x, p), q) = transpose(x, r) with r[i] = p[q[i]]: output dim i is the
// middle's dim q[i], which is x's dim p[q[i]]. (An identity r then disappears.)
std::optional<Rewrite> compose_transposes(const GraphView& g, const Primitive& p, const Ins& ins,
                                          const TensorType&) {
  const Node* n;
  const auto* outer = as<prim::Transpose>(p);
  const auto* inner = outer ? produced_by<prim::Transpose>(g, ins[0], &n) : nullptr;
  if (!inner) return {};
  Perm r;
  for (int64_t q : outer->perm()) r.push_back(inner->perm()[q]);
  return replace_by(std::make_shared<prim::Transpose>(r), {n->inputs[0]});
}

// broadcast_in_dim(broadcast_in_dim(x, s1, d1), s2, d2) = broadcast_in_dim(x, s2, d) with
// d[i] = d2[d1[i]]: x's dim i lands in the middle's dim d1[i], which lands in d2[d1[i]]. d is
// increasing as d1 and d2 are, and a dim of x either keeps its size or is 1 and stretches.
std::optional<Rewrite> compose_broadcasts(const GraphView& g, const Primitive& p, const Ins& ins,
                                          const TensorType&) {
  const Node* n;
  const auto* outer = as<prim::BroadcastInDim>(p);
  const auto* inner = outer ? produced_by<prim::BroadcastInDim>(g, ins[0], &n) : nullptr;
  if (!inner) return {};
  Perm d;
  for (int64_t d1 : inner->dims()) d.push_back(outer->dims()[d1]);
  return replace_by(std::make_shared<prim::BroadcastInDim>(outer->shape(), d), {n->inputs[0]});
}

// The sizes of the dims that are not 1, in order.
Shape non_unit(const Shape& shape) {
  Shape sizes;
  for (int64_t s : shape)
    if (s != 1) sizes.push_back(s);
  return sizes;
}

// broadcast_in_dim(reshape(x), s, d) = broadcast_in_dim(x, s, d') when the reshape only inserts
// or removes size-1 dims (x's other dims are the reshape's, in order). Those dims keep their
// targets in d; each size-1 dim of x takes the next output dim (size 1 broadcasts to any size),
// so d' stays increasing; it cannot when too many size-1 dims come before a target. Autodiff
// leaves this behind around reductions with keepdims.
std::optional<Rewrite> broadcast_of_reshape(const GraphView& g, const Primitive& p, const Ins& ins,
                                            const TensorType& out) {
  const Node* n;
  const auto* b = as<prim::BroadcastInDim>(p);
  const auto* r = b ? produced_by<prim::Reshape>(g, ins[0], &n) : nullptr;
  if (!r) return {};
  const Shape& x = g.type(n->inputs[0]).shape;
  if (non_unit(x) != non_unit(r->shape())) return {};
  Perm targets, d;
  for (size_t i = 0; i < r->shape().size(); ++i)
    if (r->shape()[i] != 1) targets.push_back(b->dims()[i]);
  size_t next = 0;
  for (int64_t size : x) {
    const int64_t free = d.empty() ? 0 : d.back() + 1;
    const int64_t limit = next < targets.size() ? targets[next] : int64_t(out.shape.size());
    if (size != 1)
      d.push_back(targets[next++]);
    else if (free < limit)
      d.push_back(free);
    else
      return {};
  }
  return replace_by(std::make_shared<prim::BroadcastInDim>(out.shape, d), {n->inputs[0]});
}

// transpose(broadcast_in_dim(x, s, d), q) = broadcast_in_dim(x, s', d') with s'[i] = s[q[i]] and
// d'[j] = inverse(q)[d[j]]: x's dim j lands in the middle's dim d[j], which the transpose moves
// to inverse(q)[d[j]]. Only when d' is increasing, i.e. the transpose keeps x's dims in order
// and just moves the new ones; otherwise x itself would need a transpose and no node is saved.
std::optional<Rewrite> transpose_of_broadcast(const GraphView& g, const Primitive& p,
                                              const Ins& ins, const TensorType& out) {
  const Node* n;
  const auto* t = as<prim::Transpose>(p);
  const auto* b = t ? produced_by<prim::BroadcastInDim>(g, ins[0], &n) : nullptr;
  if (!b) return {};
  const Perm inv = inverse(t->perm());
  Perm d;
  for (int64_t dim : b->dims()) {
    if (!d.empty() && inv[dim] <= d.back()) return {};
    d.push_back(inv[dim]);
  }
  return replace_by(std::make_shared<prim::BroadcastInDim>(out.shape, d), {n->inputs[0]});
}

// A product whose rhs is a constant (N, K) matrix read transposed (contracting its dim 1: x W^T,
// a pullback through a captured weight) reads a (K, N) copy of it made here once (folded, then
// laid out by `constant`), where libxsmm runs it: the kernel otherwise copies the weight into that
// order on every call and then runs the same kernel, so the bits are the same as eager's. (Not
// for the products of other kernels: their sums may take another order for another layout, and
// compiled, chunked and eager results must agree bit for bit.) The weight's other uses keep it.
std::optional<Rewrite> constant_rhs_in_row_order(GraphView& g, const Primitive& p, const Ins& ins,
                                                 const TensorType&) {
  const auto* dot = as<prim::DotGeneral>(p);
  if (!dot || !dot->rhs_batch().empty() || dot->rhs_contracting() != std::vector<int64_t>{1})
    return {};
  const Tensor* w = g.constant_value(ins[1]);
  if (!w || w->ndim() != 2 || !w->is_contiguous() || !is_floating(w->dtype())) return {};
  const int64_t n = w->shape(0), k = w->shape(1);
  const int64_t m = shape_numel(g.type(ins[0]).shape) / k;
  if (std::min({m, n, k}) < 2 || !kernels::xsmm_suits(m, n, k, true)) return {};
  const ValueId wt = g.node(std::make_shared<const prim::Transpose>(Perm{1, 0}), {ins[1]});
  const Tensor* folded = g.constant_value(wt);
  if (!folded || !folded->is_contiguous()) return {};
  DotDims dims = dot->dims();
  dims.rhs_contracting = {0};
  return replace_by(std::make_shared<prim::DotGeneral>(dims, dot->known_finite()), {ins[0], wt});
}

// transpose(dot_general(a, b), q) = dot_general(b, a) when q swaps the lhs-free and rhs-free
// blocks of the output (batch dims, a's free dims, b's free dims) and keeps each block's order:
// swapping the operands (and their dimension numbers) gives exactly that order. Autodiff's rule
// for dot_general leaves this pattern behind (the gradient of a weight, per example under vmap).
std::optional<Rewrite> transpose_of_dot(const GraphView& g, const Primitive& p, const Ins& ins,
                                        const TensorType&) {
  const Node* n;
  const auto* t = as<prim::Transpose>(p);
  const auto* dot = t ? produced_by<prim::DotGeneral>(g, ins[0], &n) : nullptr;
  if (!dot) return {};
  const DotDims& d = dot->dims();
  const int64_t batch = static_cast<int64_t>(d.lhs_batch.size());
  const int64_t lhs_free = static_cast<int64_t>(g.type(n->inputs[0]).shape.size()) - batch -
                           static_cast<int64_t>(d.lhs_contracting.size());
  const int64_t rank = static_cast<int64_t>(t->perm().size());
  Perm swapped;
  for (int64_t i = 0; i < batch; ++i) swapped.push_back(i);
  for (int64_t i = batch + lhs_free; i < rank; ++i) swapped.push_back(i);
  for (int64_t i = batch; i < batch + lhs_free; ++i) swapped.push_back(i);
  if (t->perm() != swapped) return {};
  const DotDims flipped{d.rhs_contracting, d.lhs_contracting, d.rhs_batch, d.lhs_batch};
  return replace_by(std::make_shared<prim::DotGeneral>(flipped), {n->inputs[1], n->inputs[0]});
}

// Whether node n re-describes its input without changing the row-major order of the elements:
// a reshape, a transpose that moves only size-1 dims, or a broadcast_in_dim that stretches
// nothing (it only inserts size-1 dims).
bool keeps_element_order(const GraphView& g, const Node& n) {
  const Primitive& p = *n.prim;
  const TensorType& in = g.type(n.inputs[0]);
  if (as<prim::Reshape>(p)) return true;
  if (as<prim::BroadcastInDim>(p))
    return shape_numel(in.shape) == shape_numel(g.type(n.outputs[0]).shape);
  const auto* t = as<prim::Transpose>(p);
  if (!t) return false;
  int64_t last = -1;
  for (int64_t dim : t->perm()) {
    if (in.shape[dim] == 1) continue;
    if (dim < last) return false;
    last = dim;
  }
  return true;
}

// reshape(y) = reshape(x) when y re-describes x in the same element order (above): a reshape
// only reads the elements in that order. (A reshape back to x's shape then disappears.)
std::optional<Rewrite> reshape_of_view(const GraphView& g, const Primitive& p, const Ins& ins,
                                       const TensorType&) {
  const auto* r = as<prim::Reshape>(p);
  const Node* n = r ? g.producer(ins[0]) : nullptr;
  if (!n || n->inputs.size() != 1 || !keeps_element_order(g, *n)) return {};
  return replace_by(std::make_shared<prim::Reshape>(r->shape()), {n->inputs[0]});
}

// Whether every value of dtype `from` is exactly representable in dtype `to`.
bool lossless(DType from, DType to) {
  using enum DType;
  switch (from) {
    case Bool:
      return true;  // 0 and 1
    case UInt8:
      return to != Bool;
    case Int32:
      return to == Int32 || to == Int64 || to == Float64;
    case Float32:
      return to == Float32 || to == Float64;
    case Int64:
    case Float64:
      return to == from;
  }
  return false;
}

// cast(cast(x, a), b) = cast(x, b) when x -> a is lossless: the middle holds x's exact values,
// and a conversion depends only on the value it converts. When b is x's dtype (f32 -> f64 ->
// f32) the remaining cast is an identity and disappears.
std::optional<Rewrite> compose_casts(const GraphView& g, const Primitive& p, const Ins& ins,
                                     const TensorType& out) {
  const Node* n;
  const auto* outer = as<prim::Cast>(p);
  const auto* inner = outer ? produced_by<prim::Cast>(g, ins[0], &n) : nullptr;
  if (!inner || !lossless(g.type(n->inputs[0]).dtype, inner->dtype())) return {};
  return replace_by(std::make_shared<prim::Cast>(out.dtype), {n->inputs[0]});
}

// neg(neg(x)) = x, exactly (also for integers, where negation wraps).
std::optional<Rewrite> double_negation(const GraphView& g, const Primitive& p, const Ins& ins,
                                       const TensorType&) {
  const Node* n;
  const auto* outer = as<prim::Unary>(p);
  if (!outer || outer->kind() != prim::Unary::Kind::Neg) return {};
  const auto* inner = produced_by<prim::Unary>(g, ins[0], &n);
  if (!inner || inner->kind() != prim::Unary::Kind::Neg) return {};
  return same_as(n->inputs[0]);
}

// The first rewrite that applies.
std::optional<Rewrite> simplify(GraphView& g, const Primitive& p, const Ins& ins,
                                const TensorType& out) {
  using Rule =
      std::optional<Rewrite> (*)(const GraphView&, const Primitive&, const Ins&, const TensorType&);
  static constexpr Rule kRules[] = {
      drop_identity,          compose_transposes,  compose_broadcasts,   broadcast_of_reshape,
      transpose_of_broadcast, transpose_of_dot,    reshape_of_view,      compose_casts,
      double_negation,        arithmetic_identity, flatten_concatenates, finite_constant_factors};
  for (Rule rule : kRules)
    if (auto r = rule(g, p, ins, out)) return r;
  if (auto r = constant_rhs_in_row_order(g, p, ins, out)) return r;
  return sum_of_pads(g, p, ins, out);
}

// ---- the sweep ---------------------------------------------------------------------------------

// Builds a new graph node by node; values of the old graph map to values of the new one.
class Rewriter final : public GraphView {
 public:
  explicit Rewriter(const Graph& old) : old_(old), map_(old.types.size(), -1) {
    for (const auto& [v, t] : old.constants) map_[v] = constant(t);
    for (ValueId v : old.inputs) {
      map_[v] = out_.add_value(old.types[v]);
      out_.inputs.push_back(map_[v]);
    }
    out_.captured = old.captured;
  }

  Graph run() {
    for (const Node& n : old_.nodes) {
      std::vector<ValueId> ins, outs;
      std::vector<TensorType> types;
      for (ValueId v : n.inputs) ins.push_back(map_[v]);
      for (ValueId v : n.outputs) types.push_back(old_.types[v]);
      outs = add(n.prim, ins, types);
      for (size_t k = 0; k < outs.size(); ++k) map_[n.outputs[k]] = outs[k];
    }
    for (ValueId v : old_.outputs) out_.outputs.push_back(map_[v]);
    return std::move(out_);
  }

  const TensorType& type(ValueId v) const override { return out_.types[v]; }

  const Node* producer(ValueId v) const override {
    auto it = producer_.find(v);
    return it == producer_.end() ? nullptr : &out_.nodes[it->second];
  }

  const Tensor* constant_value(ValueId v) const override {
    auto it = constant_index_.find(v);
    return it == constant_index_.end() ? nullptr : &out_.constants[it->second].second;
  }

  ValueId node(PrimitivePtr prim, const std::vector<ValueId>& ins) override {
    std::vector<TensorType> in_types;
    for (ValueId v : ins) in_types.push_back(type(v));
    const std::vector<TensorType> types = prim->infer(in_types);
    return add(prim, ins, types).at(0);
  }

 private:
  // The values computing prim(ins), whose types are `types`: found, folded, rewritten or new.
  std::vector<ValueId> add(const PrimitivePtr& prim, const std::vector<ValueId>& ins,
                           const std::vector<TensorType>& types) {
    // A communicating node runs as it is, on every process (Primitive::has_effects).
    if (prim->has_effects()) return emit(prim, ins, types);
    const std::string key = cse_key(*prim, ins);
    if (auto it = seen_.find(key); it != seen_.end()) return it->second;
    std::vector<ValueId> outs = fold(*prim, ins, types);
    if (outs.empty() && types.size() == 1) outs = rewrite(*prim, ins, types);
    if (outs.empty()) outs = emit(prim, ins, types);
    seen_.emplace(key, outs);
    return outs;
  }

  // Evaluates a node whose inputs are all constants now, once, instead of at every call.
  std::vector<ValueId> fold(const Primitive& prim, const std::vector<ValueId>& ins,
                            const std::vector<TensorType>& types) {
    if (prim.axis_name()) return {};  // a collective has no value outside its vmap's batching
    std::vector<Tensor> args;
    for (ValueId v : ins) {
      const Tensor* t = constant_value(v);
      if (!t) return {};
      args.push_back(*t);
    }
    const std::vector<Tensor> results = prim.eval(args);
    if (results.size() != types.size()) return {};
    for (size_t k = 0; k < results.size(); ++k) {
      const Tensor& r = results[k];
      if (TensorType{r.shape(), r.dtype()} != types[k] || !cheap_to_keep(r, args)) return {};
    }
    std::vector<ValueId> outs;
    for (const Tensor& r : results) outs.push_back(constant(r));
    return outs;
  }

  // The algebraic rewrites; a replacement node must have exactly the type it replaces.
  std::vector<ValueId> rewrite(const Primitive& prim, const std::vector<ValueId>& ins,
                               const std::vector<TensorType>& types) {
    const std::optional<Rewrite> r = simplify(*this, prim, ins, types[0]);
    if (!r) return {};
    if (r->value >= 0) return {r->value};
    std::vector<TensorType> in_types;
    for (ValueId v : r->inputs) in_types.push_back(type(v));
    if (r->prim->infer(in_types) != types) return {};
    return add(r->prim, r->inputs, types);
  }

  ValueId constant(const Tensor& t) {
    auto [it, inserted] = constant_ids_.try_emplace(constant_key(t), 0);
    if (!inserted) return it->second;
    it->second = out_.add_value({t.shape(), t.dtype()});
    constant_index_[it->second] = out_.constants.size();
    out_.constants.emplace_back(it->second, laid_out(t));
    return it->second;
  }

  // A small constant that views another strided (a transpose traced or folded, a strided slice)
  // is copied into its own order once here, not read strided by every call: hessian's W^T, read
  // by a fused pass column by column, made that pass 3x slower. Broadcasts stay views.
  static Tensor laid_out(const Tensor& t) {
    const Strides& st = t.strides();
    const bool broadcast = std::any_of(st.begin(), st.end(), [](int64_t x) { return x == 0; });
    return t.is_contiguous() || broadcast || nbytes(t) > kMaxFoldedBytes ? t : t.contiguous();
  }

  std::vector<ValueId> emit(const PrimitivePtr& prim, const std::vector<ValueId>& ins,
                            const std::vector<TensorType>& types) {
    Node node{prim, ins, {}};
    for (const TensorType& t : types) node.outputs.push_back(out_.add_value(t));
    for (ValueId v : node.outputs) producer_[v] = out_.nodes.size();
    out_.nodes.push_back(node);
    return node.outputs;
  }

  // Two nodes with equal keys compute the same values (primitives are pure).
  static std::string cse_key(const Primitive& prim, const std::vector<ValueId>& ins) {
    std::string key = describe(prim);
    for (ValueId v : ins) key += ' ' + std::to_string(v);
    return key;
  }

  const Graph& old_;
  Graph out_;
  std::vector<ValueId> map_;
  std::map<ValueId, size_t> producer_, constant_index_;
  std::map<std::string, ValueId> constant_ids_;
  std::map<std::string, std::vector<ValueId>> seen_;
};

// A scan's ys that nothing reads leave it, and with them the work in its body that only they
// needed: the reverse pass of a loop computes the cotangents of its xs, which a gradient with
// respect to the weights alone never reads (rnn_scan: one product per step of four).
void drop_dead_ys(Node& node, const std::vector<bool>& live) {
  const auto* scan = dynamic_cast<const prim::Scan*>(node.prim.get());
  if (!scan) return;
  const size_t carry = scan->num_carry();
  std::vector<bool> keep;
  for (size_t k = carry; k < node.outputs.size(); ++k) keep.push_back(live[node.outputs[k]]);
  if (std::all_of(keep.begin(), keep.end(), [](bool b) { return b; })) return;
  node.prim = scan->keeping_ys(keep);
  std::vector<ValueId> outputs(node.outputs.begin(), node.outputs.begin() + int64_t(carry));
  for (size_t k = 0; k < keep.size(); ++k)
    if (keep[k]) outputs.push_back(node.outputs[carry + k]);
  node.outputs = std::move(outputs);
}

// Drops nodes whose outputs nothing uses (every primitive is pure: randomness takes its key).
Graph eliminate_dead_code(Graph g) {
  std::vector<bool> live(g.types.size(), false);
  for (ValueId v : g.outputs) live[v] = true;
  std::vector<Node> kept;
  for (auto it = g.nodes.rbegin(); it != g.nodes.rend(); ++it) {
    bool used = false;
    for (ValueId v : it->outputs) used = used || live[v];
    if (!used && !it->prim->has_effects()) continue;
    if (!it->prim->has_effects()) drop_dead_ys(*it, live);
    for (ValueId v : it->inputs) live[v] = true;
    kept.push_back(std::move(*it));
  }
  g.nodes.assign(kept.rbegin(), kept.rend());
  std::erase_if(g.constants, [&](const auto& c) { return !live[c.first]; });
  return g;
}

}  // namespace

Graph optimize(const Graph& g) {
  Graph out =
      Rewriter(eliminate_dead_code(hoist_scan_products(simplify_scans(inline_calls(g))))).run();
  Graph merged = merge_dot_sums(out);
  // A merge adds nodes (the old terms die only in the next DCE); the stacked operands of two
  // merged sums often coincide, so CSE runs again.
  if (merged.nodes.size() != out.nodes.size())
    out = Rewriter(eliminate_dead_code(std::move(merged))).run();
  return eliminate_dead_code(fold_product_norms(out));
}

}  // namespace lanes::detail
