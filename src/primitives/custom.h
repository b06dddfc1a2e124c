// Custom-rule primitives: custom_vjp_call, custom_jvp_call and custom_vmap_call (jax's names).
// Each holds f's closed sub-graph and its rules' (src/transforms/subgraphs.h); custom_vmap's
// rule is a C++ function, run when vmap meets the node, since what it computes depends on the
// batch size and on which arguments are batched. Every rule of each lives in its own file:
// custom_vjp.cpp, custom_jvp.cpp, custom_vmap.cpp; custom.cpp holds what they share.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "lanes/custom.h"
#include "lanes/primitive.h"
#include "transforms/subgraphs.h"

namespace lanes::prim {

using detail::GraphPtr;

/// What the three share. Operands: (args..., lifted of graph 0, lifted of graph 1, ...). Graph
/// 0 is f, taking (args..., its lifted); graph j > 0 is a rule taking its own leading inputs
/// (the args, or residuals and cotangents), then its lifted operands. Lifted operands are what
/// the functions captured (src/transforms/subgraphs.h closes them).
class CustomCall : public Primitive {
 public:
  CustomCall(size_t n_args, std::vector<GraphPtr> graphs, std::vector<size_t> n_lifted);
  std::vector<std::pair<std::string, const Graph*>> subgraphs() const override;
  std::vector<TensorType> infer(const std::vector<TensorType>& in) const override;
  std::vector<Tensor> eval(const std::vector<Tensor>& in) const override;

 protected:
  /// What graph j is called in params and printed graphs ("f", "fwd", "bwd", "rule").
  virtual const char* label(size_t j) const = 0;
  /// "f=#1, fwd=#2, bwd=#3".
  std::string refs() const;
  size_t lifted_begin(size_t j) const;
  std::vector<Tensor> args(const std::vector<Tensor>& in) const;
  /// lead followed by graph j's lifted operands, taken from the node's operands `in`.
  std::vector<Tensor> inputs_of(size_t j, std::vector<Tensor> lead,
                                const std::vector<Tensor>& in) const;
  /// Graph j on its inputs: inlined into the enclosing trace when some input is traced (a
  /// derivative's rule then is ordinary ops every later transform sees), else run optimized.
  std::vector<Tensor> run(size_t j, const std::vector<Tensor>& inputs) const;
  /// What the custom rules leave out: the derivatives with respect to the values f captures
  /// (its lifted operands), which take f's own derivative. `out` (one entry per operand) gets
  /// the cotangents of f's lifted operands flagged in `wanted`; the rules' own captures get none
  /// (they only shape residuals and rules). Control flow's reverse mode asks for the cotangents
  /// of every value a branch or body captures, so this must not throw.
  void captured_cotangents(const std::vector<Tensor>& primals, const std::vector<Tensor>& cts,
                           const std::vector<bool>& wanted, std::vector<Tensor>& out) const;
  /// The tangents of the outputs that come from tangents on f's lifted operands (undefined when
  /// none has one): added to the rule's.
  std::vector<Tensor> captured_tangents(const std::vector<Tensor>& primals,
                                        const std::vector<Tensor>& tangents) const;
  /// f's derivative, for the rules that take it: its jvp (tangents per operand) and vjp.
  std::vector<Tensor> jvp_of_f(const std::vector<Tensor>& primals,
                               const std::vector<Tensor>& tangents) const;
  std::vector<Tensor> vjp_of_f(const std::vector<Tensor>& primals, const std::vector<Tensor>& cts,
                               const std::vector<bool>& wanted) const;

  /// Under vmap: the flags of graph j's lifted operands among the node's `mapped` flags.
  std::vector<bool> lifted_flags(size_t j, const std::vector<bool>& mapped) const;
  /// The operands of this node's batched twin: the args, then per graph its old lifted operands
  /// followed by those its batching made (closed[j].lifted); fills the new lifted counts.
  std::vector<Tensor> batched_operands(const std::vector<Tensor>& ops,
                                       const std::vector<detail::Closed>& closed,
                                       std::vector<size_t>& n_lifted) const;

