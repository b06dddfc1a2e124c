// RaggedStrategy::Pad (lanes/ragged.h): f runs once over examples padded to a common shape, and
// every primitive that combines values along a padded axis masks the padding out.
//
// Which axes are padded is found by probing, not by rules: f is traced at the padded shapes
// (trace A) and once more per ragged symbol with that symbol's extent one larger. An axis whose
// extent grows by one in probe k and nowhere else spans symbol k: each lane's valid extent there
// is its length plus the axis's offset from the padded extent (x[1:] has offset -1). Anything
// else that changes between the traces (a node's parameters, a constant's value, the graph
// itself) means f reads the extent as a number, which Pad cannot mask: such an f runs grouped.
// A scalar constant of the form k * extent or k / extent (a mean's count) is the one exception:
// it becomes the lane's own count.
//
// A symbol is one distinct vector of per-example lengths: two Ragged arguments whose examples
// agree in length along some axes share the symbol (tokens and their labels).
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "lanes/graph.h"

namespace lanes::detail {

/// One axis of a value under Pad: its extent is the padded extent of `symbol` plus `offset`
/// (each lane's valid extent is its length plus offset), or it is not ragged (symbol < 0).
struct AxisTag {
  int symbol = -1;
  int64_t offset = 0;
  bool ragged() const { return symbol >= 0; }
};
using Tags = std::vector<AxisTag>;  // per axis of a value

/// A constant filled with k * n + b (exponent 1) or k / n (exponent -1), n the product of the
/// extents of `symbols`.
struct ExtentConstant {
  std::vector<int> symbols;
  double k = 1, b = 0;
  int exponent = 1;
};

/// A graph traced at the padded shapes, with what probing found.
struct MaskedGraph {
  const Graph* graph = nullptr;   // trace A (kept alive by the plan)
  std::vector<Tags> tags;         // per value
  std::vector<bool> ragged_node;  // per node: some value it reads, writes or holds is ragged
  std::vector<std::vector<const Primitive*>> probes;  // per node: the node in each probe trace
  std::vector<std::vector<std::shared_ptr<const MaskedGraph>>> subgraphs;  // per node
  std::map<ValueId, ExtentConstant> extent_constants;
  bool any_ragged() const;
};

/// Thrown by the probing and by a primitive without a masking rule: Auto then groups, Pad
/// reports it.
struct CannotMask : Error {
  using Error::Error;
};

/// Compares trace A with the probes (probe k: symbol k one larger) and tags every value.
/// `extents[k]` is symbol k's padded extent.
std::shared_ptr<const MaskedGraph> analyze_padding(const Graph& a,
                                                   const std::vector<const Graph*>& probes,
                                                   const std::vector<int64_t>& extents);

/// Checks that f traced at the shortest lengths (`shortest` per symbol) returns g's outputs cut to
/// them: each padded axis at its shortest extent (plus its offset), the rest as in g; CannotMask
/// when not (a squeeze or broadcast of an extent that is 1 in some example).
void check_at_shortest(const MaskedGraph& g, const Graph& shortest,
                       const std::vector<int64_t>& lengths);

/// Checks f traced at other lengths (`at` per symbol, shorter than the padded extents) against
/// what probing found: the same graph, every padded axis at its length there (plus its offset),
/// the count constants at their values there, every other value, constant and parameter as in
/// g. Probing compares n and n + 1 only; this catches what depends on the extent otherwise (a
/// slice to n / 2, a branch on n). CannotMask when not.
void verify_at(const MaskedGraph& g, const Graph& other, const std::vector<int64_t>& at);

/// What a masking rule sees of its node (Primitive::mask).
class MaskContext {
 public:
  MaskContext(const MaskedGraph& g, size_t node, const std::vector<Tensor>& lengths,
              const std::vector<int64_t>& min_lengths);
  const Primitive& prim() const;
  const Tags& in(size_t i) const;
  const Tags& out(size_t i) const;
  /// Whether any input or output axis is ragged.
  bool any_ragged() const;
  /// The node in probe trace `symbol` (to read the parameters it got there).
  const Primitive& probe(int symbol) const;
  const MaskedGraph& subgraph(size_t i) const;
  /// The lanes' lengths, one traced int64 scalar per symbol (as extra inputs of a sub-graph).
  const std::vector<Tensor>& lengths() const { return lengths_; }
  const std::vector<int64_t>& min_lengths() const { return min_lengths_; }
  /// The lane's valid extent of an axis with this tag (int64 scalar).
  Tensor valid(const AxisTag& tag) const;
  /// The smallest valid extent of this tag over the batch.
  int64_t min_valid(const AxisTag& tag) const;
  /// x where every ragged axis among `axes` (tags: x's) is within its valid extent, else fill.
  Tensor fill_padding(const Tensor& x, const Tags& tags, const std::vector<int64_t>& axes,
                      double fill) const;
  /// fill_padding with a 0-d fill of x's dtype.
  Tensor fill_padding(const Tensor& x, const Tags& tags, const std::vector<int64_t>& axes,
                      const Tensor& fill) const;
  /// The node applied to `inputs` unchanged (right when padding cannot reach a valid value).
  std::vector<Tensor> rebind(const std::vector<Tensor>& inputs) const;
  /// Throws CannotMask: "<prim> has no masking rule (<why>)".
  [[noreturn]] void no_rule(const std::string& why) const;

 private:
  const MaskedGraph& g_;
  size_t node_;
  const std::vector<Tensor>& lengths_;
  const std::vector<int64_t>& min_lengths_;
};

/// The smallest (`lowest`) or largest value of a dtype, 0-d, -inf or inf for floats: the fill of
/// a max or a min, exact for int64.
Tensor extreme_of(DType d, bool lowest);

/// Runs g's graph on `inputs` (its inputs, captured last) with every ragged node masked;
/// `lengths` holds the lane's length per symbol (traced under the vmap that batches it).
/// `adjust`, when given, may change a node's arguments before it runs (a masked scan zeroes the
/// factors of a product it accumulates on padded steps).
using AdjustArgs = std::function<void(size_t node, std::vector<Tensor>& args)>;
std::vector<Tensor> eval_masked(const MaskedGraph& g, const std::vector<Tensor>& inputs,
                                const std::vector<Tensor>& lengths,
                                const std::vector<int64_t>& min_lengths,
                                const AdjustArgs& adjust = {});

}  // namespace lanes::detail
