// Primitive: the unit every op is built from.
//
// Like jax.lax and MLX, lanes has a small set of primitives (elementwise unary/binary/select,
// cast, reduce, dot_general, reshape, transpose, broadcast_in_dim, slice, pad, concatenate,
// gather, scatter_add, iota, conv, random). A primitive object carries its static attributes
// (axes, shapes, dtypes) as members; the tensors it works on are its inputs. Everything about a
// primitive lives in one place (src/primitives/<family>.{h,cpp}): its shape/dtype rule (`infer`),
// its evaluation (`eval`, which calls kernels), and - added by the transforms - its batching and
// derivative rules.
//
// Every user-facing op calls `bind`, which validates the inputs through `infer` and evaluates.
// This single entry point is where tracing hooks in: a traced input records a node instead.
#pragma once

#include <iosfwd>
#include <memory>
#include <string>
#include <vector>

#include "lanes/tensor.h"

namespace lanes {

/// What a value is before it has data: the result of a shape/dtype rule.
struct TensorType {
  Shape shape;
  DType dtype;
  bool operator==(const TensorType&) const = default;
};

class Primitive {
 public:
  virtual ~Primitive() = default;

  /// Short lowercase name, as printed in graphs: "add", "reduce_sum", "dot_general".
  virtual std::string name() const = 0;

  /// The static attributes, printed as in a jaxpr: "axes=(0, 1)". Two primitives with the same
  /// name and params compute the same function (used for printing and common-subexpression
  /// elimination).
  virtual std::string params() const { return {}; }

  /// Shape/dtype rule. Validates the inputs (throws lanes::Error naming the op, the shapes and the
  /// argument) and returns the type of each output. eval may assume it passed.
  virtual std::vector<TensorType> infer(const std::vector<TensorType>& inputs) const = 0;

  /// Evaluates on concrete tensors. Outputs may be views of inputs (tensors are immutable).
  virtual std::vector<Tensor> eval(const std::vector<Tensor>& inputs) const = 0;
};

using PrimitivePtr = std::shared_ptr<const Primitive>;

/// Applies a primitive to inputs: infer (validation) then eval. The one path every op takes.
std::vector<Tensor> bind(const PrimitivePtr& prim, const std::vector<Tensor>& inputs);
/// bind for a primitive with exactly one output.
Tensor bind1(const PrimitivePtr& prim, const std::vector<Tensor>& inputs);

/// "add", or "reduce_sum[axes=(0, 1)]" when there are params.
std::string describe(const Primitive& prim);

}  // namespace lanes
