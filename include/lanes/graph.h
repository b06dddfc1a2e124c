// Graphs: what a transform records when it traces a function (like a jaxpr).
//
// Tracing runs the user's function on traced tensors (Tensor::is_tracer): every op still binds
// its primitive, and bind records a node instead of computing when an input is traced. Concrete
// tensors the function captures become constants; traced tensors of an enclosing trace (a
// transform inside a transform) become extra inputs, `captured`. Ops whose inputs are all
// concrete run eagerly even while tracing, so loop-invariant work is done once.
//
//     auto g = lanes::make_graph([](const Tensor& x) { return lanes::exp(x) * 2.0; })(x);
//     std::cout << g;   // { lambda a:f32[3]. let b:f32[3] = exp a; ... in (c) }
#pragma once

#include <functional>
#include <iosfwd>
#include <memory>
#include <string_view>
#include <tuple>
#include <vector>

#include "lanes/primitive.h"
#include "lanes/tree.h"

namespace lanes {

using ValueId = int64_t;

struct Node {
  PrimitivePtr prim;
  std::vector<ValueId> inputs, outputs;
};

struct Graph {
  std::vector<TensorType> types;  // of every value, indexed by ValueId
  std::vector<ValueId> inputs;    // the function's arguments (leaves), then the captured values
  std::vector<ValueId> outputs;   // the result's leaves
  std::vector<std::pair<ValueId, Tensor>> constants;
  std::vector<Node> nodes;       // in a valid execution order
  std::vector<Tensor> captured;  // traced values of enclosing traces, fed to the last inputs

  ValueId add_value(TensorType type);
  size_t num_explicit_inputs() const { return inputs.size() - captured.size(); }
};

/// Prints like a jaxpr: "{ lambda a:f32[3,4] b:f32[4]. let c:f32[3,4] = add a b in (c) }".
std::ostream& operator<<(std::ostream& os, const Graph& g);

/// Runs the graph on its inputs (the explicit ones followed by graph.captured): ops run eagerly
/// on concrete tensors and are recorded when inputs are traced, which inlines the graph into
/// the enclosing trace. Frees each intermediate after its last use.
std::vector<Tensor> eval_graph(const Graph& g, const std::vector<Tensor>& inputs);

namespace detail {
class TraceState;

/// bind for node n of g applied to `args`: when the args have the types g recorded for the
/// node's inputs and some are traced, the node is recorded with the output types g already
/// holds, without running the shape rule again (replaying a traced graph: a gradient's forward
/// pass, a jvp, an inlined graph). Otherwise it is bound as usual.
std::vector<Tensor> replay(const Graph& g, const Node& n, const std::vector<Tensor>& args);

/// What a transform computes from f's traced graph g on its inputs (g's inputs, then any the
/// transform adds), written with ops so that it can be traced.
using CallBody = std::function<std::vector<Tensor>(const Graph& g, const std::vector<Tensor>&)>;

/// body(g, inputs) for a transform applied under an enclosing trace (grad or jacrev inside vmap;
/// some input is traced), recorded as one `call` node whose body is the traced result
/// (src/ir/call.cpp, like jax's closed_call). Bodies are kept process-wide, keyed by g, `tag`
/// (what the transform is: "grad:<wrt bits>", "vjp:<leaf>", ...) and the inputs' types, so that
/// the transform is traced once rather than on every call of the enclosing vmap, and so that
/// equal functions get the same body whoever builds them: the enclosing vmap's cache then keys
/// one node. Without it the LSTM's per-example gradients spent a third of each call re-deriving
/// the backward pass. A body is built the second time its key is seen (a function capturing new
/// tensors on every call pins none of them) and at most 16 are kept.
std::vector<Tensor> call_cached(const Graph& g, const std::vector<Tensor>& inputs,
                                std::string_view tag, const CallBody& body);

/// Whether g has call nodes, and g with each replaced by its body's nodes (g itself when it has
/// none). Transforms and passes work on flat graphs.
bool has_calls(const Graph& g);
Graph inline_calls(Graph g);

/// Records the ops run while it lives (RAII; traces nest).
class TraceScope {
 public:
  TraceScope();
  ~TraceScope();
  TraceScope(const TraceScope&) = delete;
  TraceScope& operator=(const TraceScope&) = delete;
  /// A new traced input of the graph.
  Tensor input(const TensorType& type);
  /// Ends recording; `outputs` may be traced, captured or concrete.
  Graph finish(const std::vector<Tensor>& outputs);

 private:
  std::unique_ptr<TraceState> state_;
};

/// Traces f into a graph. `args` (trees of Tensors) give the structure of f's arguments and
/// `leaf_types` the type of each leaf as f sees it (a vmap traces one example, whose types lack
/// the batch axis). `out` receives f's result: its traced leaves give the output tree's shape.
template <class F, class... Args>
Graph trace(const F& f, std::invoke_result_t<const F&, const Args&...>* out,
            const std::vector<TensorType>& leaf_types, const Args&... args) {
  TraceScope scope;
  std::vector<Tensor> traced;
  for (const TensorType& type : leaf_types) traced.push_back(scope.input(type));
  size_t pos = 0;
  std::tuple<Args...> traced_args{tree::rebuild(args, traced, pos)...};  // braces: in order
  check(pos == traced.size(), "trace: ", traced.size(), " leaf types for ", pos, " leaves");
  auto result = std::apply(f, traced_args);
  Graph g = scope.finish(tree::flatten(result));
  if (out) *out = std::move(result);
  return g;
}

/// The types of the leaves of args.
template <class... Args>
std::vector<TensorType> leaf_types(const Args&... args) {
  std::vector<Tensor> leaves;
  (tree::flatten(args, leaves), ...);
  std::vector<TensorType> types;
  for (const Tensor& leaf : leaves) {
    check(leaf.defined(), "trace: an argument leaf is an undefined tensor");
    types.push_back({leaf.shape(), leaf.dtype()});
  }
  return types;
}
}  // namespace detail

/// make_graph(f)(args...) traces f on args and returns the graph (jax.make_jaxpr).
template <class F>
auto make_graph(F f) {
  return [f](const auto&... args) {
    using Out = std::invoke_result_t<const F&, decltype(args)...>;
    return detail::inline_calls(
        detail::trace<F>(f, static_cast<Out*>(nullptr), detail::leaf_types(args...), args...));
  };
}

}  // namespace lanes
