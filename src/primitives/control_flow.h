// Control-flow primitives: cond (and switch_case), while and scan. Each holds closed sub-graphs
// (src/transforms/subgraphs.h) and keeps every rule for them in its own file, as jax keeps
// lax/control_flow/{conditionals,loops}.py: cond.cpp, while.cpp, scan.cpp.
//
// Under vmap a cond or while whose predicate is the same for every example stays control flow
// over batched sub-graphs. One whose predicate differs per example becomes a *lane* node: it
// holds the per-example sub-graphs, which operands carry a leading lane dim, and the strategy,
// and decides at run time how to run the lanes (cond: select or partition; while: mask or
// compact). Its derivative rules build lane nodes of the sub-graphs' derivatives, so a lane's
// gradient only ever meets the branch it took.
#pragma once

#include <memory>
#include <mutex>
#include <vector>

#include "lanes/primitive.h"
#include "lanes/vmap.h"
#include "transforms/subgraphs.h"

namespace lanes::prim {

class DotGeneral;

using detail::GraphPtr;

/// A lane node's batch: `size` lanes; operand i has a leading lane dim when mapped[i]. size -1
/// means a plain node (no lanes); 0 lanes is a lane node too (vmap over an empty batch), whose
/// index and operands have a lane dim of 0.
struct Lanes {
  int64_t size = -1;
  std::vector<bool> mapped;
  VmapOptions options;  // of the vmap that made the node (strategies, fallback)
  bool on() const { return size >= 0; }
};

/// Inputs (index, operands...): the branch `index` (clamped to the valid range) applied to the
/// operands. With lanes, index is (size,) and each lane takes its own branch; every output then
/// has a leading lane dim.
class Cond : public Primitive {
 public:
  Cond(std::vector<GraphPtr> branches, Lanes lanes = {});
  std::string name() const override { return "cond"; }
  std::string params() const override;
  std::vector<std::pair<std::string, const Graph*>> subgraphs() const override;
  std::vector<TensorType> infer(const std::vector<TensorType>& in) const override;
  std::vector<Tensor> eval(const std::vector<Tensor>& in) const override;
  std::vector<Batched> batch(const std::vector<Batched>& in, int64_t size) const override;
  std::vector<Tensor> jvp(const std::vector<Tensor>& primals, const std::vector<Tensor>& tangents,
                          const std::vector<Tensor>& outputs) const override;
  std::vector<Tensor> vjp(const std::vector<Tensor>& primals, const std::vector<Tensor>& cts,
                          const std::vector<Tensor>& outputs) const override;

 private:
  std::vector<Batched> batch_outer_in_lanes(const std::vector<Batched>& in, int64_t size,
                                            const Node& collective) const;
  std::vector<Tensor> eval_lanes(const std::vector<Tensor>& in) const;
  std::vector<Tensor> select_lanes(const std::vector<Tensor>& ops,
                                   const std::vector<std::vector<int64_t>>& lanes) const;
  std::vector<Tensor> partition_lanes(const std::vector<Tensor>& ops,
                                      const std::vector<std::vector<int64_t>>& lanes, int64_t base,
                                      std::vector<Tensor> out = {}) const;
  std::vector<Tensor> select_around_loops(const std::vector<Tensor>& ops,
                                          const std::vector<std::vector<int64_t>>& lanes) const;
  std::string explain_lanes(int64_t size) const;  // for lanes::explain
  std::vector<GraphPtr> branches_;
  std::vector<double> work_;  // per branch: detail::work_of, for CondStrategy::Auto
  std::vector<bool> loops_;   // per branch: detail::holds_loop
  Lanes lanes_;
  std::vector<std::shared_ptr<detail::GraphRunner>> runners_;       // plain
  std::vector<std::shared_ptr<detail::LaneRunners>> lane_runners_;  // with lanes
};

/// Inputs (carry..., consts...): while cond(carry, consts): carry = body(carry, consts). With
/// lanes every carry is mapped and each lane stops on its own.
class While : public Primitive {
 public:
  While(GraphPtr cond, GraphPtr body, size_t n_carry, Lanes lanes = {});
  std::string name() const override { return "while"; }
  std::vector<Tensor> eval_consuming(std::vector<Tensor>&& in) const override;
  std::string params() const override;
  std::vector<std::pair<std::string, const Graph*>> subgraphs() const override;
  std::vector<TensorType> infer(const std::vector<TensorType>& in) const override;
  std::vector<Tensor> eval(const std::vector<Tensor>& in) const override;
  std::vector<Batched> batch(const std::vector<Batched>& in, int64_t size) const override;
  std::vector<Tensor> jvp(const std::vector<Tensor>& primals, const std::vector<Tensor>& tangents,
                          const std::vector<Tensor>& outputs) const override;
  std::vector<Tensor> vjp(const std::vector<Tensor>& primals, const std::vector<Tensor>& cts,
                          const std::vector<Tensor>& outputs) const override;

