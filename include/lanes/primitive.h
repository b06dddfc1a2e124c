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
#include <utility>
#include <vector>

#include "lanes/tensor.h"

namespace lanes {

struct Graph;
namespace detail {
class MaskContext;
}

/// What a value is before it has data: the result of a shape/dtype rule.
struct TensorType {
  Shape shape;
  DType dtype;
  bool operator==(const TensorType&) const = default;
};

/// Streams a type as messages print it, "(3, 4) float32", without building the string unless an
/// error is thrown (check's arguments are evaluated on every call, and shape rules run on every
/// traced op): check(ok, "select: cond ", fmt(in[0]), ...).
struct TypeFmt {
  const TensorType& type;
};
inline TypeFmt fmt(const TensorType& t) { return {t}; }
std::ostream& operator<<(std::ostream& os, TypeFmt t);

/// A value while vmap batches a graph: `value` holds the examples along axis `dim`, or is shared
/// by every example when dim == kNotMapped (unbatched values stay unbatched: invariant work is
/// done once).
inline constexpr int64_t kNotMapped = -1;
struct Batched {
  Tensor value;
  int64_t dim = kNotMapped;
  bool mapped() const { return dim != kNotMapped; }
};

class Primitive : public std::enable_shared_from_this<Primitive> {
 public:
  virtual ~Primitive() = default;

  /// Short lowercase name, as printed in graphs: "add", "reduce_sum", "dot_general".
  virtual std::string name() const = 0;

  /// The static attributes, printed as in a jaxpr: "axes=(0, 1)". Two primitives with the same
  /// name and params compute the same function (used for printing and common-subexpression
  /// elimination).
  virtual std::string params() const { return {}; }

  /// The graphs a control-flow primitive holds (cond's branches, a loop's body), named, for the
  /// printer. They are closed: what they read from outside comes in as inputs of the node.
  virtual std::vector<std::pair<std::string, const Graph*>> subgraphs() const { return {}; }

  /// Shape/dtype rule. Validates the inputs (throws lanes::Error naming the op, the shapes and the
  /// argument) and returns the type of each output. eval may assume it passed.
  virtual std::vector<TensorType> infer(const std::vector<TensorType>& inputs) const = 0;

  /// Evaluates on concrete tensors. Outputs may be views of inputs (tensors are immutable).
  virtual std::vector<Tensor> eval(const std::vector<Tensor>& inputs) const = 0;

  /// eval given the only remaining handles of the inputs that are at their last use: the
  /// compiled executor calls it. A loop overrides it to let go of its initial carry after the
  /// first iteration (its peak memory is then one iteration's plus the carries); it may move
  /// from `inputs`, which the executor clears and refills for its next node (rather than
  /// allocating a fresh vector per node).
  virtual std::vector<Tensor> eval_consuming(std::vector<Tensor>&& inputs) const {
    return eval(inputs);
  }

  /// Batching rule (vmap): `inputs`, at least one mapped, hold `size` examples; returns each
  /// output with its batch dim. Rules are written with ops, so they run eagerly or are recorded
  /// like any other code. The default has no rule: it runs the primitive once per example (a
  /// loop, parallel over threads) after a one-time warning naming it, or throws lanes::Error
  /// when VmapOptions::fallback is Fallback::Error (src/transforms/fallback.cpp).
  virtual std::vector<Batched> batch(const std::vector<Batched>& inputs, int64_t size) const;

  /// Forward-mode rule (jvp): the tangent of each output given the primal inputs, their tangents
  /// and the primal outputs. An undefined Tensor is a zero tangent, in and out (a rule may return
  /// undefined for an output whose tangent is zero, e.g. a comparison). Written with ops, so it
  /// is itself differentiable and batchable. The default throws "no derivative rule".
  virtual std::vector<Tensor> jvp(const std::vector<Tensor>& primals,
                                  const std::vector<Tensor>& tangents,
                                  const std::vector<Tensor>& outputs) const;

  /// Reverse-mode rule (vjp): the cotangent of each input given the primal inputs, the
  /// cotangents of the outputs (undefined = zero) and the primal outputs. Returns one entry per
  /// input; undefined for inputs with no derivative (integer inputs, indices). Written with ops.
  /// The default throws "no derivative rule".
  virtual std::vector<Tensor> vjp(const std::vector<Tensor>& primals,
                                  const std::vector<Tensor>& cotangents,
                                  const std::vector<Tensor>& outputs) const;

