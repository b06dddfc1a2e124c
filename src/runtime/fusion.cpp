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
#include "primitives/structure.h"
#include "runtime/concat_parts.h"
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
  FusedElementwise(FusedProgram program, Shape shape, std::optional<TailReduce> reduce = {},
                   std::optional<ConcatParts> concat = {})
      : program_(std::move(program)), shape_(std::move(shape)), reduce_(reduce), concat_(concat) {
    program_.plan();
  }
  std::string name() const override { return "fused_elementwise"; }
  std::string params() const override {
    std::string out = program_.describe();
    if (reduce_) {
      out += " then ";
      out += kernels::reduce_name(reduce_->op);
      out += " over the last ";
      out += std::to_string(reduce_->dims);
    }
    if (concat_) out += concat_->describe();
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
    if (concat_) concat_->join_types(out);
    return out;
  }

  std::vector<Tensor> eval(const std::vector<Tensor>& in) const override {
    if (reduce_)
      return {kernels::run_fused_reduce(program_, shape_, in, reduce_->op, reduce_->dims)};
    if (!concat_) return kernels::run_fused(program_, shape_, in);
    Tensor joined;
    std::vector<Tensor> out = concat_->outputs(program_, shape_, joined);
    kernels::run_fused_into(program_, shape_, in, out);
    return concat_->node_outputs(std::move(out), joined);
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
  std::optional<ConcatParts> concat_;
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

// Moves group `from`'s members into group `into`, keeping them in node order.
void absorb(std::vector<Group>& groups, std::vector<int64_t>& group_of_node, int64_t from,
            int64_t into) {
  for (size_t m : groups[from].members) group_of_node[m] = into;
  auto& members = groups[into].members;
  members.insert(members.end(), groups[from].members.begin(), groups[from].members.end());
  std::sort(members.begin(), members.end());
  groups[from].members.clear();
}

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

// The chain's outputs reordered so the operands of `concat` come last, in its order, and written
// as its output: the parts the pass writes in place of that concatenate.
ConcatParts write_concat(Chain& c, const Node& concat) {
  std::vector<int32_t> registers;
  std::vector<ValueId> values;
  auto is_part = [&](ValueId v) {
    return std::find(concat.inputs.begin(), concat.inputs.end(), v) != concat.inputs.end();
  };
  for (size_t o = 0; o < c.outputs.size(); ++o)
    if (!is_part(c.outputs[o])) {
      registers.push_back(c.program.outputs[o]);
      values.push_back(c.outputs[o]);
    }
  for (ValueId v : concat.inputs) {
    const auto at = std::find(c.outputs.begin(), c.outputs.end(), v);
    registers.push_back(c.program.outputs[size_t(at - c.outputs.begin())]);
  }
  values.push_back(concat.outputs[0]);
  c.program.outputs = std::move(registers);
  c.outputs = std::move(values);
  const auto* cat = static_cast<const prim::Concatenate*>(concat.prim.get());
  return ConcatParts{cat->axis(), int32_t(concat.inputs.size())};
}

// The fused node of a group. With a tail reduction the node writes the reduction's output instead
// of the reduced value; with a concatenate of its values (`concat`), that concatenate's output
// instead of the parts.
Node fuse(const Graph& g, const Group& group, const std::vector<int64_t>& group_of_node,
          const std::vector<int64_t>& producer, const std::vector<bool>& read_outside, int64_t id,
          const Node* tail = nullptr, std::optional<TailReduce> reduce = {},
          const Node* concat = nullptr) {
  Chain c = chain(g, group, group_of_node, producer, read_outside, id);
  std::optional<ConcatParts> parts;
  if (concat) parts = write_concat(c, *concat);
  Node fused{nullptr, std::move(c.inputs), tail ? tail->outputs : std::move(c.outputs)};
  fused.prim = std::make_shared<FusedElementwise>(std::move(c.program), c.shape, reduce, parts);
  return fused;
}

// The group as the epilogue of the product `dot` (dot_epilogue.h): the product's output is one of
// the chain's inputs.
Node fuse_with_product(const Graph& g, const Group& group,
                       const std::vector<int64_t>& group_of_node,
                       const std::vector<int64_t>& producer, const std::vector<bool>& read_outside,
                       int64_t id, const Node& dot, const Node* concat) {
  Chain c = chain(g, group, group_of_node, producer, read_outside, id);
  std::optional<ConcatParts> parts;
  if (concat) parts = write_concat(c, *concat);
  const auto at = std::find(c.inputs.begin(), c.inputs.end(), dot.outputs[0]);
  const auto product = int32_t(at - c.inputs.begin());
  c.inputs.erase(at);
  Node fused{nullptr, dot.inputs, std::move(c.outputs)};
  fused.inputs.insert(fused.inputs.end(), c.inputs.begin(), c.inputs.end());
  fused.prim = make_dot_epilogue(std::static_pointer_cast<const prim::DotGeneral>(dot.prim),
                                 std::move(c.program), std::move(c.shape), product, parts);
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

// Each group of one shape that shares an outside input with a later one (`groups` by their last
// members) joins it, when no node outside reads its values before the later group's last
// member: the merged group runs there, reading the shared input once, as one pass instead of
// two (an LSTM step's gate gradients). Groups with a tail reduction stay as they are.
void merge_siblings(const Graph& g, std::vector<Group>& groups, std::vector<int64_t>& group_of_node,
                    const std::vector<int64_t>& producer, const std::vector<bool>& has_tail) {
  auto group_of_value = [&](ValueId v) {
    return producer[v] < 0 ? -1 : group_of_node[producer[v]];
  };
  const auto none = int64_t(g.nodes.size());
  std::vector<int64_t> first_read(groups.size(), none);
  std::vector<std::vector<int64_t>> readers(g.types.size());  // groups reading v from outside
  for (size_t i = 0; i < g.nodes.size(); ++i)
    for (ValueId v : g.nodes[i].inputs) {
      const int64_t from = group_of_value(v), id = group_of_node[i];
      if (from >= 0 && from != id) first_read[from] = std::min(first_read[from], int64_t(i));
      if (id >= 0 && from != id && (readers[v].empty() || readers[v].back() != id))
        readers[v].push_back(id);
    }
  std::vector<int64_t> order;
  for (size_t id = 0; id < groups.size(); ++id)
    if (!groups[id].members.empty() && !has_tail[id]) order.push_back(int64_t(id));
  auto last = [&](int64_t id) { return int64_t(groups[id].members.back()); };
  std::sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return last(a) < last(b); });
  for (int64_t b : order) {
    const Shape& shape = g.types[g.nodes[groups[b].members[0]].outputs[0]].shape;
    std::vector<ValueId> inputs;
    for (size_t m : groups[b].members)
      for (ValueId v : g.nodes[m].inputs)
        if (group_of_value(v) != b) inputs.push_back(v);
    for (ValueId v : inputs)
      for (int64_t a : readers[v]) {
        if (a == b || groups[a].members.empty() || has_tail[a] || last(a) >= last(b) ||
            first_read[a] <= last(b) ||
            g.types[g.nodes[groups[a].members[0]].outputs[0]].shape != shape)
          continue;
        absorb(groups, group_of_node, a, b);
        first_read[b] = std::min(first_read[b], first_read[a]);
      }
  }
}