  size_t n_args_;
  std::vector<GraphPtr> graphs_;
  std::vector<size_t> n_lifted_;
  std::vector<std::shared_ptr<detail::GraphRunner>> runners_;
};

/// g batched over `size` lanes (input i holds them at dim 0 when in_mapped[i]): output k comes
/// back with the lanes at dim 0 when it depends on a mapped input or force[k]; when sum[k] it
/// comes back unmapped instead, summed over the lanes if it had them (a cotangent of an argument
/// shared by every lane). out_mapped says which came back mapped.
struct CustomBatched {
  detail::Closed closed;
  std::vector<bool> out_mapped;
};
CustomBatched batch_custom(const Graph& g, const std::vector<bool>& in_mapped, int64_t size,
                           const std::vector<bool>& force, const std::vector<bool>& sum);

/// Graphs: f; fwd (args) -> (outs, residuals); bwd (residuals, cts) -> a cotangent per arg.
class CustomVjpCall : public CustomCall {
 public:
  CustomVjpCall(size_t n_args, std::vector<GraphPtr> graphs, std::vector<size_t> n_lifted);
  std::string name() const override { return "custom_vjp_call"; }
  std::string params() const override { return refs(); }
  std::vector<Batched> batch(const std::vector<Batched>& in, int64_t size) const override;
  std::vector<Tensor> jvp(const std::vector<Tensor>& primals, const std::vector<Tensor>& tangents,
                          const std::vector<Tensor>& outputs) const override;
  std::vector<Tensor> vjp(const std::vector<Tensor>& primals, const std::vector<Tensor>& cts,
                          const std::vector<Tensor>& outputs) const override;
  std::vector<Tensor> vjp_wanted(const std::vector<Tensor>& primals, const std::vector<Tensor>& cts,
                                 const std::vector<Tensor>& outputs,
                                 const std::vector<bool>& wanted) const override;
  std::vector<Tensor> forward_with_residuals(const std::vector<Tensor>& inputs) const override;
  std::vector<Tensor> vjp_residuals(const std::vector<Tensor>& primals,
                                    const std::vector<Tensor>& cts,
                                    const std::vector<Tensor>& outputs,
                                    const std::vector<Tensor>& residuals,
                                    const std::vector<bool>& wanted) const override;

 protected:
  const char* label(size_t j) const override;

 private:
  std::vector<Tensor> backward(const std::vector<Tensor>& primals, const std::vector<Tensor>& cts,
                               const std::vector<Tensor>& residuals,
                               const std::vector<bool>& wanted) const;
  size_t n_out_, n_res_;
};

/// Graphs: f; rule (args, tangents) -> (outs, tangent outs).
class CustomJvpCall : public CustomCall {
 public:
  CustomJvpCall(size_t n_args, std::vector<GraphPtr> graphs, std::vector<size_t> n_lifted);
  std::string name() const override { return "custom_jvp_call"; }
  std::string params() const override { return refs(); }
  std::vector<Batched> batch(const std::vector<Batched>& in, int64_t size) const override;
  std::vector<Tensor> jvp(const std::vector<Tensor>& primals, const std::vector<Tensor>& tangents,
                          const std::vector<Tensor>& outputs) const override;
  std::vector<Tensor> vjp(const std::vector<Tensor>& primals, const std::vector<Tensor>& cts,
                          const std::vector<Tensor>& outputs) const override;
  std::vector<Tensor> vjp_wanted(const std::vector<Tensor>& primals, const std::vector<Tensor>& cts,
                                 const std::vector<Tensor>& outputs,
                                 const std::vector<bool>& wanted) const override;

 protected:
  const char* label(size_t j) const override { return j == 0 ? "f" : "rule"; }

 private:
  size_t n_out_;
};

/// Graph: f. The rule runs when vmap meets the node.
class CustomVmapCall : public CustomCall {
 public:
  CustomVmapCall(size_t n_args, GraphPtr f, size_t n_lifted,
                 std::shared_ptr<const detail::VmapRule> rule);
  std::string name() const override { return "custom_vmap_call"; }
  std::string params() const override;
  std::vector<Batched> batch(const std::vector<Batched>& in, int64_t size) const override;
  std::vector<Tensor> jvp(const std::vector<Tensor>& primals, const std::vector<Tensor>& tangents,
                          const std::vector<Tensor>& outputs) const override;
  std::vector<Tensor> vjp(const std::vector<Tensor>& primals, const std::vector<Tensor>& cts,
                          const std::vector<Tensor>& outputs) const override;
  std::vector<Tensor> vjp_wanted(const std::vector<Tensor>& primals, const std::vector<Tensor>& cts,
                                 const std::vector<Tensor>& outputs,
                                 const std::vector<bool>& wanted) const override;

 protected:
  const char* label(size_t) const override { return "f"; }

 private:
  std::shared_ptr<const detail::VmapRule> rule_;
};

}  // namespace lanes::prim
