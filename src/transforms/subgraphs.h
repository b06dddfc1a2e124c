// Sub-graphs of the control-flow primitives (cond, while, scan) and the transforms of them that
// their rules need: batching one for a number of lanes, its jvp and its vjp as graphs, and
// running one fast on concrete tensors.
//
// A sub-graph is closed: it has no constants and no captured values. Whatever a branch or a body
// reads from outside (a captured weight, a scalar it made, a tracer of an enclosing trace) is
// lifted into an extra input and becomes an operand of the node, as jax closes over consts. So
// the graph's structure alone is the function it computes, which is what keys caches and CSE
// (`ref`), and the tensors it reads stay visible to every transform of the enclosing graph.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "lanes/graph.h"
#include "lanes/vmap.h"

namespace lanes::detail {

using GraphPtr = std::shared_ptr<const Graph>;

/// A closed graph and the tensors its lifted inputs read (its inputs are the original explicit
/// ones, then one per lifted tensor).
struct Closed {
  GraphPtr graph;
  std::vector<Tensor> lifted;
};

/// g with its constants and captured values moved to extra inputs after its explicit ones.
Closed close_graph(Graph g);

/// Traces body on fresh inputs of these types and closes the result.
Closed trace_closed(const std::vector<TensorType>& types,
                    const std::function<std::vector<Tensor>(const std::vector<Tensor>&)>& body);

/// g taking `extra` more inputs, unused, inserted before input `at` (so that graphs closed apart
/// can share one operand list).
GraphPtr with_unused_inputs(const Graph& g, size_t at, const std::vector<TensorType>& extra);

/// "#n": an id for g's structure, the same for equal graphs (interned; ids are never reused).
std::string ref(const Graph& g);

/// The types of g's inputs and outputs.
std::vector<TensorType> input_types(const Graph& g);
std::vector<TensorType> output_types(const Graph& g);

/// Whether g (or a sub-graph of it) holds a loop: a cond always partitions such a branch.
bool holds_loop(const Graph& g);
/// The first collective (psum, all_gather, axis_index, ...) over `axis` in g or its sub-graphs,
/// or null.
const Node* find_collective(const Graph& g, const std::string& axis);
/// Per-example work of g, in element operations (an elementwise op counts its output's elements,
/// dot_general its multiply-adds): the cost model of CondStrategy::Auto.
double work_of(const Graph& g);

/// g run on `size` lanes: input i has a leading lane dim when in_mapped[i]; output k comes back
/// with a leading lane dim when out_mapped[k] (after the call: the outputs that depend on mapped
/// inputs, or that `force` asks for), unmapped otherwise. A collective over the batching vmap's
/// axis is refused there (its lanes may be partitioned or masked) unless `lockstep`: every lane
/// runs g, in step.
struct BatchedGraph {
  Closed closed;
  std::vector<bool> out_mapped;
};
BatchedGraph batch_subgraph(const Graph& g, const std::vector<bool>& in_mapped, int64_t size,
                            const std::vector<bool>& force, bool lockstep = false);

/// Which outputs of g depend on the mapped inputs (without building anything lasting).
std::vector<bool> mapped_outputs(const Graph& g, const std::vector<bool>& in_mapped, int64_t size);

/// The jvp of g as a graph: inputs (g's inputs, then a tangent for each input flagged in
/// `with`), outputs (g's outputs, then the tangent of each; zeros where none flows).
Closed jvp_subgraph(const Graph& g, const std::vector<bool>& with);

/// The vjp of g as a graph: inputs (g's inputs, then a cotangent for each float output),
/// outputs the cotangent of each input flagged in `wrt` (zeros where none flows).
Closed vjp_subgraph(const Graph& g, const std::vector<bool>& wrt);

/// Whether the value of this type carries derivatives.
bool has_tangent(const TensorType& t);

/// Runs a closed graph on concrete tensors, optimized and fused once (compile's passes), with
/// loop-invariant work hoisted by LoopBody below.
class GraphRunner {
 public:
  explicit GraphRunner(GraphPtr g);
  std::vector<Tensor> operator()(const std::vector<Tensor>& inputs) const;
  const Graph& graph() const { return *g_; }

 private:
  GraphPtr g_;
  mutable std::once_flag once_;
  mutable std::shared_ptr<const Graph> optimized_;  // shared by graphs of one structure
};

/// A loop body split in two: `pre` computes, from the inputs flagged invariant (a loop's consts),
/// every value that depends on nothing else; `main` takes g's inputs followed by those values
/// and computes the rest. A loop runs pre once and main per iteration (loop-invariant code
/// motion). pre is null when there is nothing to hoist.
struct SplitBody {
  GraphPtr pre, main;
};
SplitBody split_invariant(const Graph& g, const std::vector<bool>& invariant);

/// Runs a loop body with its invariant part hoisted: start() once per loop with the invariant
/// inputs, then step() per iteration with all of g's inputs.
class LoopBody {
 public:
  LoopBody(GraphPtr g, std::vector<bool> invariant);
  /// The hoisted values for these inputs (only the invariant ones are read).
  std::vector<Tensor> start(const std::vector<Tensor>& inputs) const;
  std::vector<Tensor> step(std::vector<Tensor> inputs, const std::vector<Tensor>& hoisted) const;

 private:
  std::vector<bool> invariant_;
  std::shared_ptr<GraphRunner> pre_, main_;
};

/// The runners of one per-example graph batched over lane counts, built on first use and kept
/// (a loop or a partitioned cond meets a few sizes). Every output comes back mapped.
class LaneRunners {
 public:
  LaneRunners(GraphPtr g, std::vector<bool> in_mapped, VmapOptions options);
  /// Runs on inputs whose mapped ones hold `size` lanes at dim 0.
  std::vector<Tensor> run(int64_t size, const std::vector<Tensor>& inputs) const;
  const Graph& graph() const { return *g_; }

 private:
  std::shared_ptr<const GraphRunner> runner(int64_t size) const;
  GraphPtr g_;
  std::vector<bool> in_mapped_;
  VmapOptions options_;
  mutable std::mutex mutex_;
  mutable std::map<int64_t, std::shared_ptr<const GraphRunner>> runners_;
};

/// Lane counts a compacted loop or a partitioned cond rounds up to: exact up to 32, then 16 steps
/// per power of two (at most 1/16 of waste), so a few graphs serve every count.
int64_t lane_bucket(int64_t n);

}  // namespace lanes::detail