// Whether a part of `shape` joined along `axis` has its rows contiguous in the joined tensor, as
// the fused pass writes them: some dim from the axis on, after which all are 1, is not 1 (parts
// of (2, 1) joined along axis 1 have their elements apart).
bool rows_stay_whole(const Shape& shape, int64_t axis) {
  for (auto d = int64_t(shape.size()) - 1; d >= axis; --d)
    if (shape[size_t(d)] != 1) return true;
  return false;
}

// The concatenate node each group may write in place of its values: one whose operands are all
// values of that group, each read by nothing else outside it. -1 for none.
std::vector<int64_t> concat_outputs(const Graph& g, const std::vector<Group>& groups,
                                    const std::vector<int64_t>& group_of_node,
                                    const std::vector<int64_t>& producer) {
  auto group_of_value = [&](ValueId v) {
    return producer[v] < 0 ? -1 : group_of_node[producer[v]];
  };
  std::vector<int> reads(g.types.size(), 0);  // from outside the value's group
  for (ValueId v : g.outputs) ++reads[v];
  for (size_t i = 0; i < g.nodes.size(); ++i)
    for (ValueId v : g.nodes[i].inputs) reads[v] += group_of_value(v) != group_of_node[i];
  std::vector<int64_t> concat_of(groups.size(), -1);
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& n = g.nodes[i];
    const auto* cat = dynamic_cast<const prim::Concatenate*>(n.prim.get());
    if (!cat || n.inputs.empty() || !rows_stay_whole(g.types[n.inputs[0]].shape, cat->axis()))
      continue;
    const int64_t id = group_of_value(n.inputs[0]);
    if (id < 0 || groups[id].members.size() < 2 || concat_of[id] >= 0) continue;
    bool parts = true;
    for (size_t k = 0; k < n.inputs.size() && parts; ++k) {
      const ValueId v = n.inputs[k];
      parts = group_of_value(v) == id && reads[v] == 1 &&
              std::find(n.inputs.begin(), n.inputs.begin() + int64_t(k), v) ==
                  n.inputs.begin() + int64_t(k);
    }
    if (parts) concat_of[id] = int64_t(i);
  }
  return concat_of;
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
        absorb(groups, group_of_node, id, join);
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

  merge_siblings(g, groups, group_of_node, producer, has_tail);

  // A group without a tail takes the product it alone reads as its epilogue: the product's node
  // moves to the group's place (its inputs come before it, and only the group reads its output).
  // Another may write a concatenate of its values in place (that node's output then comes from
  // the group's place, before its readers).
  std::vector<int64_t> epilogue_of(groups.size(), -1);
  std::vector<bool> absorbed(num_nodes, false);
  std::vector<int64_t> concat_of = concat_outputs(g, groups, group_of_node, producer);
  for (size_t id = 0; id < groups.size(); ++id) {
    if (groups[id].members.empty() || has_tail[id]) {
      concat_of[id] = -1;
      continue;
    }
    epilogue_of[id] = epilogue_product(g, groups[id], int64_t(id), group_of_node, producer, reads);
    if (epilogue_of[id] >= 0) absorbed[size_t(epilogue_of[id])] = true;
    if (concat_of[id] >= 0) absorbed[size_t(concat_of[id])] = true;
  }

  Graph out = g;
  out.nodes.clear();
  for (size_t i = 0; i < num_nodes; ++i) {
    const int64_t id = group_of_node[i];
    if (absorbed[i]) continue;
    const Node* concat = id >= 0 && concat_of[id] >= 0 ? &g.nodes[size_t(concat_of[id])] : nullptr;
    if (id >= 0 && epilogue_of[id] >= 0) {
      if (groups[id].members.back() == i)
        out.nodes.push_back(fuse_with_product(g, groups[id], group_of_node, producer, read_outside,
                                              id, g.nodes[epilogue_of[id]], concat));
    } else if (tails[i]) {
      const int64_t from = group_of_value(g.nodes[i].inputs[0]);
      out.nodes.push_back(fuse(g, groups[from], group_of_node, producer, read_outside, from,
                               &g.nodes[i], tails[i]));
    } else if (id < 0 || (groups[id].members.size() == 1 && !has_tail[id])) {
      out.nodes.push_back(g.nodes[i]);
    } else if (groups[id].members.back() == i && !has_tail[id]) {
      out.nodes.push_back(
          fuse(g, groups[id], group_of_node, producer, read_outside, id, nullptr, {}, concat));
    }
  }
  return out;
}

}  // namespace lanes::detail