  const GraphPtr& cond() const { return cond_; }
  const GraphPtr& body() const { return body_; }
  size_t n_carry() const { return n_carry_; }
  const Lanes& lanes() const { return lanes_; }

 private:
  std::vector<Batched> batch_outer_in_lanes(const std::vector<Batched>& in, int64_t size) const;
  GraphPtr cond_, body_;
  size_t n_carry_;
  Lanes lanes_;
  std::shared_ptr<detail::LoopBody> cond_runner_, body_runner_;   // plain
  std::shared_ptr<detail::LaneRunners> cond_lanes_, step_lanes_;  // with lanes
};

/// Inputs (carry..., consts..., xs...), outputs (carry..., ys...): the body (carry, consts, x_t)
/// -> (carry, y_t) over t = 0 .. length-1 (or backwards), ys stacked on a new leading axis.
class Scan : public Primitive {
 public:
  /// `parallel`: no carry, and the steps may run at once on the pool (ScanOptions::parallel).
  Scan(GraphPtr body, size_t n_carry, size_t n_consts, int64_t length, bool reverse,
       bool parallel = false);
  std::string name() const override { return "scan"; }
  std::vector<Tensor> mask(const std::vector<Tensor>& in,
                           const detail::MaskContext& ctx) const override;
  std::vector<Tensor> eval_consuming(std::vector<Tensor>&& in) const override;
  std::string params() const override;
  std::vector<std::pair<std::string, const Graph*>> subgraphs() const override;
  std::vector<TensorType> infer(const std::vector<TensorType>& in) const override;
  std::vector<Tensor> eval(const std::vector<Tensor>& in) const override;
  std::vector<Batched> batch(const std::vector<Batched>& in, int64_t size) const override;
  std::vector<Tensor> jvp(const std::vector<Tensor>& primals, const std::vector<Tensor>& tangents,
                          const std::vector<Tensor>& outputs) const override;
  std::vector<Tensor> vjp(const std::vector<Tensor>& primals, const std::vector<Tensor>& cts,
                          const std::vector<Tensor>& outputs) const override;
  std::vector<Tensor> forward_with_residuals(const std::vector<Tensor>& inputs) const override;
  std::vector<Tensor> vjp_residuals(const std::vector<Tensor>& primals,
                                    const std::vector<Tensor>& cts,
                                    const std::vector<Tensor>& outputs,
                                    const std::vector<Tensor>& residuals,
                                    const std::vector<bool>& wanted) const override;

  size_t num_carry() const { return n_carry_; }
  /// This scan with only the ys that `keep` marks (one flag per ys output, in order): the body
  /// then drops the work that only the others needed once it is optimized.
  std::shared_ptr<const Scan> keeping_ys(const std::vector<bool>& keep) const;
  /// This scan without the carries its body passes through unchanged (they become consts: every
  /// step sees the initial value, which is also the final one), without a ys its body lists
  /// twice and without a ys that is a step of an xs (the xs, stacked again). `scan` is null when
  /// there is nothing to drop.
  struct Simplified {
    std::shared_ptr<const Scan> scan;
    std::vector<size_t> inputs;    // the new scan's inputs, as positions in this one's
    std::vector<int64_t> outputs;  // per output of this one: the new scan's output k as k, or
                                   // this one's input i (the value passed through) as -1 - i
  };
  Simplified simplified() const;
  /// This scan without the products of an xs step with a const (x_t W in a recurrent layer):
  /// each is one product over all steps before the loop (the steps folded into the GEMM's M
  /// rather than `length` small GEMMs), its result a new xs. `scan` is null when there is none.
  struct HoistedProduct {
    std::shared_ptr<const DotGeneral> dot;  // over the stacked xs: its output has the steps at
    size_t lhs, rhs;                        // `steps_at`; lhs and rhs are this scan's inputs
    int64_t steps_at;
  };
  struct Hoisted {
    std::shared_ptr<const Scan> scan;  // this one's inputs, then one xs per product
    std::vector<HoistedProduct> products;
  };
  Hoisted hoisted_products() const;

