// The vocabulary of compile's algebraic rewrites. Each rewrite looks at one single-output node,
// prim(ins) of type `out`, in the graph being built and returns an existing value equal to it, or
// a replacement node, or nothing; the caller (passes.cpp's sweep) checks that a replacement infers
// exactly `out`, so the graph's types never change. passes.cpp holds the rewrites of views and
// casts, arithmetic_rewrites.cpp those of arithmetic.
#pragma once

#include <memory>
#include <optional>
#include <vector>

#include "lanes/graph.h"

namespace lanes::detail::rewrites {

// What the rewrites may ask of the graph being built.
class GraphView {
 public:
  virtual const TensorType& type(ValueId v) const = 0;
  /// The node that computes v, or nullptr for inputs and constants.
  virtual const Node* producer(ValueId v) const = 0;
  /// The tensor of a constant, or nullptr.
  virtual const Tensor* constant_value(ValueId v) const = 0;
  /// The output of prim(ins), added to the graph (or found there) for a rewrite to use.
  virtual ValueId node(PrimitivePtr prim, const std::vector<ValueId>& ins) = 0;

 protected:
  ~GraphView() = default;
};

struct Rewrite {
  ValueId value = -1;  // an existing value equal to the node's output, or -1 and:
  PrimitivePtr prim;   // a node computing it
  std::vector<ValueId> inputs;
};

using Ins = std::vector<ValueId>;

inline std::optional<Rewrite> same_as(ValueId v) { return Rewrite{v, nullptr, {}}; }

inline std::optional<Rewrite> replace_by(PrimitivePtr prim, Ins ins) {
  return Rewrite{-1, std::move(prim), std::move(ins)};
}

template <class P>
const P* as(const Primitive& p) {
  return dynamic_cast<const P*>(&p);
}

// The primitive of v's producer if it is a P (then *node is that producer), else nullptr.
template <class P>
const P* produced_by(const GraphView& g, ValueId v, const Node** node) {
  *node = g.producer(v);
  return *node ? as<P>(*(*node)->prim) : nullptr;
}

// ---- arithmetic_rewrites.cpp
// ---------------------------------------------------------------------

/// x * 1, 1 * x, x / 1, x - 0, x + 0 and 0 + x are x.
std::optional<Rewrite> arithmetic_identity(const GraphView& g, const Primitive& p, const Ins& ins,
                                           const TensorType& out);
/// concatenate(a, concatenate(b, c)) along one axis is concatenate(a, b, c).
std::optional<Rewrite> flatten_concatenates(const GraphView& g, const Primitive& p, const Ins& ins,
                                            const TensorType& out);
/// Zero-padded slabs side by side, summed, are one pad of their concatenate.
std::optional<Rewrite> sum_of_pads(GraphView& g, const Primitive& p, const Ins& ins,
                                   const TensorType& out);
/// A product's constant factors are checked finite here once, not by the kernel on every call.
std::optional<Rewrite> finite_constant_factors(const GraphView& g, const Primitive& p,
                                               const Ins& ins, const TensorType& out);

}  // namespace lanes::detail::rewrites
