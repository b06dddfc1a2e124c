// Elementwise fusion for compile: connected chains of unary/binary/select/cast nodes of one shape
// become a single fused_elementwise node that runs them in one pass over memory, tile by tile
// (src/kernels/fused.cpp). Broadcasts feeding a chain stay views, read with stride 0.
//
// Grouping walks the graph in order. A fusible node joins the open group of one of its inputs
// (same shape), merging the open groups of its other inputs; a group closes as soon as any node
// outside it reads one of its values. That one rule keeps the result acyclic and in order: the
// fused node runs where its last member ran, every member's outside inputs come before that, and
// every outside reader comes after the group closed.
#include <algorithm>
#include <optional>

#include "kernels/fused.h"
#include "lanes/compile.h"
#include "primitives/dot_general.h"
#include "primitives/elementwise.h"
#include "primitives/reduce.h"
#include "runtime/dot_epilogue.h"

namespace lanes::detail {

namespace {

using kernels::FusedProgram;
using kernels::FusedStep;

// A chain's reduction over its trailing dims, folded into the fused pass.
struct TailReduce {
  kernels::ReduceOp op;
  int64_t dims;  // the last `dims` dims of the chain's shape
};

class FusedElementwise : public Primitive {
 public:
  FusedElementwise(FusedProgram program, Shape shape, std::optional<TailReduce> reduce = {})
      : program_(std::move(program)), shape_(std::move(shape)), reduce_(reduce) {}
  std::string name() const override { return "fused_elementwise"; }
  std::string params() const override {
    std::string out = program_.describe();
    if (reduce_) {
      out += " then ";
      out += kernels::reduce_name(reduce_->op);
      out += " over the last ";
      out += std::to_string(reduce_->dims);
    }
    return out;
  }

  std::vector<TensorType> infer(const std::vector<TensorType>& in) const override {
    check(in.size() == program_.input_types.size(), "fused_elementwise: expects ",
          program_.input_types.size(), " inputs, got ", in.size());
    for (size_t i = 0; i < in.size(); ++i)
      check(in[i] == TensorType{shape_, program_.input_types[i]}, "fused_elementwise: input ", i,
            " has shape ", fmt(in[i].shape), " and dtype ", dtype_name(in[i].dtype), ", expected ",
            fmt(shape_), " ", dtype_name(program_.input_types[i]));
    std::vector<TensorType> out;
    const Shape shape(shape_.begin(), shape_.end() - (reduce_ ? reduce_->dims : 0));
    for (int32_t r : program_.outputs) out.push_back({shape, program_.register_type(r)});
    return out;
  }

  std::vector<Tensor> eval(const std::vector<Tensor>& in) const override {
    if (reduce_)
      return {kernels::run_fused_reduce(program_, shape_, in, reduce_->op, reduce_->dims)};
    return kernels::run_fused(program_, shape_, in);
  }

  /// The chain's arithmetic steps on floats, each once per element, then the tail reduction.
  double flops(const std::vector<TensorType>&, const std::vector<TensorType>& out) const override {
    const int64_t n = shape_numel(shape_);
    return program_.flops(n) + (reduce_ ? double(n - shape_numel(out[0].shape)) : 0.0);
  }

