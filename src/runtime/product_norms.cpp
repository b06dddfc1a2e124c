// The squared norm of a product, without the product: for m = dot_general(a, b),
//
//     sum over m's free dims of m^2 = sum_{k,l} Ga[k,l] Gb[k,l],
//     Ga = sum over a's free dims of a[.., k] a[.., l], Gb likewise for b,
//
// per batch index, where k, l run over the contracted dims. With nothing contracted it is
// (sum a^2)(sum b^2). Per-example gradient norms are exactly this: a dense layer's per-example
// weight gradient is the outer product of its input and its output's delta, (B, 1024, 1024) for
// one layer of an MLP, written to memory only to be squared and summed. The rewrite reads the
// two factors instead (what DP libraries call ghost norms, done by hand in Opacus); it applies
// when the Gram matrices are smaller than the product.
#include <algorithm>
#include <numeric>

#include "lanes/compile.h"
#include "primitives/dot_general.h"
#include "primitives/elementwise.h"
#include "primitives/reduce.h"

namespace lanes::detail {

namespace {

bool ascending(const std::vector<int64_t>& axes) {
  return std::is_sorted(axes.begin(), axes.end());
}

// The axes of an operand of `rank` that are neither batch nor contracting, ascending.
std::vector<int64_t> free_axes(int64_t rank, const std::vector<int64_t>& batch,
                               const std::vector<int64_t>& contracting) {
  std::vector<int64_t> out;
  for (int64_t a = 0; a < rank; ++a)
    if (std::find(batch.begin(), batch.end(), a) == batch.end() &&
        std::find(contracting.begin(), contracting.end(), a) == contracting.end())
      out.push_back(a);
  return out;
}

int64_t numel_of(const Shape& shape, const std::vector<int64_t>& axes) {
  int64_t n = 1;
  for (int64_t a : axes) n *= shape[a];
  return n;
}

class ProductNorms {
 public:
  explicit ProductNorms(const Graph& g)
      : g_(g), producer_(g.types.size(), -1), uses_(g.types.size(), 0) {
    for (size_t i = 0; i < g.nodes.size(); ++i) {
      for (ValueId v : g.nodes[i].outputs) producer_[v] = int64_t(i);
      for (ValueId v : g.nodes[i].inputs) ++uses_[v];
    }
    for (ValueId v : g.outputs) ++uses_[v];
  }

  Graph run() {
    Graph out = g_;
    out.nodes.clear();
    for (const Node& n : g_.nodes)
      if (!rewrite(n, out)) out.nodes.push_back(n);
    return out;
  }

 private:
  const Node* producer(ValueId v) const {
    return producer_[v] < 0 ? nullptr : &g_.nodes[producer_[v]];
  }