  /// vjp when only the cotangents of the inputs flagged in `wanted` will be read; the others may
  /// come back undefined. Autodiff calls this one, so a rule whose cotangents each cost an op
  /// (mul, div, select, dot_general) skips those of constants and of arguments nobody
  /// differentiates: a Jacobian would otherwise trace, and eager grad compute, the products
  /// for them. The default computes them all with vjp.
  /// Reverse mode's forward pass for this node when a derivative will flow through it: its
  /// outputs, followed by residuals its vjp rule needs and could not recompute cheaply (a scan's
  /// per-step carries), which autodiff hands to vjp_residuals. The default records or evaluates
  /// the node as usual and saves nothing (an empty result means exactly that).
  virtual std::vector<Tensor> forward_with_residuals(const std::vector<Tensor>& inputs) const {
    (void)inputs;
    return {};
  }
  /// vjp_wanted given the residuals forward_with_residuals saved.
  virtual std::vector<Tensor> vjp_residuals(const std::vector<Tensor>& primals,
                                            const std::vector<Tensor>& cotangents,
                                            const std::vector<Tensor>& outputs,
                                            const std::vector<Tensor>& residuals,
                                            const std::vector<bool>& wanted) const {
    (void)residuals;
    return vjp_wanted(primals, cotangents, outputs, wanted);
  }

  /// Masking rule (vmap over Ragged arguments with RaggedStrategy::Pad, src/transforms/masking.h):
  /// the node on inputs padded to a common shape, where ctx says which axes are padded and gives
  /// each lane's valid extent. A rule makes every valid output what the unpadded example gives
  /// (a reduction over a padded axis fills the padding with its identity first); values in the
  /// padding may be anything. The default applies the node unchanged when nothing it touches is
  /// padded, and has no rule otherwise (Pad then reports it; Auto groups).
  virtual std::vector<Tensor> mask(const std::vector<Tensor>& inputs,
                                   const detail::MaskContext& ctx) const;

  /// The named mapped axis a collective (psum, all_gather, axis_index, ...) works over; nullptr
  /// for every other primitive. bind records a collective into a trace even when no input is
  /// traced, and vmap runs its batching rule even when no input is mapped: only the vmap that
  /// owns the axis can evaluate it (src/primitives/collectives.cpp).
  virtual const std::string* axis_name() const { return nullptr; }

  /// Whether the primitive communicates with other processes (the MPI collectives of a sharded
  /// vmap): every process must run the same sequence of them, whatever its data. So bind records
  /// it whenever a trace is active, even on concrete inputs, and the graph passes never fold,
  /// merge or drop it; eager and compiled runs then communicate in the same order.
  virtual bool has_effects() const { return false; }

  /// Floating-point operations of one evaluation on values of these types, for lanes::FlopCounter
  /// (lanes/cost.h): a multiply-add counts 2, any other arithmetic, comparison or transcendental
  /// element operation 1; moves, casts, selects and random bits count 0. A control-flow
  /// primitive counts 0 itself: the nodes of its sub-graphs count as they run.
  virtual double flops(const std::vector<TensorType>& inputs,
                       const std::vector<TensorType>& outputs) const {
    (void)inputs;
    (void)outputs;
    return 0;
  }

  virtual std::vector<Tensor> vjp_wanted(const std::vector<Tensor>& primals,
                                         const std::vector<Tensor>& cotangents,
                                         const std::vector<Tensor>& outputs,
                                         const std::vector<bool>& wanted) const {
    (void)wanted;
    return vjp(primals, cotangents, outputs);
  }
};

using PrimitivePtr = std::shared_ptr<const Primitive>;

/// Applies a primitive to inputs: infer (validation) then eval. The one path every op takes.
std::vector<Tensor> bind(const PrimitivePtr& prim, const std::vector<Tensor>& inputs);
/// bind for a primitive with exactly one output.
Tensor bind1(const PrimitivePtr& prim, const std::vector<Tensor>& inputs);

/// "add", or "reduce_sum[axes=(0, 1)]" when there are params.
std::string describe(const Primitive& prim);

}  // namespace lanes
