// compile's rewrites of arithmetic: identities, sums of zero-padded slabs, nested concatenates and
// the finiteness of constant factors (the vocabulary and the other rewrites: rewrites.h).
#include <algorithm>
#include <cstring>

#include "kernels/matmul.h"
#include "primitives/dot_general.h"
#include "primitives/elementwise.h"
#include "primitives/structure.h"
#include "runtime/rewrites.h"

namespace lanes::detail::rewrites {

namespace {

// The value of every element of v when v is a constant whose elements are all equal (bytewise:
// -0.0 beside 0.0 is not a splat). Only the values it stores are read, those of its dims with a
// stride, up to 2^20 of them, stopping at the first that differs: a broadcast of a (128, 512)
// zero to (64, 128, 512), the zero cotangent a scan's weight gradient starts from, is checked as
// the (128, 512) it views.
std::optional<double> splat(const GraphView& g, ValueId v) {
  const Tensor* t = g.constant_value(v);
  if (!t || t->numel() == 0) return {};
  Shape shape;
  Strides strides;
  for (int64_t d = 0; d < t->ndim(); ++d)
    if (t->strides()[size_t(d)] != 0) {
      shape.push_back(t->shape(d));
      strides.push_back(t->strides()[size_t(d)]);
    }
  if (shape_numel(shape) > (int64_t{1} << 20)) return {};
  const Tensor stored = t->view(shape, strides, t->offset()).contiguous();
  const size_t size = dtype_size(stored.dtype());
  const char* bytes = static_cast<const char*>(stored.raw_data());
  for (int64_t i = 1; i < stored.numel(); ++i)
    if (std::memcmp(bytes + size_t(i) * size, bytes, size) != 0) return {};
  return stored.view({}, {}, stored.offset()).to_vector<double>()[0];
}

}  // namespace

// x * 1, 1 * x, x / 1, x - 0, x + 0 and 0 + x are x (binary ops take operands of one type, so
// the output's type is x's). Exact except that x + 0 (and x - -0.0) turn -0.0 into +0.0, which
// compares equal (XLA makes the same rewrite).
std::optional<Rewrite> arithmetic_identity(const GraphView& g, const Primitive& p, const Ins& ins,
                                           const TensorType& out) {
  using K = prim::Binary::Kind;
  const auto* b = as<prim::Binary>(p);
  if (!b || ins.size() != 2) return {};
  const K k = b->kind();
  const double unit = k == K::Mul || k == K::Div ? 1.0 : 0.0;
  const bool commutes = k == K::Mul || k == K::Add;
  if (k != K::Mul && k != K::Div && k != K::Add && k != K::Sub) return {};
  if (g.type(ins[0]) == out && splat(g, ins[1]) == unit) return same_as(ins[0]);
  if (commutes && g.type(ins[1]) == out && splat(g, ins[0]) == unit) return same_as(ins[1]);
  return {};
}

// concatenate(a, concatenate(b, c)) along one axis is concatenate(a, b, c): one copy of each part.
std::optional<Rewrite> flatten_concatenates(const GraphView& g, const Primitive& p, const Ins& ins,
                                            const TensorType&) {
  const auto* outer = as<prim::Concatenate>(p);
  if (!outer) return {};
  Ins flat;
  bool nested = false;
  for (ValueId v : ins) {
    const Node* n;
    const auto* inner = produced_by<prim::Concatenate>(g, v, &n);
    if (inner && inner->axis() == outer->axis()) {
      flat.insert(flat.end(), n->inputs.begin(), n->inputs.end());
      nested = true;
    } else {
      flat.push_back(v);
    }
  }
  if (!nested) return {};
  return replace_by(std::make_shared<const prim::Concatenate>(outer->axis()), std::move(flat));
}

namespace {

// pad(x) + pad(y), zero-padded slabs side by side along one axis (the cotangents of adjacent
// slices: an LSTM's four gates, attention heads, a split), is pad(concatenate(x, y)): one copy
// of the parts instead of full-size padded buffers and their sum. Repeated over all the slabs,
// the sum becomes one concatenate and a pad by nothing, which drop_identity removes. Exact, but
// for -0.0 in x or y staying -0.0 where the sum with the padding's +0.0 gives +0.0.
// Returns the pad of the concatenate, or nothing when a and b are not such slabs.
std::optional<ValueId> joined_slabs(GraphView& g, ValueId a, ValueId b, const TensorType& out) {
  const Node *na, *nb;
  const auto* pa = produced_by<prim::Pad>(g, a, &na);
  const auto* pb = produced_by<prim::Pad>(g, b, &nb);
  if (!pa || !pb || pa->value() != 0.0 || pb->value() != 0.0) return {};
  std::optional<size_t> axis;  // the one axis where the slabs differ
  for (size_t d = 0; d < out.shape.size(); ++d) {
    if (std::min({pa->low()[d], pa->high()[d], pb->low()[d], pb->high()[d]}) < 0) return {};
    if (pa->low()[d] == pb->low()[d] && pa->high()[d] == pb->high()[d]) continue;
    if (axis) return {};
    axis = d;
  }
  if (!axis) return {};
  const size_t d = *axis;
  const int64_t size = out.shape[d];
  const bool a_first = size - pa->high()[d] == pb->low()[d];
  if (!a_first && size - pb->high()[d] != pa->low()[d]) return {};  // not adjacent
  const prim::Pad& first = a_first ? *pa : *pb;
  const prim::Pad& second = a_first ? *pb : *pa;
  const ValueId joined = g.node(std::make_shared<const prim::Concatenate>(int64_t(d)),
                                {(a_first ? na : nb)->inputs[0], (a_first ? nb : na)->inputs[0]});
  Shape high = first.high();
  high[d] = second.high()[d];
  return g.node(std::make_shared<const prim::Pad>(first.low(), high, 0.0), {joined});
}

}  // namespace

// The slabs summed two at a time, also when an accumulation adds them one by one to another
// value: (x + pad(a)) + pad(b) is x + pad(concatenate(a, b)) (a reverse scan's bias cotangent
// adds each gate's slab to its carry). The slabs are disjoint, so each element's sum is the same.
std::optional<Rewrite> sum_of_pads(GraphView& g, const Primitive& p, const Ins& ins,
                                   const TensorType& out) {
  const auto* add = as<prim::Binary>(p);
  if (!add || add->kind() != prim::Binary::Kind::Add || ins.size() != 2) return {};
  if (auto joined = joined_slabs(g, ins[0], ins[1], out)) return same_as(*joined);
  for (int side = 0; side < 2; ++side) {
    const Node* inner;
    const auto* sum = produced_by<prim::Binary>(g, ins[size_t(side)], &inner);
    if (!sum || sum->kind() != prim::Binary::Kind::Add || g.type(inner->inputs[0]) != out ||
        g.type(inner->inputs[1]) != out)
      continue;
    for (int k = 0; k < 2; ++k) {
      const ValueId rest = inner->inputs[size_t(1 - k)];
      if (auto joined = joined_slabs(g, inner->inputs[size_t(k)], ins[size_t(1 - side)], out))
        return replace_by(std::make_shared<const prim::Binary>(prim::Binary::Kind::Add),
                          {rest, *joined});
    }
  }
  return {};
}

// A product with a constant factor, large enough that the kernel checks for the identity as the
// other factor (jacrev's pullback of the identity's rows through a captured weight): the kernel
// then needs the constant finite, and a constant's values are checked here once rather than on
// every call (jacobian_mlp: a 1 MB scan per call).
std::optional<Rewrite> finite_constant_factors(const GraphView& g, const Primitive& p,
                                               const Ins& ins, const TensorType& out) {
  const auto* dot = as<prim::DotGeneral>(p);
  if (!dot || !dot->lhs_batch().empty() || out.shape.size() != 2 ||
      (out.dtype != DType::Float32 && out.dtype != DType::Float64))
    return {};
  double k = 1;
  for (int64_t d : dot->lhs_contracting()) k *= double(g.type(ins[0]).shape[size_t(d)]);
  if (2.0 * k * double(shape_numel(out.shape)) < kernels::kIdentityCheckFlops) return {};
  kernels::FiniteOperands finite = dot->known_finite();
  auto known = [&](ValueId v) {
    const Tensor* t = g.constant_value(v);
    return t && kernels::all_finite(*t);
  };
  const bool lhs = !finite.lhs && known(ins[0]), rhs = !finite.rhs && known(ins[1]);
  if (!lhs && !rhs) return {};
  finite.lhs = finite.lhs || lhs, finite.rhs = finite.rhs || rhs;
  return replace_by(std::make_shared<prim::DotGeneral>(dot->dims(), finite), ins);
}

}  // namespace lanes::detail::rewrites