  // r = reduce_sum(mul(m, m)) over every non-batch dim of m = dot_general(a, b), neither m nor
  // its square used elsewhere: appends the Gram form writing r's value, and returns true.
  bool rewrite(const Node& r, Graph& out) const {
    const auto* red = dynamic_cast<const prim::Reduce*>(r.prim.get());
    if (!red || red->kind() != kernels::ReduceOp::Sum) return false;
    const ValueId s = r.inputs[0];
    const Node* sq = producer(s);
    const auto* mul = sq ? dynamic_cast<const prim::Binary*>(sq->prim.get()) : nullptr;
    if (!mul || mul->kind() != kernels::BinaryOp::Mul || sq->inputs[0] != sq->inputs[1] ||
        uses_[s] != 1)
      return false;
    const ValueId m = sq->inputs[0];
    const Node* prod = producer(m);
    const auto* dot = prod ? dynamic_cast<const prim::DotGeneral*>(prod->prim.get()) : nullptr;
    if (!dot || uses_[m] != 2) return false;
    const DotDims& d = dot->dims();
    const TensorType &a = g_.types[prod->inputs[0]], &b = g_.types[prod->inputs[1]];
    if (a.dtype != DType::Float32 && a.dtype != DType::Float64) return false;
    const int64_t nb = int64_t(d.lhs_batch.size()), rank = int64_t(g_.types[m].shape.size());
    std::vector<int64_t> non_batch(size_t(rank - nb));
    std::iota(non_batch.begin(), non_batch.end(), nb);
    if (red->axes() != non_batch || !ascending(d.lhs_batch) || !ascending(d.rhs_batch) ||
        !ascending(d.lhs_contracting) || !ascending(d.rhs_contracting))
      return false;
    const std::vector<int64_t> fa =
        free_axes(int64_t(a.shape.size()), d.lhs_batch, d.lhs_contracting);
    const std::vector<int64_t> fb =
        free_axes(int64_t(b.shape.size()), d.rhs_batch, d.rhs_contracting);
    const int64_t M = numel_of(a.shape, fa), N = numel_of(b.shape, fb);
    const int64_t K = numel_of(a.shape, d.lhs_contracting);
    // The Gram matrices cost K^2 (M + N) per batch index against the product's M N K, and the
    // product's M N elements go through memory twice: rewrite when the Grams are clearly smaller.
    if (K * (M + N) * 2 > M * N) return false;
    const ValueId ga = gram(prod->inputs[0], d.lhs_batch, d.lhs_contracting, fa, out);
    const ValueId gb = gram(prod->inputs[1], d.rhs_batch, d.rhs_contracting, fb, out);
    if (d.lhs_contracting.empty()) {
      out.nodes.push_back(
          {std::make_shared<const prim::Binary>(kernels::BinaryOp::Mul), {ga, gb}, {r.outputs[0]}});
      return true;
    }
    const TensorType& t = out.types[ga];
    const ValueId both = out.add_value(t);
    out.nodes.push_back(
        {std::make_shared<const prim::Binary>(kernels::BinaryOp::Mul), {ga, gb}, {both}});
    std::vector<int64_t> kk(t.shape.size() - size_t(nb));
    std::iota(kk.begin(), kk.end(), nb);
    out.nodes.push_back(
        {std::make_shared<const prim::Reduce>(kernels::ReduceOp::Sum, kk), {both}, {r.outputs[0]}});
    return true;
  }

  // sum over `free` of x[.., k] x[.., l]: (batch..., K..., K...) by a dot_general of x with
  // itself, or (batch...) as reduce_sum(x * x) when nothing is contracted.
  ValueId gram(ValueId x, const std::vector<int64_t>& batch,
               const std::vector<int64_t>& contracting, const std::vector<int64_t>& free,
               Graph& out) const {
    const TensorType& t = g_.types[x];
    if (contracting.empty()) {
      const ValueId sq = out.add_value(t);
      out.nodes.push_back(
          {std::make_shared<const prim::Binary>(kernels::BinaryOp::Mul), {x, x}, {sq}});
      Shape shape;
      for (int64_t a : batch) shape.push_back(t.shape[a]);
      const ValueId sum = out.add_value({shape, t.dtype});
      out.nodes.push_back(
          {std::make_shared<const prim::Reduce>(kernels::ReduceOp::Sum, free), {sq}, {sum}});
      return sum;
    }
    DotDims dims{free, free, batch, batch};
    Shape shape;
    for (int64_t a : batch) shape.push_back(t.shape[a]);
    for (int side = 0; side < 2; ++side)
      for (int64_t a : contracting) shape.push_back(t.shape[a]);
    const ValueId v = out.add_value({shape, t.dtype});
    out.nodes.push_back({std::make_shared<const prim::DotGeneral>(dims), {x, x}, {v}});
    return v;
  }

  const Graph& g_;
  std::vector<int64_t> producer_;  // per value: the node writing it, or -1
  std::vector<int64_t> uses_;      // per value: reads by nodes and graph outputs
};

}  // namespace

Graph fold_product_norms(const Graph& g) { return ProductNorms(g).run(); }

}  // namespace lanes::detail