 private:
  FusedProgram program_;
  Shape shape_;
  std::optional<TailReduce> reduce_;
};

// Rows of at least this many elements make a tail reduction worth fusing; shorter ones (softmax
// over 10 classes) spend more on the per-row set-up than the pass over memory saves.
constexpr int64_t kMinReducedRow = 64;
// ... and this many rows: the fused pass splits rows between threads, never one row.
constexpr int64_t kMinReducedRows = 8;

// The tail reduction node r folds into the group that computes its operand, if it may: a float
// sum/prod/max/min over trailing dims of a value that nothing else reads.
std::optional<TailReduce> tail_reduce(const Graph& g, const Node& r,
                                      const std::vector<int>& reads) {
  const auto* red = dynamic_cast<const prim::Reduce*>(r.prim.get());
  if (!red || r.inputs.size() != 1 || reads[r.inputs[0]] != 1) return std::nullopt;
  const TensorType& t = g.types[r.inputs[0]];
  if (t.dtype != DType::Float32 && t.dtype != DType::Float64) return std::nullopt;
  const auto& axes = red->axes();
  const int64_t nd = int64_t(t.shape.size()), k = int64_t(axes.size());
  if (k == 0 || k >= nd) return std::nullopt;
  int64_t inner = 1;
  for (int64_t i = 0; i < k; ++i) {
    if (axes[i] != nd - k + i) return std::nullopt;
    inner *= t.shape[nd - k + i];
  }
  if (inner < kMinReducedRow || shape_numel(t.shape) / inner < kMinReducedRows) return std::nullopt;
  return TailReduce{red->kind(), k};
}

// The step a node computes (its args filled in later), or nullopt when it is not elementwise.
std::optional<FusedStep> as_step(const Graph& g, const Node& n) {
  if (n.outputs.size() != 1) return std::nullopt;
  const DType result = g.types[n.outputs[0]].dtype;
  const DType first = n.inputs.empty() ? result : g.types[n.inputs[0]].dtype;
  if (auto* u = dynamic_cast<const prim::Unary*>(n.prim.get()))
    return FusedStep{FusedStep::Kind::Unary, uint8_t(u->kind()), first, result};
  if (auto* b = dynamic_cast<const prim::Binary*>(n.prim.get()))
    return FusedStep{FusedStep::Kind::Binary, uint8_t(b->kind()), first, result};
  if (dynamic_cast<const prim::Select*>(n.prim.get()))
    return FusedStep{FusedStep::Kind::Select, 0, g.types[n.inputs[1]].dtype, result};
  if (dynamic_cast<const prim::Cast*>(n.prim.get()))
    return FusedStep{FusedStep::Kind::Cast, 0, first, result};
  return std::nullopt;
}

struct Group {
  std::vector<size_t> members;  // node indices, in order
  bool open = true;
};

// A group as a program: outside inputs become registers 0..k-1, members' outputs the steps; the
// values read outside the group are the outputs.
struct Chain {
  std::vector<ValueId> inputs, outputs;
  FusedProgram program;
  Shape shape;
};

Chain chain(const Graph& g, const Group& group, const std::vector<int64_t>& group_of_node,
            const std::vector<int64_t>& producer, const std::vector<bool>& read_outside,
            int64_t id) {
  std::vector<int32_t> reg(g.types.size(), -1);
  Chain fused;
  FusedProgram& program = fused.program;
  auto inside = [&](ValueId v) { return producer[v] >= 0 && group_of_node[producer[v]] == id; };
  for (size_t m : group.members)
    for (ValueId v : g.nodes[m].inputs)
      if (!inside(v) && reg[v] < 0) {
        reg[v] = int32_t(fused.inputs.size());
        fused.inputs.push_back(v);
        program.input_types.push_back(g.types[v].dtype);
      }
  for (size_t m : group.members) {
    const Node& n = g.nodes[m];
    FusedStep step = *as_step(g, n);
    for (size_t k = 0; k < n.inputs.size(); ++k) step.args[k] = reg[n.inputs[k]];
    reg[n.outputs[0]] = int32_t(program.input_types.size() + program.steps.size());
    program.steps.push_back(step);
    if (read_outside[n.outputs[0]]) {
      program.outputs.push_back(reg[n.outputs[0]]);
      fused.outputs.push_back(n.outputs[0]);
    }
  }
  fused.shape = g.types[g.nodes[group.members.back()].outputs[0]].shape;
  return fused;
}

// The fused node of a group. With a tail reduction the node writes the reduction's output instead
// of the reduced value.
Node fuse(const Graph& g, const Group& group, const std::vector<int64_t>& group_of_node,
          const std::vector<int64_t>& producer, const std::vector<bool>& read_outside, int64_t id,
          const Node* tail = nullptr, std::optional<TailReduce> reduce = {}) {
  Chain c = chain(g, group, group_of_node, producer, read_outside, id);
  Node fused{nullptr, std::move(c.inputs), tail ? tail->outputs : std::move(c.outputs)};
  fused.prim = std::make_shared<FusedElementwise>(std::move(c.program), c.shape, reduce);
  return fused;
}

// The group as the epilogue of the product `dot` (dot_epilogue.h): the product's output is one of
// the chain's inputs.
Node fuse_with_product(const Graph& g, const Group& group,
                       const std::vector<int64_t>& group_of_node,
                       const std::vector<int64_t>& producer, const std::vector<bool>& read_outside,
                       int64_t id, const Node& dot) {
  Chain c = chain(g, group, group_of_node, producer, read_outside, id);
  const auto at = std::find(c.inputs.begin(), c.inputs.end(), dot.outputs[0]);
  const auto product = int32_t(at - c.inputs.begin());
  c.inputs.erase(at);
  Node fused{nullptr, dot.inputs, std::move(c.outputs)};
  fused.inputs.insert(fused.inputs.end(), c.inputs.begin(), c.inputs.end());
  fused.prim = make_dot_epilogue(std::static_pointer_cast<const prim::DotGeneral>(dot.prim),
                                 std::move(c.program), std::move(c.shape), product);
  return fused;
}

// The dot_general whose output the group may take as its epilogue: a float product of the group's
// shape that nothing but the group's members reads. -1 when there is none.
int64_t epilogue_product(const Graph& g, const Group& group, int64_t id,
                         const std::vector<int64_t>& group_of_node,
                         const std::vector<int64_t>& producer, const std::vector<int>& reads) {
  const Shape& shape = g.types[g.nodes[group.members.back()].outputs[0]].shape;
  for (size_t m : group.members)
    for (ValueId v : g.nodes[m].inputs) {
      const int64_t d = producer[v];
      if (d < 0 || group_of_node[d] == id) continue;
      const Node& dot = g.nodes[d];
      const TensorType& t = g.types[v];
      if (!dynamic_cast<const prim::DotGeneral*>(dot.prim.get()) || t.shape != shape ||
          (t.dtype != DType::Float32 && t.dtype != DType::Float64))
        continue;
      int within = 0;
      for (size_t k : group.members)
        for (ValueId u : g.nodes[k].inputs) within += u == v;
      if (within == reads[v]) return d;
    }
  return -1;
}

}  // namespace

Graph fuse_elementwise(const Graph& g) {
  const size_t num_nodes = g.nodes.size();
  std::vector<int64_t> producer(g.types.size(), -1), group_of_node(num_nodes, -1);
  std::vector<Group> groups;
  auto group_of_value = [&](ValueId v) {
    return producer[v] < 0 ? -1 : group_of_node[producer[v]];
  };
  for (size_t i = 0; i < num_nodes; ++i) {
    const Node& n = g.nodes[i];
    int64_t join = -1;
    if (as_step(g, n)) {
      const Shape& shape = g.types[n.outputs[0]].shape;
      for (ValueId v : n.inputs) {
        const int64_t id = group_of_value(v);
        if (id < 0 || id == join || !groups[id].open || g.types[v].shape != shape) continue;
        if (join < 0) {
          join = id;
          continue;
        }
        // A second open group feeds this node: merge it in. Neither has an outside reader yet,
        // so the merged group runs at its last member like any other.
        for (size_t m : groups[id].members) group_of_node[m] = join;
        auto& members = groups[join].members;
        members.insert(members.end(), groups[id].members.begin(), groups[id].members.end());
        std::sort(members.begin(), members.end());
        groups[id].members.clear();
        groups[id].open = false;
      }
      if (join < 0) {
        join = int64_t(groups.size());
        groups.emplace_back();
      }
      groups[join].members.push_back(i);
    }
    for (ValueId v : n.inputs)  // read from outside: that group can take no more members
      if (const int64_t id = group_of_value(v); id >= 0 && id != join) groups[id].open = false;
    group_of_node[i] = join;
    for (ValueId v : n.outputs) producer[v] = int64_t(i);
  }

  // Values a group must write out: read by a node of another group or unfused, or an output.
  std::vector<bool> read_outside(g.types.size(), false);
  for (ValueId v : g.outputs) read_outside[v] = true;
  for (size_t i = 0; i < num_nodes; ++i)
    for (ValueId v : g.nodes[i].inputs)
      if (group_of_value(v) >= 0 && group_of_value(v) != group_of_node[i]) read_outside[v] = true;

  // A reduction over trailing dims whose operand is the only value its group writes out joins
  // the group (even a group of one: sum(exp(x)) never writes exp(x)); the fused node then runs
  // where the reduction ran, after every member and before every reader.
  std::vector<int> reads(g.types.size(), 0);
  for (ValueId v : g.outputs) ++reads[v];
  for (const Node& n : g.nodes)
    for (ValueId v : n.inputs) ++reads[v];
  std::vector<bool> has_tail(groups.size(), false);
  std::vector<std::optional<TailReduce>> tails(num_nodes);
  for (size_t i = 0; i < num_nodes; ++i) {
    const Node& n = g.nodes[i];
    const int64_t id = n.inputs.size() == 1 ? group_of_value(n.inputs[0]) : -1;
    if (id < 0 || has_tail[id]) continue;
    const std::optional<TailReduce> t = tail_reduce(g, n, reads);
    bool only = t.has_value();
    for (size_t m : groups[id].members)
      for (ValueId v : g.nodes[m].outputs) only = only && (!read_outside[v] || v == n.inputs[0]);
    if (only) has_tail[id] = true, tails[i] = t;
  }

  // A group without a tail takes the product it alone reads as its epilogue: the product's node
  // moves to the group's place (its inputs come before it, and only the group reads its output).
  std::vector<int64_t> epilogue_of(groups.size(), -1);
  std::vector<bool> absorbed(num_nodes, false);
  for (size_t id = 0; id < groups.size(); ++id) {
    if (groups[id].members.empty() || has_tail[id]) continue;
    epilogue_of[id] = epilogue_product(g, groups[id], int64_t(id), group_of_node, producer, reads);
    if (epilogue_of[id] >= 0) absorbed[size_t(epilogue_of[id])] = true;
  }

  Graph out = g;
  out.nodes.clear();
  for (size_t i = 0; i < num_nodes; ++i) {
    const int64_t id = group_of_node[i];
    if (absorbed[i]) continue;
    if (id >= 0 && epilogue_of[id] >= 0) {
      if (groups[id].members.back() == i)
        out.nodes.push_back(fuse_with_product(g, groups[id], group_of_node, producer, read_outside,
                                              id, g.nodes[epilogue_of[id]]));
    } else if (tails[i]) {
      const int64_t from = group_of_value(g.nodes[i].inputs[0]);
      out.nodes.push_back(fuse(g, groups[from], group_of_node, producer, read_outside, from,
                               &g.nodes[i], tails[i]));
    } else if (id < 0 || (groups[id].members.size() == 1 && !has_tail[id])) {
      out.nodes.push_back(g.nodes[i]);
    } else if (groups[id].members.back() == i && !has_tail[id]) {
      out.nodes.push_back(fuse(g, groups[id], group_of_node, producer, read_outside, id));
    }
  }
  return out;
}

}  // namespace lanes::detail