 private:
  struct BodyVjp;  // the body's reverse sweep and the values it reads (scan_vjp.cpp)
  const BodyVjp& body_vjp() const;
  std::shared_ptr<const Scan> recording() const;
  std::vector<Tensor> vjp_given(const std::vector<Tensor>& primals, const std::vector<Tensor>& cts,
                                const std::vector<Tensor>& outputs,
                                const std::vector<Tensor>& saved) const;
  mutable std::once_flag vjp_once_;
  mutable std::shared_ptr<const BodyVjp> vjp_;
  GraphPtr body_;
  size_t n_carry_, n_consts_;
  int64_t length_;
  bool reverse_;
  bool parallel_;
  std::shared_ptr<detail::LoopBody> loop_;
};

/// Binds a control-flow node whose sub-graphs were closed apart: each Closed's lifted tensors are
/// appended to the operands, and every graph is widened to take them all. Returns the outputs.
/// `graphs` all take `operands` first.
struct Widened {
  std::vector<GraphPtr> graphs;
  std::vector<Tensor> operands;
};
Widened widen_all(std::vector<detail::Closed> closed, std::vector<Tensor> operands);

/// Helpers shared by the control-flow rules.
/// Each operand with its lane dim at 0 (unmapped ones stay as they are) and the flags.
std::vector<Tensor> lanes_first(const std::vector<Batched>& in, std::vector<bool>& mapped);
/// g with its inputs and outputs listed in a new order (positions into the old lists).
GraphPtr reordered(const Graph& g, const std::vector<size_t>& inputs,
                   const std::vector<size_t>& outputs);
/// lo, lo + 1, ..., hi - 1.
std::vector<size_t> range(size_t lo, size_t hi);
/// A closed scan body whose inputs are (carry, consts, xs, lifted) with the lifted moved in after
/// the consts, so the scan takes them as more consts.
GraphPtr lifted_as_consts(const detail::Closed& c, size_t n_carry, size_t n_consts, size_t n_xs);
/// The outputs of a merged lane node, (size * lanes, ...), as (size, lanes, ...) batched at 0.
std::vector<Batched> split_lanes(const std::vector<Tensor>& ys, int64_t size, int64_t lanes);
/// Which carries of a loop are mapped under vmap: those mapped on entry, and those the body maps
/// from them, to a fixpoint (the first `n_carry` flags of `mapped` grow; the rest are the consts'
/// and xs').
void carry_fixpoint(const Graph& body, size_t n_carry, int64_t size, std::vector<bool>& mapped);
/// Rows `rows` of axis 0 of a concrete tensor, as a new contiguous tensor: the gathers of a
/// partitioned cond and a compacted loop (lanes are rows; the general gather kernel costs 5x).
Tensor gather_rows(const Tensor& x, const std::vector<int64_t>& rows);
/// Row rows[j] of x to row to[j] of dst, a contiguous tensor the caller owns (the write-back of a
/// compacted loop).
void scatter_rows(const Tensor& x, const std::vector<int64_t>& rows, Tensor& dst,
                  const std::vector<int64_t>& to);
/// t itself when it is contiguous and no other handle holds its storage, else a copy: a tensor
/// the caller may write rows into.
Tensor owned(const Tensor& t);
/// Zeros where a tangent or cotangent is undefined.
Tensor or_zeros(const Tensor& t, const TensorType& type);
/// A lane node's operands for `size2` outer lanes of a node of `size` inner lanes: both lane
/// dims merged into one of size2 * size (the rule of a lane node under another vmap).
std::vector<Tensor> merge_lanes(const std::vector<Batched>& in, const std::vector<bool>& inner,
                                int64_t size, int64_t size2);

/// A lane node's operands under an outer vmap that keeps the node's own lanes (a collective over
/// the outer axis sits in its sub-graphs): operand i with its lane dim first (when lanes[i]), then
/// the outer batch dim (when the operand is mapped, or `outer[i]` asks for it: a broadcast view).
/// So each lane's value of a mapped operand holds every outer example, outer dim first.
std::vector<Tensor> outer_inside(const std::vector<Batched>& in, const std::vector<bool>& lanes,
                                 const std::vector<bool>& outer, int64_t size);

}  // namespace lanes::prim
